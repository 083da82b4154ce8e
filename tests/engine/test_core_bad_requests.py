"""Engine core, hostile requests: undecodable bytes, invalid UTF-8 and deep nesting, over-long ids,
unknown enum values, page and resume tokens SQLite cannot hold, and duplicate message ids in one
publish all get INVALID_ARGUMENT with a short message (never INTERNAL, never an echo of the whole
input), and nothing they touch changes. Runs an in-process ``EngineServer`` over raw stubs."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import grpc
import pytest
from google.protobuf import empty_pb2

from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine.request_checks import MAX_ID_CHARS

START = "/dex.FlowService/StartFlow"
SHORT_DETAIL = 2000


def stub_of(channel: grpc.Channel) -> dex_pb2_grpc.FlowServiceStub:
    return dex_pb2_grpc.FlowServiceStub(channel)


def refusal(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    error = cast(grpc.Call, raised.value)
    return error.code(), error.details() or ""


def send_raw(channel: grpc.Channel, method: str, payload: bytes) -> object:
    call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
        method, request_serializer=None, response_deserializer=None)
    return call(payload, timeout=10)


def nested_groups(depth: int) -> bytes:
    """An unknown field nesting ``depth`` groups (field 1000): past protobuf's recursion limit."""
    start, end = bytes([0xC3, 0x3E]), bytes([0xC4, 0x3E])  # varint tags (1000 << 3) | 3 and | 4
    return start * depth + end * depth


@pytest.mark.parametrize("payload", [
    pytest.param(b"\xff\xff\xff\xff", id="corrupt-bytes"),
    pytest.param(pb.StartFlowRequest(flow_id="abc", flow_type="T").SerializeToString().replace(b"abc", b"\xff\xfe\xfd"),
                 id="invalid-utf8"),
    pytest.param(nested_groups(5000), id="deep-nesting"),
])
def test_undecodable_requests_are_invalid_argument(own_channel: grpc.Channel, payload: bytes) -> None:
    code, detail = refusal(lambda: send_raw(own_channel, START, payload))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, detail
    assert "could not be decoded" in detail
    stub = stub_of(own_channel)
    health: pb.HealthInfo = stub.HealthCheck(empty_pb2.Empty())
    assert health.condition == "OK", "the engine keeps serving"


def test_page_and_resume_tokens_too_large_for_sqlite_are_invalid_argument(own_channel: grpc.Channel) -> None:
    stub = stub_of(own_channel)
    stub.StartFlow(pb.StartFlowRequest(flow_id="f", flow_type="T", request_id="r"))
    thirty = "9" * 30
    calls: list[Callable[[], object]] = [
        lambda: stub.GetHistoryEvents(pb.GetHistoryEventsRequest(flow_id="f", next_page_token=thirty.encode())),
        lambda: stub.ReadStream(pb.ReadStreamRequest(flow_id="f", flow_type="T", stream_name="S",
                                                     resume_token=thirty, wait_time_seconds=1)),
        lambda: stub.ListStreamMessages(pb.ListStreamMessagesRequest(flow_id="f", flow_type="T", stream_name="S",
                                                                     before_page_token=thirty, page_size=10)),
        lambda: stub.SearchFlows(pb.SearchFlowsRequest(query="FlowType = 'T'", next_page_token=thirty)),
    ]
    for call in calls:
        code, detail = refusal(call)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, detail
        assert "token" in detail


def test_ids_are_bounded_and_errors_never_echo_the_whole_input(own_channel: grpc.Channel) -> None:
    stub = stub_of(own_channel)
    huge = "x" * (10 * 1024 * 1024)
    code, detail = refusal(lambda: stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id=huge)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and len(detail) < SHORT_DETAIL
    assert f"the limit is {MAX_ID_CHARS}" in detail
    code, detail = refusal(lambda: stub.StartFlow(pb.StartFlowRequest(flow_id="f", flow_type=huge)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and len(detail) < SHORT_DETAIL
    longest = "y" * MAX_ID_CHARS
    code, detail = refusal(lambda: stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id=longest)))
    assert code == grpc.StatusCode.NOT_FOUND and len(detail) < SHORT_DETAIL, "an id at the limit is served"
    code, detail = refusal(lambda: stub.ReadStream(pb.ReadStreamRequest(
        flow_id="f", flow_type="T", stream_name="S", resume_token="z" * 100_000)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and len(detail) < SHORT_DETAIL


def test_unknown_enum_values_are_refused_and_change_nothing(own_channel: grpc.Channel) -> None:
    stub = stub_of(own_channel)
    first: pb.StartFlowResponse = stub.StartFlow(pb.StartFlowRequest(flow_id="done", flow_type="T", request_id="r1"))
    stub.StopFlow(pb.StopFlowRequest(flow_id="done", stop_type=pb.STOP_TYPE_TERMINATE))
    reuse = pb.StartFlowRequest(flow_id="done", flow_type="T", request_id="r2",
                                flow_start_options=pb.FlowStartOptions(id_reuse_policy=99))  # type: ignore[arg-type]
    code, detail = refusal(lambda: stub.StartFlow(reuse))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "id_reuse_policy" in detail and "99" in detail
    summary: pb.GetFlowSummaryResponse = stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id="done"))
    assert (summary.flow_execution_id.run_id, summary.flow_status) == (first.run_id, pb.FLOW_STATUS_TERMINATED)
    code, _ = refusal(lambda: stub.StopFlow(pb.StopFlowRequest(flow_id="done", stop_type=42)))  # type: ignore[arg-type]
    assert code == grpc.StatusCode.INVALID_ARGUMENT


def test_duplicate_message_ids_in_one_publish_are_refused_and_nothing_is_published(own_channel: grpc.Channel) -> None:
    stub = stub_of(own_channel)
    stub.StartFlow(pb.StartFlowRequest(flow_id="f", flow_type="T", request_id="r"))
    twice = [pb.ChannelMessage(channel_name="C", value=pb.Value(int_value=n), message_id="m1") for n in (1, 2)]
    code, detail = refusal(lambda: stub.PublishToChannel(pb.PublishToChannelRequest(flow_id="f", messages=twice)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "duplicate message id" in detail
    pending: pb.GetChannelMessagesResponse = stub.GetChannelMessages(
        pb.GetChannelMessagesRequest(flow_id="f", channel_name="C"))
    assert list(pending.messages) == []
    distinct = [pb.ChannelMessage(channel_name="C", value=pb.Value(int_value=n), message_id=f"m{n}") for n in (1, 2)]
    stub.PublishToChannel(pb.PublishToChannelRequest(flow_id="f", messages=distinct))
    pending = stub.GetChannelMessages(pb.GetChannelMessagesRequest(flow_id="f", channel_name="C"))
    assert [(m.message_id, m.value.int_value) for m in pending.messages] == [("m1", 1), ("m2", 2)]


def test_an_undecodable_worker_frame_ends_its_stream_with_invalid_argument(own_channel: grpc.Channel) -> None:
    poll: grpc.StreamStreamMultiCallable[bytes, bytes] = own_channel.stream_stream(
        "/dex.WorkerTaskService/PollWorkerTask", request_serializer=None, response_deserializer=None)
    code, detail = refusal(lambda: list(poll(iter([b"\xff\xff\xff\xff"]), timeout=10)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, detail
    assert "could not be decoded" in detail
