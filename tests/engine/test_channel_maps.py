"""Pending Channel messages and ChannelMaps: pending messages only when loaded (RPC decorator,
invoke options, whole map), deletes by message id (a transactional delete of a missing message
aborts the whole RPC), and ChannelMap instances queue and are consumed independently."""

from __future__ import annotations

import pytest
from dex import ChannelMessageNotFoundError, RPCInvokeOptions

from tests.engine.conftest import DexFixture
from tests.engine.harness import eventually
from tests.engine.test_channels import NOT_LOADED, ChannelFlow, inbox


def test_pending_messages_need_a_load_and_rpcs_delete_them(dex: DexFixture) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "one")
    harness.client.invoke_rpc(flow.publish, flow_id, [21, 22, 23])
    assert harness.client.invoke_rpc(flow.pending_unloaded, flow_id) == NOT_LOADED
    pending = harness.client.invoke_rpc(flow.pending, flow_id)
    assert [entry.split("=")[1] for entry in pending] == ["21", "22", "23"]
    assert len({entry.split("=")[0] for entry in pending}) == 3, "message ids are distinct"
    assert harness.client.invoke_rpc(flow.delete_first, flow_id) == 21
    assert [e.split("=")[1] for e in harness.client.invoke_rpc(flow.pending, flow_id)] == ["22", "23"]
    with pytest.raises(ChannelMessageNotFoundError):
        harness.client.invoke_rpc(flow.delete_strict, flow_id, pending[0].split("=")[0])
    assert harness.client.invoke_rpc(flow.read_marker, flow_id) == "<absent>", "the aborted RPC wrote nothing"
    assert harness.client.invoke_rpc(flow.size, flow_id) == 2
    harness.client.invoke_rpc(flow.release, flow_id)
    assert flow.probe.wait("consumed") == [(1, [22])]


def test_channel_map_instances_are_independent(dex: DexFixture) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "inbox-b-n2")
    assert harness.client.invoke_rpc(flow.post, flow_id, ["a", "a1"]) == ["a"]
    assert harness.client.invoke_rpc(flow.post, flow_id, ["b", "b1"]) == ["a", "b"]
    harness.client.invoke_rpc(flow.release, flow_id)
    assert harness.client.invoke_rpc(flow.inbox_pending, flow_id, "a") == NOT_LOADED
    assert harness.client.invoke_rpc(flow.inbox_pending, flow_id, "a", options=RPCInvokeOptions(
        load_channel_map_instances=(inbox.load_messages("a"),))) == ["a1"]
    harness.client.invoke_rpc(flow.post, flow_id, ["a", "a2"])
    assert harness.client.invoke_rpc(flow.inbox_sizes, flow_id) == {"a": 2, "b": 1, "c": 0}, (
        "instance b has one message of two: nothing consumed")
    harness.client.invoke_rpc(flow.post, flow_id, ["b", "b2"])
    assert flow.probe.wait("consumed") == [(1, ["b1", "b2"])]
    eventually(lambda: harness.client.invoke_rpc(flow.inbox_sizes, flow_id) == {"a": 2, "b": 0, "c": 0},
               what="instance a untouched, b consumed")


def test_whole_channel_map_loads_and_instance_deletes(dex: DexFixture) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "inbox-b")
    for key, value in (("a", "a1"), ("c", "c1"), ("a", "a2"), ("c", "c2")):
        harness.client.invoke_rpc(flow.post, flow_id, [key, value])
    assert harness.client.invoke_rpc(flow.inbox_all, flow_id) == {"a": ["a1", "a2"], "c": ["c1", "c2"]}
    assert harness.client.invoke_rpc(flow.inbox_drop_first, flow_id, "c") == "c1"
    assert harness.client.invoke_rpc(flow.inbox_all, flow_id) == {"a": ["a1", "a2"], "c": ["c2"]}
    assert harness.client.invoke_rpc(flow.inbox_sizes, flow_id) == {"a": 2, "b": 0, "c": 1}
