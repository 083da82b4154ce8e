"""Channels: ``for_one``/``for_n``/``at_least``/``at_most``/``for_range`` consume exactly what Dex
documents, FIFO; consumed values reach ``execute`` atomically with the wait (and again on its
retry), and ``execute``'s loaded snapshot no longer holds them; Steps and RPCs publish; sizes are
always there; concurrent publishers lose nothing and keep their order. (Pending messages, deletes
and ChannelMaps: test_channel_maps.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from dex import (
    Attribute,
    Channel,
    ChannelMap,
    ChannelMessagesNotLoadedError,
    Context,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    Wait,
    dead_end,
    go_to,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually, in_thread

data = Channel("Data", int)
go = Channel("Go", str)
inbox = ChannelMap("Inbox", str)
marker = Attribute("Marker", str)

NOT_LOADED = ["<not loaded>"]


def wait_for_mode(mode: str) -> Wait:
    match mode:
        case "one":
            return Wait.until(data.for_one())
        case "n3":
            return Wait.until(data.for_n(3))
        case "least2":
            return Wait.until(data.at_least(2))
        case "most2":
            return Wait.until(data.at_most(2))
        case "range1-2":
            return Wait.until(data.for_range(at_least=1, at_most=2))
        case "inbox-b":
            return Wait.until(inbox.for_one("b"))
        case "inbox-b-n2":
            return Wait.until(inbox.for_n("b", 2))
        case _:
            raise ValueError(f"unknown mode {mode}")


class Hold(Step[str]):
    """Parks until ``Go`` so that the test can queue Data first."""

    def __init__(self, flow: ChannelFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(go.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        try:
            self.flow.probe.record("hold-pending", [str(m.value) for m in data.pending_messages(context)])
        except ChannelMessagesNotLoadedError:
            self.flow.probe.record("hold-pending", NOT_LOADED)
        return go_to(Consume, input)


class Consume(Step[str]):
    def __init__(self, flow: ChannelFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=3), execute_load_channels=(data,))

    def wait_for(self, context: Context, input: str) -> Wait:
        return wait_for_mode(input.removesuffix("-retry"))

    def execute(self, context: Context, input: str) -> StepDecision:
        got: list[object] = list(inbox.results(context, "b")) if input.startswith("inbox") else list(
            data.results(context))
        self.flow.probe.record("consumed", (context.attempt, got))
        self.flow.probe.record("pending-after", [m.value for m in data.pending_messages(context)])
        if input.endswith("-retry") and context.attempt == 1:
            raise RuntimeError("fail once after the wait consumed")
        return dead_end()


class Produce(Step[str]):
    """Publishes from a Step to a Channel that another Step waits on."""

    def __init__(self, flow: ChannelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        for value in (11, 12, 13):
            data.publish(context, value)
        self.flow.probe.record("size-after-own-publish", data.size(context))
        return go_to(Consume, "n3")


class ChannelFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Hold(self)).other_steps(Consume(self), Produce(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(data, go, inbox, marker)

    @rpc
    def publish(self, context: Context, input: list[int]) -> RPCResult[int]:
        for value in input:
            data.publish(context, value)
        return RPCResult(data.size(context))

    @rpc
    def release(self, context: Context) -> None:
        go.publish(context, "go")

    @rpc
    def size(self, context: Context) -> RPCResult[int]:
        return RPCResult(data.size(context))

    @rpc
    def pending_unloaded(self, context: Context) -> RPCResult[list[str]]:
        try:
            return RPCResult([str(m.value) for m in data.pending_messages(context)])
        except ChannelMessagesNotLoadedError:
            return RPCResult(NOT_LOADED)

    @rpc(load_channels=(data,))
    def pending(self, context: Context) -> RPCResult[list[str]]:
        return RPCResult([f"{m.message_id}={m.value}" for m in data.pending_messages(context)])

    @rpc(load_channels=(data,))
    def delete_first(self, context: Context) -> RPCResult[int]:
        first = data.pending_messages(context)[0]
        data.delete(context, first.message_id)
        return RPCResult(first.value)

    @rpc(is_transactional=True, load_channels=(data,))
    def delete_strict(self, context: Context, input: str) -> None:
        marker.set(context, "written by a transaction that must abort")
        data.delete(context, input)

    @rpc
    def read_marker(self, context: Context) -> RPCResult[str]:
        value: str | None = marker.get(context)
        return RPCResult("<absent>" if value is None else value)

    @rpc
    def post(self, context: Context, input: list[str]) -> RPCResult[list[str]]:
        key, value = input
        inbox.publish(context, key, value)
        return RPCResult(list(inbox.get_all_instance_keys(context)))

    @rpc
    def inbox_sizes(self, context: Context) -> RPCResult[dict[str, int]]:
        return RPCResult({key: inbox.size(context, key) for key in ("a", "b", "c")})

    @rpc(load_channel_maps=(inbox,))
    def inbox_all(self, context: Context) -> RPCResult[dict[str, list[str]]]:
        return RPCResult({key: [m.value for m in inbox.pending_messages(context, key)]
                          for key in inbox.get_all_instance_keys(context)})

    @rpc(load_channel_maps=(inbox,))
    def inbox_drop_first(self, context: Context, input: str) -> RPCResult[str]:
        first = inbox.pending_messages(context, input)[0]
        inbox.delete(context, input, first.message_id)
        return RPCResult(first.value)

    @rpc
    def inbox_pending(self, context: Context, input: str) -> RPCResult[list[str]]:
        try:
            return RPCResult([m.value for m in inbox.pending_messages(context, input)])
        except ChannelMessagesNotLoadedError:
            return RPCResult(NOT_LOADED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    mode: str
    queued: list[int]
    consumed: list[int]
    left: int


CASES = [
    Case(mode="one", queued=[1, 2], consumed=[1], left=1),
    Case(mode="n3", queued=[1, 2, 3, 4], consumed=[1, 2, 3], left=1),
    Case(mode="least2", queued=[1, 2, 3], consumed=[1, 2, 3], left=0),
    Case(mode="most2", queued=[1, 2, 3], consumed=[1, 2], left=1),
    Case(mode="most2", queued=[], consumed=[], left=0),
    Case(mode="range1-2", queued=[5, 6, 7], consumed=[5, 6], left=1),
    Case(mode="range1-2", queued=[5], consumed=[5], left=0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.mode}-{len(c.queued)}queued")
def test_channel_conditions_consume_exactly_what_they_promise(dex: DexFixture, case: Case) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, case.mode)
    assert harness.client.invoke_rpc(flow.publish, flow_id, case.queued) == len(case.queued)
    harness.client.invoke_rpc(flow.release, flow_id)
    assert flow.probe.wait("consumed") == [(1, case.consumed)]
    assert flow.probe.wait("hold-pending") == [NOT_LOADED], "a Step without execute_load_channels"
    assert flow.probe.wait("pending-after") == [case.queued[len(case.consumed):]], (
        "execute's snapshot is taken after its wait consumed")
    eventually(lambda: harness.client.invoke_rpc(flow.size, flow_id) == case.left,
               what=f"{case.left} message(s) left queued")


def test_wait_blocks_until_enough_messages_arrive_then_consumes_in_order(dex: DexFixture) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "n3")
    harness.client.invoke_rpc(flow.release, flow_id)
    for value in (7, 8):
        harness.client.invoke_rpc(flow.publish, flow_id, [value])
    assert harness.client.invoke_rpc(flow.size, flow_id) == 2, "two of three: nothing consumed yet"
    assert flow.probe.values("consumed") == []
    harness.client.invoke_rpc(flow.publish, flow_id, [9, 10])
    assert flow.probe.wait("consumed") == [(1, [7, 8, 9])]
    eventually(lambda: harness.client.invoke_rpc(flow.size, flow_id) == 1, what="one message left")


def test_consumed_messages_are_delivered_again_to_a_retried_execute(dex: DexFixture) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "least2-retry")
    harness.client.invoke_rpc(flow.publish, flow_id, [3, 4])
    harness.client.invoke_rpc(flow.release, flow_id)
    assert flow.probe.wait("consumed", 2) == [(1, [3, 4]), (2, [3, 4])]
    assert harness.client.invoke_rpc(flow.size, flow_id) == 0


def test_step_publish_feeds_another_step(dex: DexFixture) -> None:
    flow = ProducerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "p")
    assert flow.probe.wait("size-after-own-publish") == [3], "own staged publishes count in size"
    assert flow.probe.wait("consumed") == [(1, [11, 12, 13])]
    eventually(lambda: harness.client.invoke_rpc(flow.size, flow_id) == 0, what="all three consumed")


class ProducerFlow(ChannelFlow):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Produce(self)).other_steps(Consume(self), Hold(self))


def test_concurrent_publishers_lose_nothing_and_keep_their_order(dex: DexFixture) -> None:
    flow = ChannelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "least2")

    def publisher(sender: int) -> Callable[[], None]:
        def publish_all() -> None:
            for index in range(20):
                harness.client.invoke_rpc(flow.publish, flow_id, [sender * 1000 + index])
        return publish_all

    joins = [in_thread(publisher(sender)) for sender in range(1, 5)]
    for join in joins:
        join(60.0)
    harness.client.invoke_rpc(flow.release, flow_id)
    ((_, got),) = [c for c in flow.probe.wait("consumed") if isinstance(c, tuple)]
    assert isinstance(got, list) and sorted(got) == sorted(s * 1000 + i for s in range(1, 5) for i in range(20))
    for sender in range(1, 5):
        mine = [value for value in got if isinstance(value, int) and value // 1000 == sender]
        assert mine == sorted(mine), f"sender {sender}'s messages stay in publish order"
