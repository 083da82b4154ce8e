"""What the engine tells a Client where Dex's own wording or timing is documented.

* A run closed by cancel or terminate has no error message (the stop reason is not an error);
  a run closed by ``StopType.FAIL`` carries the reason.
* A Flow timeout reads ``Flow timed out after <N> seconds``.
* A Step failure that fails the run surfaces the Worker's message as it was sent.
* ``wait_for_step_completion`` returns once the Step execution is canceled.
* A canceled plain sync handler (it cannot heartbeat) runs to its end and its decision is discarded.
* ``skip_timer`` on a missing Timer says it ``does not exist or is not pending``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from dex import (
    Attribute,
    Channel,
    Context,
    DexServiceError,
    FlowNotActiveOrNotFoundError,
    FlowStatus,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepExecutionId,
    StepList,
    StepMovement,
    StepOptions,
    StopFlowOptions,
    StopType,
    TimerId,
    WaitForStepCompletionOptions,
    Wait,
    dead_end,
    go_to,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import GATE_SECONDS, NamedFlow, in_thread, retry_until

never = Channel("Never", str)
outcome = Attribute("Outcome", str)
WAIT_OPTIONS_SECONDS = 30


class Start(Step[str]):
    """Fails (input ``fail``), moves to ``Park`` (``park``) or blocks until the gate opens (``block``)."""

    def __init__(self, flow: ParkFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))

    def execute(self, context: Context, input: str) -> StepDecision:
        if input == "fail":
            raise ValueError("card 4242 was declined")
        if input == "park":
            return go_to(Park, input)
        self.flow.probe.record("blocking")
        self.flow.gate.block()
        self.flow.probe.record("ended")
        outcome.set(context, "written by a canceled handler")
        return go_to(After, "late")


class Park(Step[str]):
    """Waits on a Channel nobody publishes to."""

    def __init__(self, flow: ParkFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        self.flow.probe.record("parked")
        return Wait.until(never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return dead_end()


class After(Step[str]):
    def __init__(self, flow: ParkFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("after", input)
        return dead_end()


class ParkFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Start(self)).other_steps(Park(self), After(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never, outcome)

    @rpc
    def cancel_park(self, context: Context) -> RPCResult[bool]:
        return RPCResult(True).with_canceling_steps(Park)

    @rpc
    def cancel_start(self, context: Context) -> RPCResult[bool]:
        return RPCResult(True).with_canceling_steps(Start)

    @rpc
    def proceed(self, context: Context) -> RPCResult[bool]:
        return RPCResult(True, (StepMovement(After, "after the cancel"),))

    @rpc
    def read_outcome(self, context: Context) -> RPCResult[str]:
        return RPCResult(outcome.get(context) or "unset")


@pytest.mark.parametrize("stop_type", [StopType.CANCEL, StopType.TERMINATE])
@pytest.mark.parametrize("reason", [None, "operator said so"])
def test_cancel_and_terminate_leave_the_error_message_empty(dex: DexFixture, stop_type: StopType,
                                                             reason: str | None) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    harness.client.stop_flow(flow_id, StopFlowOptions(type=stop_type, reason=reason))
    result = harness.result(flow_id)
    assert (result.status, result.error_type, result.error_message) == (
        FlowStatus.CANCELED if stop_type is StopType.CANCEL else FlowStatus.TERMINATED, None, None)


def test_fail_carries_the_reason_as_the_error_message(dex: DexFixture) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    harness.client.stop_flow(flow_id, StopFlowOptions(type=StopType.FAIL, reason="operator said so"))
    assert harness.result(flow_id).error_message == "operator said so"


def test_a_flow_timeout_names_its_seconds(dex: DexFixture) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park", StartFlowOptions(timeout=timedelta(seconds=1)))
    assert harness.result(flow_id).error_message == "Flow timed out after 1 seconds"


def test_a_failed_step_surfaces_the_worker_message_as_is(dex: DexFixture) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "fail")
    result = harness.result(flow_id)
    assert (result.status, result.error_message) == (FlowStatus.FAILED, "card 4242 was declined")


def test_waiting_for_a_canceled_step_returns_once_it_is_canceled(dex: DexFixture) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    options_timeout = timedelta(seconds=WAIT_OPTIONS_SECONDS)
    waiting = in_thread(lambda: harness.client.wait_for_step_completion(
        flow_id, StepExecutionId("Park", 1), WaitForStepCompletionOptions(request_timeout=options_timeout)))
    harness.client.invoke_rpc(flow.cancel_park, flow_id)
    waiting(WAIT_OPTIONS_SECONDS + 5.0)
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING


def test_a_canceled_sync_handler_runs_to_its_end_and_its_decision_is_discarded(dex: DexFixture) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "block")
    flow.probe.wait("blocking")
    harness.client.invoke_rpc(flow.cancel_start, flow_id)
    flow.gate.open()
    flow.probe.wait("ended", timeout=GATE_SECONDS)
    harness.client.invoke_rpc(flow.proceed, flow_id)
    assert flow.probe.wait("after") == ["after the cancel"]
    assert harness.client.invoke_rpc(flow.read_outcome, flow_id) == "unset"
    assert "Start-1" not in harness.completed_executes(flow_id)
    assert flow.probe.values("after") == ["after the cancel"]


def test_skipping_a_missing_timer_says_it_does_not_exist_or_is_not_pending(dex: DexFixture) -> None:
    flow = ParkFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park")
    flow.probe.wait("parked")

    def refusal() -> str:
        try:
            harness.client.skip_timer(flow_id, StepExecutionId("Park", 1), TimerId.by_condition_index(3))
        except FlowNotActiveOrNotFoundError:
            raise  # Park-1 is not stored as waiting yet
        except DexServiceError as error:
            return str(error)
        return "skipped"

    assert "does not exist or is not pending" in retry_until(
        refusal, what="Park-1 waits", retry_on=(FlowNotActiveOrNotFoundError,))
