"""Engine core, Flow timeouts: ``FAIL`` fails the run with FLOW_TIMEOUT, and a Flow that overrides
``handle_timeout`` gets it run (as Step ``sys:timeout_handler-1``, skippable like a Timer) with its
decision applied, while the run's other Steps are left alone."""

from __future__ import annotations

from datetime import timedelta

from dex import (
    Channel,
    Context,
    FlowErrorType,
    FlowStatus,
    PersistenceSchema,
    StartFlowOptions,
    Step,
    StepDecision,
    StepExecutionId,
    StepList,
    TimerId,
    Wait,
    dead_end,
    force_complete,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow

never = Channel("Never", str)


class Park(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return dead_end()


class PlainFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Park(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never)


class HandlerFlow(PlainFlow):
    def handle_timeout(self, context: Context) -> StepDecision:
        self.probe.record("handled", context.step_execution_id)
        return force_complete("timed out")


def test_fail_policy_fails_the_run_with_flow_timeout(dex: DexFixture) -> None:
    flow = PlainFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "x", StartFlowOptions(timeout=timedelta(seconds=1)))
    result = harness.result(flow_id)
    assert (result.status, result.error_type) == (FlowStatus.FAILED, FlowErrorType.FLOW_TIMEOUT)


def test_handle_timeout_runs_after_the_timeout_and_can_be_skipped(dex: DexFixture) -> None:
    flow = HandlerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "x", StartFlowOptions(timeout=timedelta(hours=1)))
    harness.client.skip_timer(flow_id, StepExecutionId("sys:timeout_handler", 1), TimerId.by_condition_index(0))
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "timed out")
    assert flow.probe.values("handled") == ["sys:timeout_handler-1"]
