"""Flow IDs across runs: starting an open Flow ID is ``FlowAlreadyStartedError`` (unless
``ignore_already_started``); a repeated start is refused after completion by default; every id reuse
policy behaves as documented; and a new run of a reused ID is never confused with the previous
run (same Step execution ids), even when the previous run's handler returns late."""

from __future__ import annotations

import pytest
from dex import (
    Context,
    FlowAlreadyStartedError,
    FlowStatus,
    IdReusePolicy,
    StartFlowOptions,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    dead_end,
    force_fail,
    go_to,
    go_to_many,
    graceful_complete,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow
from tests.engine.test_flow_completion import CompletionFlow, OpenFlow


def test_already_started_and_id_reuse_policies(dex: DexFixture) -> None:
    flow = OpenFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    first_run = harness.client.start_flow(flow, flow_id, "one")
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "two")
    harness.client.start_flow(flow, flow_id, "three", StartFlowOptions(ignore_already_started=True))
    assert harness.client.describe_flow(flow_id).run_id == first_run
    harness.client.invoke_rpc(flow.finish, flow_id, "done")
    assert harness.result(flow_id).status is FlowStatus.COMPLETED
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "again")
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "again", StartFlowOptions(
            id_reuse_policy=IdReusePolicy.ALLOW_IF_PREVIOUS_FAILED))
    second_run = harness.client.start_flow(flow, flow_id, "again", StartFlowOptions(
        id_reuse_policy=IdReusePolicy.ALLOW_IF_NOT_RUNNING))
    assert second_run != first_run
    info = harness.client.describe_flow(flow_id)
    assert (info.run_id, info.status) == (second_run, FlowStatus.RUNNING)
    third_run = harness.client.start_flow(flow, flow_id, "replace", StartFlowOptions(
        id_reuse_policy=IdReusePolicy.ALLOW_TERMINATE_IF_RUNNING))
    assert third_run not in (first_run, second_run)
    assert harness.client.describe_flow(flow_id).run_id == third_run


def test_allow_if_previous_failed_reuses_only_after_a_failure(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness = dex.start(flow)
    failed_id, completed_id = dex.flow_id("failed"), dex.flow_id("completed")
    reuse = StartFlowOptions(id_reuse_policy=IdReusePolicy.ALLOW_IF_PREVIOUS_FAILED)
    harness.client.start_flow(flow, failed_id, "fail")
    assert harness.result(failed_id).status is FlowStatus.FAILED
    harness.client.start_flow(flow, completed_id, "wait-on-channel")
    assert harness.result(completed_id).status is FlowStatus.COMPLETED
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, completed_id, "fail", reuse)
    harness.client.start_flow(flow, failed_id, "wait-on-channel", reuse)
    result = harness.result(failed_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "forced")


class Begin(Step[str]):
    def __init__(self, flow: RerunFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to_many(StepMovement.of(Hang, input), StepMovement.of(Judge, input))


class Hang(Step[str]):
    """Blocks on the gate without watching for cancellation, so a cancelled run's result comes late."""

    def __init__(self, flow: RerunFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record(f"hang-started-{input}", context.step_execution_id)
        self.flow.gate.block()
        self.flow.probe.record("hang-returned", input)
        return go_to(Done, input)


class Judge(Step[str]):
    """Run ``r1`` fails itself once its Hang is running; run ``r2`` just ends this branch."""

    def __init__(self, flow: RerunFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        if input == "r1":
            self.flow.probe.wait("hang-started-r1")
            return force_fail("first run fails while its Hang-1 still runs")
        return dead_end()


class Done(Step[str]):
    def __init__(self, flow: RerunFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(f"done {input}")


class RerunFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Begin(self)).other_steps(Hang(self), Judge(self), Done(self))


def test_a_late_result_of_the_previous_run_never_reaches_the_new_run(dex: DexFixture) -> None:
    flow = RerunFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "r1")
    assert harness.result(flow_id).status is FlowStatus.FAILED
    harness.client.start_flow(flow, flow_id, "r2", StartFlowOptions(
        id_reuse_policy=IdReusePolicy.ALLOW_IF_PREVIOUS_FAILED))
    assert flow.probe.wait("hang-started-r2") == ["Hang-1"], "the new run numbers its Steps from 1 again"
    flow.gate.open()
    assert sorted(str(v) for v in flow.probe.wait("hang-returned", 2)) == ["r1", "r2"]
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "done r2")
    completed = harness.completed_executes(flow_id)
    assert sorted(completed) == ["Begin-1", "Done-1", "Hang-1", "Judge-1"], "run 2's own Steps, once each"
