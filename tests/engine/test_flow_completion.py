"""Flow completion and lifecycle: dead ends keep a Flow open with no active Step until an RPC
moves it; graceful completion waits for the other active Steps; forced completion and forced
failure close at once; Step decisions cancel waiting Steps (Flow-wide or siblings) and running ones
(the handler is told, its late result ignored). (Already-started and id reuse: test_flow_reuse.)"""

from __future__ import annotations

import time
from collections.abc import Generator
from datetime import timedelta

import pytest
from dex import (
    Channel,
    Context,
    FlowErrorType,
    FlowStatus,
    LongPollTimeoutError,
    PersistenceSchema,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    StepOutput,
    Wait,
    dead_end,
    force_complete,
    force_fail,
    go_to,
    go_to_many,
    graceful_complete,
    heartbeat,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import GATE_SECONDS, NamedFlow


never = Channel("Never", str)


class Idle(Step[str]):
    def __init__(self, flow: OpenFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("idle", input)
        return dead_end()


class Finish(Step[str]):
    def __init__(self, flow: OpenFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("finish", context.from_step_execution_id)
        return graceful_complete(f"finished:{input}")


class OpenFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Idle(self)).other_steps(Finish(self))

    @rpc
    def finish(self, context: Context, input: str) -> RPCResult[bool]:
        return RPCResult(True, next_steps=(StepMovement.of(Finish, input),))


def test_dead_end_keeps_the_flow_open_until_an_rpc_moves_it(dex: DexFixture) -> None:
    flow = OpenFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "x")
    flow.probe.wait("idle")
    with pytest.raises(LongPollTimeoutError):
        harness.client.wait_for_flow(flow_id, timeout=timedelta(seconds=1))
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING
    assert harness.client.invoke_rpc(flow.finish, flow_id, "bye") is True
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "finished:bye"
    assert flow.probe.values("finish") == [""]


class Fork(Step[str]):
    def __init__(self, flow: CompletionFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to_many(StepMovement.of(Slow, input), StepMovement.of(Quick, input))


class Slow(Step[str]):
    def __init__(self, flow: CompletionFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("slow-started")
        if input == "wait-on-channel":
            return go_to(Parked, input)
        self.flow.gate.block(context.is_cancellation_requested)
        self.flow.probe.record("slow-done")
        return dead_end()


class Parked(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("parked-ran")
        return dead_end()


class Quick(Step[str]):
    def __init__(self, flow: CompletionFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("quick-done")
        if input == "fail":
            return force_fail("quick decided to fail")
        if input == "wait-on-channel":
            return force_complete("forced")
        return graceful_complete("quick")


class CompletionFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Fork(self)).other_steps(Slow(self), Quick(self), Parked(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never)


def test_graceful_complete_waits_for_the_other_active_steps(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "graceful")
    flow.probe.wait("quick-done")
    flow.probe.wait("slow-started")
    with pytest.raises(LongPollTimeoutError):
        harness.client.wait_for_flow(flow_id, timeout=timedelta(seconds=1))
    flow.gate.open()
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "quick"
    assert flow.probe.values("slow-done") == [None]


def test_force_complete_closes_the_flow_despite_a_waiting_step(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "wait-on-channel")
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "forced"
    assert flow.probe.values("parked-ran") == []


def test_force_fail_fails_the_flow_with_the_reason(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "fail")
    result = harness.result(flow_id)
    assert result.status is FlowStatus.FAILED
    assert result.error_type is FlowErrorType.STEP_DECISION_FAILED
    assert "quick decided to fail" in (result.error_message or "")


class Split(Step[str]):
    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        if input == "running":
            return go_to_many(StepMovement.of(Spinner, "s"), StepMovement.of(Canceller, input))
        return go_to_many(StepMovement.of(Parked, "p"), StepMovement.of(Canceller, input))


class Spinner(Step[str]):
    """Runs (heartbeating, so a real Dex can deliver the cancel) until it is cancelled."""

    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        self.flow.probe.record("spinning")
        deadline = time.monotonic() + GATE_SECONDS
        while time.monotonic() < deadline:
            yield heartbeat()
            if context.is_cancellation_requested():
                self.flow.probe.record("spinner-cancelled")
                return graceful_complete("spinner finished after all")
            time.sleep(0.05)
        return graceful_complete("spinner never cancelled")


class Canceller(Step[str]):
    """Completes gracefully while cancelling the parked sibling (Flow-wide or siblings only)."""

    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        decision = graceful_complete(f"cancelled by {context.step_execution_id}")
        if input == "running":
            self.flow.probe.wait("spinning")
            return decision.with_canceling_steps(Spinner)
        if input == "siblings":
            return decision.with_canceling_sibling_steps(Parked)
        return decision.with_canceling_steps(Parked)


class CancelFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Split(self)).other_steps(Parked(self), Canceller(self), Spinner(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never)


@pytest.mark.parametrize("scope", ["flow-wide", "siblings"])
def test_a_decision_cancels_a_waiting_step_so_graceful_completion_can_close(dex: DexFixture, scope: str) -> None:
    flow = CancelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, scope)
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "cancelled by Canceller-1")
    assert flow.probe.values("parked-ran") == []


def test_a_decision_cancels_a_running_step_and_ignores_its_late_result(dex: DexFixture) -> None:
    flow = CancelFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "running")
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "cancelled by Canceller-1")
    flow.probe.wait("spinner-cancelled")
    again = harness.result(flow_id)
    assert [c.decode(str) for c in again.completions] == ["cancelled by Canceller-1"]
