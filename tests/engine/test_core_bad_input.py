"""Engine core, bad input: malformed or inconsistent raw requests get INVALID_ARGUMENT, NOT_FOUND or
FAILED_PRECONDITION with a message, unserved methods answer UNIMPLEMENTED naming the method, and
the engine keeps serving with its state intact afterwards. Runs an in-process ``EngineServer``."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import grpc
import pytest
from google.protobuf import empty_pb2

from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc



@pytest.fixture
def stub(own_channel: grpc.Channel) -> dex_pb2_grpc.FlowServiceStub:
    return dex_pb2_grpc.FlowServiceStub(own_channel)


def code_of(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    error = cast(grpc.Call, raised.value)
    return error.code(), error.details() or ""


def start(stub: dex_pb2_grpc.FlowServiceStub, flow_id: str) -> str:
    response: pb.StartFlowResponse = stub.StartFlow(pb.StartFlowRequest(
        flow_id=flow_id, flow_type="T", request_id=f"r-{flow_id}"))
    return response.run_id


def test_server_info_advertises_protocol_one_to_three(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    info: pb.ServerInfo = stub.GetServerInfo(empty_pb2.Empty())
    assert (info.minimum_supported_protocol_version, info.current_protocol_version) == (1, 3)
    assert info.server_engine == pb.SERVER_ENGINE_ZD


def test_malformed_requests_are_rejected_with_a_message(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    assert code_of(lambda: stub.StartFlow(pb.StartFlowRequest(flow_type="T")))[0] == grpc.StatusCode.INVALID_ARGUMENT
    code, detail = code_of(lambda: stub.StartFlow(pb.StartFlowRequest(
        flow_id="f", flow_type="T", start_step_type="S")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "step_input" in detail
    bad_attr = pb.FlowStartOptions(attributes=[pb.AttributeWrite(key="", value=pb.Value(int_value=1))])
    assert code_of(lambda: stub.StartFlow(pb.StartFlowRequest(
        flow_id="f", flow_type="T", flow_start_options=bad_attr)))[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: stub.ReadStream(pb.ReadStreamRequest(
        flow_id="f", flow_type="T", stream_name="S", resume_token="not-a-token")))[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: stub.WriteStream(pb.WriteStreamRequest(
        flow_id="f", flow_type="T", stream_name="S", source="x", stream_capacity_bytes=0)))[0] == (
        grpc.StatusCode.INVALID_ARGUMENT)
    assert code_of(lambda: stub.SearchFlows(pb.SearchFlowsRequest(query="FlowType ~~ nonsense")))[0] == (
        grpc.StatusCode.INVALID_ARGUMENT)
    assert code_of(lambda: stub.InvokeRPC(pb.InvokeRPCRequest(flow_id="f")))[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_unknown_and_closed_flows(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    for call in (lambda: stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id="nope")),
                 lambda: stub.StopFlow(pb.StopFlowRequest(flow_id="nope")),
                 lambda: stub.InvokeRPC(pb.InvokeRPCRequest(flow_id="nope", rpc_name="r")),
                 lambda: stub.GetHistoryEvents(pb.GetHistoryEventsRequest(flow_id="nope"))):
        assert code_of(call)[0] == grpc.StatusCode.NOT_FOUND
    start(stub, "closed")
    stub.StopFlow(pb.StopFlowRequest(flow_id="closed", stop_type=pb.STOP_TYPE_TERMINATE))
    assert code_of(lambda: stub.StopFlow(pb.StopFlowRequest(flow_id="closed")))[0] == grpc.StatusCode.NOT_FOUND
    locked = pb.InvokeRPCRequest(flow_id="closed", rpc_name="r", lock_attribute_keys=["K"])
    assert code_of(lambda: stub.InvokeRPC(locked))[0] == grpc.StatusCode.NOT_FOUND, "locks need an active run"
    assert code_of(lambda: stub.SkipTimer(pb.SkipTimerRequest(
        flow_id="closed", step_execution_id="S-1", timer_condition_id="t")))[0] == grpc.StatusCode.NOT_FOUND


def test_inconsistent_requests_fail_their_precondition(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    start(stub, "open")
    code, detail = code_of(lambda: stub.StartFlow(pb.StartFlowRequest(flow_id="open", flow_type="T", request_id="x")))
    assert code == grpc.StatusCode.ALREADY_EXISTS and "open" in detail
    assert code_of(lambda: stub.SkipTimer(pb.SkipTimerRequest(
        flow_id="open", step_execution_id="S-1", timer_condition_id="t")))[0] == grpc.StatusCode.NOT_FOUND
    waited = pb.WaitForFlowRequest(flow_id="open", wait_time_seconds=1)
    assert code_of(lambda: stub.WaitForFlow(waited))[0] == grpc.StatusCode.DEADLINE_EXCEEDED


def test_unserved_methods_name_themselves(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    code, detail = code_of(lambda: stub.WaitForHistoryEvent(pb.WaitForHistoryEventRequest(flow_id="f")))
    assert code == grpc.StatusCode.UNIMPLEMENTED and "WaitForHistoryEvent" in detail


def test_continue_as_new_and_config_updates_need_an_active_flow(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    assert code_of(lambda: stub.UpdateFlowConfig(pb.UpdateFlowConfigRequest(flow_id="f")))[0] == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: stub.TriggerContinueAsNew(pb.TriggerContinueAsNewRequest(flow_id="f")))[0] == (
        grpc.StatusCode.NOT_FOUND)
    assert code_of(lambda: stub.TriggerContinueAsNew(pb.TriggerContinueAsNewRequest()))[0] == (
        grpc.StatusCode.INVALID_ARGUMENT)


def test_bad_input_leaves_state_intact(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    run_id = start(stub, "kept")
    code_of(lambda: stub.StartFlow(pb.StartFlowRequest(flow_id="kept", flow_type="T", request_id="other")))
    code_of(lambda: stub.StopFlow(pb.StopFlowRequest(flow_id="kept", stop_type=99)))  # type: ignore[arg-type]
    summary: pb.GetFlowSummaryResponse = stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id="kept"))
    assert (summary.flow_execution_id.run_id, summary.flow_status) == (run_id, pb.FLOW_STATUS_RUNNING)
    stub.WriteStream(pb.WriteStreamRequest(flow_id="kept", flow_type="T", stream_name="S", source="me",
                                           stream_capacity_bytes=1024, value=pb.Value(string_value="v")))
    read: pb.ReadStreamResponse = stub.ReadStream(pb.ReadStreamRequest(
        flow_id="kept", flow_type="T", stream_name="S", wait_time_seconds=1))
    assert (read.message.value.string_value, read.message.source) == ("v", "me")


def test_a_worker_stream_must_register_first(own_channel: grpc.Channel) -> None:
    worker = dex_pb2_grpc.WorkerTaskServiceStub(own_channel)
    responses = worker.PollWorkerTask(iter([pb.PollWorkerTaskRequest(pong=pb.PollWorkerTaskPong())]))
    with pytest.raises(grpc.RpcError) as raised:
        list(responses)
    assert cast(grpc.Call, raised.value).code() == grpc.StatusCode.INVALID_ARGUMENT
    health: pb.HealthInfo = dex_pb2_grpc.FlowServiceStub(own_channel).HealthCheck(
        empty_pb2.Empty())
    assert health.condition == "OK", "the engine still serves"



def test_methods_of_other_services_name_themselves(own_channel: grpc.Channel) -> None:
    push = dex_pb2_grpc.WorkerServiceStub(own_channel)
    code, detail = code_of(lambda: push.InvokeWorkerRPC(pb.InvokeWorkerRPCRequest()))
    assert code == grpc.StatusCode.UNIMPLEMENTED and "InvokeWorkerRPC" in detail
    matching = dex_pb2_grpc.MatchingServiceStub(own_channel)
    code, detail = code_of(lambda: list(matching.ForwardPollWorkerTask(iter(()))))
    assert code == grpc.StatusCode.UNIMPLEMENTED and "ForwardPollWorkerTask" in detail


def test_raw_channel_publish_read_and_delete(stub: dex_pb2_grpc.FlowServiceStub) -> None:
    start(stub, "chan")
    stub.PublishToChannel(pb.PublishToChannelRequest(flow_id="chan", messages=[
        pb.ChannelMessage(channel_name="C", value=pb.Value(string_value="one"), message_id="m1"),
        pb.ChannelMessage(channel_name="C", value=pb.Value(string_value="two"), message_id="m2")]))
    stub.DeleteChannelMessage(pb.DeleteChannelMessageRequest(flow_id="chan", channel_name="C", message_id="m1"))
    code, _ = code_of(lambda: stub.DeleteChannelMessage(pb.DeleteChannelMessageRequest(
        flow_id="chan", channel_name="C", message_id="m1")))
    assert code == grpc.StatusCode.NOT_FOUND, "a message is deleted once"
    left: pb.GetChannelMessagesResponse = stub.GetChannelMessages(pb.GetChannelMessagesRequest(
        flow_id="chan", channel_name="C"))
    assert [(m.message_id, m.value.string_value) for m in left.messages] == [("m2", "two")]
    assert code_of(lambda: stub.PublishToChannel(pb.PublishToChannelRequest(
        flow_id="chan", messages=[pb.ChannelMessage(value=pb.Value(string_value="x"))])))[0] == (
        grpc.StatusCode.INVALID_ARGUMENT)
