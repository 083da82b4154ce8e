"""``GetFlowState`` and ``SetAttributes`` as Dex defines them, through the raw FlowService stub
(the SDK's Client has no API for either; Dex's own integration tests call them the same way).

* GetFlowState reports the run's config, Attributes, active Step executions (a Step waiting on its
  Wait is WAITING, with the Wait, its Timers and its Step-execution locals; a Step retrying after
  ``retry_after`` is ACTIVE with its last failure: attempt, the Worker's detail and stack trace),
  the pending Channel messages and the outputs completed so far; unknown Flows are NOT_FOUND.
* SetAttributes writes Attributes into the active run (the next Step sees them, history records an
  RPC event marked as the API's); a closed or unknown run is NOT_FOUND and a bad key is
  INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import cast

import grpc
import pytest
from dex import (
    Attribute,
    Channel,
    Context,
    PersistenceSchema,
    RetryPolicy,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    StepOptions,
    Timer,
    Wait,
    go_to_many,
    graceful_complete,
    retry_after,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually
from tests.engine.probes import WAIT_SECONDS

notes = Attribute("Notes", str)
level = Attribute("Level", int)
inbox = Channel("Inbox", str)
RETRY_DETAIL = "the service is not ready yet"


class Fan(Step[str]):
    def __init__(self, flow: StateFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        notes.set(context, "started")
        return go_to_many(StepMovement.of(Waiter, "waiting"), StepMovement.of(Retrier, "retrying"),
                          StepMovement.of(Finisher, "done early"))


class Waiter(Step[str]):
    """Waits for two Inbox messages or an hour, whichever comes first."""

    def __init__(self, flow: StateFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        context.set_step_execution_local("mark", "kept")
        return Wait.any_of(inbox.for_n(2), Timer.by_duration(timedelta(hours=1), condition_id="hour"))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("level", level.get(context))
        return graceful_complete("waited")


class Retrier(Step[str]):
    """Fails its first attempt asking for a retry in an hour."""

    def __init__(self, flow: StateFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=2))

    def execute(self, context: Context, input: str) -> StepDecision:
        if context.attempt == 1:
            raise retry_after(3600, RuntimeError(RETRY_DETAIL))
        return graceful_complete("retried")


class Finisher(Step[str]):
    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(input)


class StateFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Fan(self)).other_steps(Waiter(self), Retrier(self), Finisher())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(notes, level, inbox)


@pytest.fixture
def stub(dex: DexFixture) -> Iterator[dex_pb2_grpc.FlowServiceStub]:
    with grpc.insecure_channel(dex.engine.address) as channel:
        yield dex_pb2_grpc.FlowServiceStub(channel)


def _state(stub: dex_pb2_grpc.FlowServiceStub, flow_id: str) -> pb.GetFlowStateResponse:
    return stub.GetFlowState(pb.GetFlowStateRequest(flow_id=flow_id), timeout=WAIT_SECONDS)


def test_get_flow_state_reports_waiting_and_retrying_steps_messages_and_outputs(
        dex: DexFixture, stub: dex_pb2_grpc.FlowServiceStub) -> None:
    flow = StateFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    stub.PublishToChannel(pb.PublishToChannelRequest(flow_id=flow_id, messages=[pb.ChannelMessage(
        channel_name="Inbox", message_id="m1", value=pb.Value(string_value="one"))]), timeout=WAIT_SECONDS)

    def settled() -> pb.GetFlowStateResponse | None:
        current = _state(stub, flow_id)
        by_id = {step.step_execution_id: step for step in current.active_step_executions}
        waiting = by_id.get("Waiter-1")
        retrying = by_id.get("Retrier-1")
        if (waiting is None or waiting.phase != pb.ACTIVE_STEP_PHASE_WAITING or retrying is None
                or not retrying.HasField("last_failure_info") or "Finisher-1" in by_id):
            return None
        return current

    state = eventually(settled, what="Waiter-1 waiting and Retrier-1 retrying")
    assert [step.step_execution_id for step in state.active_step_executions] == ["Retrier-1", "Waiter-1"]
    retrying, waiting = state.active_step_executions
    assert (retrying.phase, retrying.from_step_execution_id, retrying.step_type) == (
        pb.ACTIVE_STEP_PHASE_ACTIVE, "Fan-1", "Retrier")
    assert retrying.movement.step_input.string_value == "retrying"
    failure = retrying.last_failure_info
    assert failure.attempt == 1
    assert failure.details.original_worker_error_detail == RETRY_DETAIL
    assert RETRY_DETAIL in failure.details.original_worker_error_stack_trace
    assert waiting.waiting_condition.waiting_condition_type == pb.WAITING_CONDITION_TYPE_ANY_COMPLETED
    assert [c.channel_name for c in waiting.waiting_condition.channel_conditions] == ["Inbox"]
    assert [(t.condition_id, t.status) for t in waiting.timers] == [("hour", pb.INTERNAL_TIMER_STATUS_PENDING)]
    assert [kv.key for kv in waiting.step_execution_locals] == ["mark"]
    assert [m.value.string_value for m in state.pending_channel_messages["Inbox"].messages] == ["one"]
    assert {kv.key for kv in state.attributes} == {"Notes"}
    assert [(c.completed_step_execution_id, c.completed_step_output.string_value) for c in state.completed_steps] \
        == [("Finisher-1", "done early")]


def test_set_attributes_writes_into_the_active_run(dex: DexFixture, stub: dex_pb2_grpc.FlowServiceStub) -> None:
    flow = StateFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    eventually(lambda: any(s.step_execution_id == "Waiter-1" and s.phase == pb.ACTIVE_STEP_PHASE_WAITING
                           for s in _state(stub, flow_id).active_step_executions), what="Waiter-1 waiting")
    stub.SetAttributes(pb.SetAttributesRequest(flow_id=flow_id, attributes=[
        pb.AttributeWrite(key="Level", value=pb.Value(int_value=7)),
        pb.AttributeWrite(key="Notes", value=pb.Value(null_value="NULL_VALUE"))]), timeout=WAIT_SECONDS)
    attributes = {kv.key: kv.value for kv in _state(stub, flow_id).attributes}
    assert set(attributes) == {"Level"} and attributes["Level"].int_value == 7, "null deletes, a value sets"
    for number in (1, 2):
        stub.PublishToChannel(pb.PublishToChannelRequest(flow_id=flow_id, messages=[pb.ChannelMessage(
            channel_name="Inbox", message_id=f"m{number}", value=pb.Value(string_value="x"))]), timeout=WAIT_SECONDS)
    assert flow.probe.wait("level") == [7], "the next Step method reads the written Attribute"
    events = [event for event in harness.history(flow_id) if event.HasField("rpc_execution_completed")]
    assert [(e.rpc_execution_completed.is_set_attribute_api, [w.key for w in e.rpc_execution_completed.upsert_attributes])
            for e in events] == [(True, ["Level", "Notes"])]


def test_set_attributes_and_get_flow_state_refuse_what_they_cannot_serve(
        dex: DexFixture, stub: dex_pb2_grpc.FlowServiceStub) -> None:
    flow = StateFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    harness.client.stop_flow(flow_id)
    harness.result(flow_id)
    for call, expected in (
            (lambda: stub.SetAttributes(pb.SetAttributesRequest(flow_id=flow_id, attributes=[
                pb.AttributeWrite(key="Level", value=pb.Value(int_value=1))]), timeout=WAIT_SECONDS),
             grpc.StatusCode.NOT_FOUND),
            (lambda: stub.SetAttributes(pb.SetAttributesRequest(flow_id=dex.flow_id("missing"), attributes=[
                pb.AttributeWrite(key="Level", value=pb.Value(int_value=1))]), timeout=WAIT_SECONDS),
             grpc.StatusCode.NOT_FOUND),
            (lambda: stub.SetAttributes(pb.SetAttributesRequest(flow_id=flow_id, attributes=[
                pb.AttributeWrite(key="/bad", value=pb.Value(int_value=1))]), timeout=WAIT_SECONDS),
             grpc.StatusCode.INVALID_ARGUMENT),
            (lambda: _state(stub, dex.flow_id("missing")), grpc.StatusCode.NOT_FOUND)):
        with pytest.raises(grpc.RpcError) as raised:
            call()
        assert cast(grpc.Call, raised.value).code() == expected
    closed = _state(stub, flow_id)
    assert not closed.active_step_executions, "a closed run has no active Step"
