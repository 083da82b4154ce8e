"""Method and heartbeat timeouts: an attempt that outlives ``execute_method_timeout`` fails and is
retried (its late result is ignored) or routed; an attempt that stops heartbeating past
``heartbeat_timeout`` (10 s, Dex's minimum) is retried with the last checkpoint; regular heartbeats
keep a long attempt alive, and so do Stream writes (an implicit heartbeat); checkpoints survive failed attempts and an empty heartbeat clears them
(sync generator handlers and AsyncWorker)."""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from datetime import timedelta

from dex import (
    AsyncContext,
    Context,
    FlowStatus,
    RetryPolicy,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    StepOutput,
    graceful_complete,
    heartbeat,
)

from tests.engine.conftest import DexFixture
from tests.engine.probes import POLICY_SECOND
from tests.engine.harness import NamedFlow, SingleStepFlow, StreamStepFlow

SECOND = timedelta(seconds=1)
HEARTBEAT_TIMEOUT = timedelta(seconds=10)


class Boom(RuntimeError):
    """The planned failure of these tests."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    attempt: int
    has_value: bool
    value: int | None


def checkpoint(context: Context) -> Checkpoint:
    has = context.has_last_heartbeat_value()
    return Checkpoint(attempt=context.attempt, has_value=has,
                      value=context.get_last_heartbeat_value(int) if has else None)


def hold_first_attempt(flow: NamedFlow[str], context: Context) -> None:
    """Block attempt 1 until the test opens the gate; raise if the Worker cancels it instead."""
    flow.probe.record("holding", context.attempt)
    opened = flow.gate.block(context.is_cancellation_requested)
    flow.probe.record("released", "gate" if opened else "cancelled")
    if not opened:
        raise Boom("attempt was cancelled")


class Slowpoke(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_method_timeout=SECOND,
                           execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2))

    def execute(self, context: Context, input: str) -> StepDecision:
        if context.attempt == 1:
            hold_first_attempt(self.flow, context)
            return graceful_complete("late")
        return graceful_complete("on-time")


def test_method_timeout_retries_and_ignores_the_late_result(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Slowpoke)
    harness, flow_id = dex.start_flow(flow, "x")
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "on-time")
    flow.gate.open()
    flow.probe.wait("released")
    again = harness.result(flow_id)
    assert (again.status, again.single_output(str)) == (FlowStatus.COMPLETED, "on-time")
    completed = harness.completed_executes(flow_id)
    assert completed == ["Slowpoke-1"]


class Stuck(Step[str]):
    def __init__(self, flow: TimeoutRouteFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_method_timeout=SECOND, execute_retry=RetryPolicy(maximum_attempts=1)
                           ).on_execute_failure_proceed_to(AfterTimeout)

    def execute(self, context: Context, input: str) -> StepDecision:
        hold_first_attempt(self.flow, context)
        return graceful_complete("late")


class AfterTimeout(Step[str]):
    def __init__(self, flow: TimeoutRouteFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        error = context.recovery_error
        self.flow.probe.record("recovery", (input, error is not None and bool(error.detail)))
        return graceful_complete(f"routed:{input}")


class TimeoutRouteFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Stuck(self)).other_steps(AfterTimeout(self))


def test_method_timeout_exhausted_routes_to_recovery(dex: DexFixture) -> None:
    flow = TimeoutRouteFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "slow")
    assert harness.result(flow_id).single_output(str) == "routed:slow"
    assert flow.probe.values("recovery") == [("slow", True)]


class Beats(Step[str]):
    """``silent``: beat once then go quiet (attempt 1); ``steady``: beat every policy second for 12 of them."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_method_timeout=timedelta(seconds=60), heartbeat_timeout=HEARTBEAT_TIMEOUT,
                           execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2))

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        self.flow.probe.record("attempt", checkpoint(context))
        if input == "steady":
            for beat in range(12):
                yield heartbeat(beat)
                time.sleep(POLICY_SECOND)
            return graceful_complete(context.attempt)
        if context.attempt == 1:
            yield heartbeat(7)
            hold_first_attempt(self.flow, context)
        return graceful_complete(context.attempt)


def test_heartbeat_timeout_retries_with_the_last_checkpoint(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Beats)
    harness, flow_id = dex.start_flow(flow, "silent")
    result = harness.result(flow_id)
    assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 2)
    assert flow.probe.values("attempt") == [Checkpoint(attempt=1, has_value=False, value=None),
                                            Checkpoint(attempt=2, has_value=True, value=7)]


def test_steady_heartbeats_keep_a_long_attempt_alive(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Beats)
    harness, flow_id = dex.start_flow(flow, "steady")
    assert harness.result(flow_id).single_output(int) == 1
    assert flow.probe.values("attempt") == [Checkpoint(attempt=1, has_value=False, value=None)]


class Narrates(Step[str]):
    """Never heartbeats explicitly: writes one Stream message a policy second for 12 of them, past the 10 s timeout."""

    def __init__(self, flow: StreamStepFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(heartbeat_timeout=HEARTBEAT_TIMEOUT,
                           execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2))

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        self.flow.probe.record("attempt", context.attempt)
        for line in range(12):
            yield self.flow.events.write(context, f"{input}-{line}")
            time.sleep(POLICY_SECOND)
        return graceful_complete(context.attempt)


def test_stream_writes_count_as_heartbeats(dex: DexFixture) -> None:
    flow = StreamStepFlow(dex.flow_type(), Narrates)
    harness, flow_id = dex.start_flow(flow, "line")
    assert harness.result(flow_id).single_output(int) == 1
    assert flow.probe.values("attempt") == [1]


class Checkpoints(Step[str]):
    """Attempt 1 checkpoints 3 and fails; attempt 2 clears it and fails; attempt 3 completes."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=3))

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        self.flow.probe.record("attempt", checkpoint(context))
        if context.attempt == 1:
            yield heartbeat(3)
            raise Boom("fail after checkpoint 3")
        if context.attempt == 2:
            yield heartbeat()
            raise Boom("fail after clearing the checkpoint")
        return graceful_complete(context.attempt)


def test_checkpoints_survive_failed_attempts_and_an_empty_heartbeat_clears_them(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Checkpoints)
    harness, flow_id = dex.start_flow(flow, "c")
    assert harness.result(flow_id).single_output(int) == 3
    assert flow.probe.values("attempt") == [
        Checkpoint(attempt=1, has_value=False, value=None), Checkpoint(attempt=2, has_value=True, value=3),
        Checkpoint(attempt=3, has_value=False, value=None)]


class AsyncCheckpoints(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2))

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("attempt", checkpoint(context))
        if context.attempt == 1:
            await context.heartbeat(5)
            await context.heartbeat(6)
            raise Boom("async fail after checkpoint 6")
        return graceful_complete(context.attempt)


def test_async_worker_checkpoint_reaches_the_next_attempt(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), AsyncCheckpoints)
    harness, flow_id = dex.start_flow(flow, "a", async_worker=True)
    assert harness.result(flow_id).single_output(int) == 2
    assert flow.probe.values("attempt") == [Checkpoint(attempt=1, has_value=False, value=None),
                                            Checkpoint(attempt=2, has_value=True, value=6)]
