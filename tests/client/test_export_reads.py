"""``dex_agents.client.export`` without a server: Dex's history records and values as the export holds
them (hand-built protobufs, values already hydrated)."""

from __future__ import annotations

from typing import cast

import pytest
from dex.dexpb import dex_pb2 as pb
from pyrsistent import pvector

from dex_agents.client.export import _Converter
from dex_agents.client.export_records import json_of
from dex_agents.client.server_calls import ServerCalls
from dex_agents.pure.offline.export_document import ChannelMessages, StoredValue
from dex_agents.pure.machine.invocation_record import INVOCATION_RECORD_EVENT
from dex_agents.pure.offline.stored_values import freeze


class _Hydrated:
    """The one server call the converter makes: values arrive hydrated already."""

    def hydrated(self, session_id: str, value: pb.Value) -> pb.Value:
        return value


def converter() -> _Converter:
    return _Converter(cast(ServerCalls, _Hydrated()), "s-1")


def json_value(text: str) -> pb.Value:
    return pb.Value(obj_value=pb.EncodedObject(encoding="json", payload=text.encode()))


def test_each_dex_value_kind_becomes_the_json_it_holds() -> None:
    assert json_of(pb.Value()) is None and json_of(pb.Value(null_value="NULL_VALUE")) is None
    assert json_of(pb.Value(string_value="run-state")) == "run-state"
    assert json_of(pb.Value(int_value=3)) == 3 and json_of(pb.Value(double_value=0.5)) == 0.5
    assert json_of(pb.Value(bool_value=True)) is True
    assert json_of(json_value('{"text":"hi","n":[1]}')) == freeze({"text": "hi", "n": [1]})
    with pytest.raises(ValueError, match="is not JSON"):
        json_of(pb.Value(obj_value=pb.EncodedObject(encoding="bytes", payload=b"\x00")))


def test_a_completed_execute_becomes_a_history_step_with_unquoted_keys_and_its_record() -> None:
    record = '{"interrupt_deadline_ms":null,"max_model_calls_per_turn":50,"now_ms":[5,6]}'
    event = pb.FlowHistoryEvent(event_id=7, step_execute_completed=pb.StepExecuteCompletedEvent(
        input=pb.StepMethodEventInput(step_input=pb.Value(string_value="call:1")),
        context=pb.StepMethodEventContext(step_execution_id="CallTool-1", step_type="CallTool", final_attempt=2,
                                          last_failure_info=pb.StepMethodFailure(attempt=1, backend_error="lost")),
        output=pb.StepExecuteCompletedOutput(
            upsert_attributes=[pb.AttributeWrite(key="AgentToolCalls/call%3A1", value=json_value('{"x":1}')),
                               pb.AttributeWrite(key="FrameworkRunState", value=pb.Value(null_value="NULL_VALUE"))],
            publish_to_channel=[pb.ChannelMessage(channel_name="ToolCallResults",
                                                  value=json_value('{"tool_call_id":"call:1"}'))],
            record_events=[pb.KV(key="other", value=pb.Value(int_value=1)),
                           pb.KV(key=INVOCATION_RECORD_EVENT, value=pb.Value(string_value=record))])))
    step = converter().step(event)
    assert step is not None
    assert (step.method, step.outcome, step.step_type, step.attempt, step.input) == (
        "execute", "completed", "CallTool", 2, "call:1")
    assert list(step.writes) == [StoredValue(name="AgentToolCalls", instance="call:1", value=freeze({"x": 1})),
                                 StoredValue(name="FrameworkRunState", instance=None, value=None)]
    assert list(step.published) == [ChannelMessages(name="ToolCallResults", instance=None,
                                                    values=pvector([freeze({"tool_call_id": "call:1"})]))]
    assert step.failure is not None and step.failure.detail == "lost"
    assert step.recorded is not None and list(step.recorded.now_ms) == [5, 6]
    assert step.time is None


def test_a_pending_consumption_counts_as_queued_until_its_execute_commits() -> None:
    consumed = pb.ConditionResults(channel_results=[pb.ChannelResult(
        channel_name="QueuedUserMessages", condition_status=pb.CONDITION_STATUS_COMPLETED,
        values=[json_value('{"text":"hi"}')])])
    pending = pb.FlowHistoryEvent(step_execute_pending=pb.StepMethodPendingEvent(
        input=pb.StepMethodEventInput(condition_results=consumed),
        context=pb.StepMethodEventContext(step_execution_id="AwaitUserMessage-2", step_type="AwaitUserMessage")))
    reader = converter()
    assert reader.step(pending) is None
    assert reader.in_flight_messages(set()) == [freeze({"text": "hi"})]
    assert reader.in_flight_messages({"AwaitUserMessage-2"}) == []
    completed = pb.FlowHistoryEvent(step_execute_completed=pb.StepExecuteCompletedEvent(
        context=pb.StepMethodEventContext(step_execution_id="AwaitUserMessage-2", step_type="AwaitUserMessage")))
    step = reader.step(completed)  # a completion without condition results takes the pending event's
    assert step is not None and [list(c.values) for c in step.consumed] == [[freeze({"text": "hi"})]]


def test_failures_rpcs_and_other_events() -> None:
    reader = converter()
    failed = reader.step(pb.FlowHistoryEvent(step_execute_failed=pb.StepExecuteFailedEvent(
        context=pb.StepMethodEventContext(step_execution_id="RunModel-2", step_type="RunModel", final_attempt=3),
        output=pb.StepMethodFailedOutput(failure=pb.StepMethodFailure(
            attempt=3, backend_error="boom", details=pb.ServiceErrorResponse(original_worker_error_type="Err"))))))
    assert failed is not None and failed.outcome == "failed" and failed.failure is not None
    assert (failed.failure.detail, failed.failure.error_type) == ("boom", "Err")
    rpc = reader.step(pb.FlowHistoryEvent(rpc_execution_completed=pb.RpcExecutionCompletedEvent(
        rpc_name="send_user_message", input=json_value('{"text":"a"}'), output=pb.Value(bool_value=True))))
    assert rpc is not None and (rpc.method, rpc.rpc_name, rpc.output) == ("rpc", "send_user_message", True)
    external = reader.step(pb.FlowHistoryEvent(rpc_execution_completed=pb.RpcExecutionCompletedEvent(
        is_set_attribute_api=True)))
    assert external is not None and external.rpc_name == "SetAttributes"
    assert reader.step(pb.FlowHistoryEvent(flow_closed=pb.FlowClosedHistoryEvent())) is None
