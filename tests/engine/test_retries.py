"""Retries and backoff: attempts count from 1 on one Step execution with a stable first-attempt
time, exponential backoff intervals are honoured (as lower bounds), ``maximum_attempts`` and
``total_duration`` end the retries, ``retry_after`` overrides the policy interval, per-movement
options replace static ones, ``wait_for`` has its own policy, and AsyncWorker retries alike."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from dex import (
    AsyncContext,
    Context,
    FlowStatus,
    RetryPolicy,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    StepOptions,
    Wait,
    go_to_many,
    graceful_complete,
    retry_after,
)

from tests.engine.conftest import DexFixture
from tests.engine.probes import POLICY_SECOND
from tests.engine.harness import NamedFlow, SingleStepFlow

SECOND = timedelta(seconds=1)


class Boom(RuntimeError):
    """The planned failure of these tests."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    step_execution_id: str
    attempt: int
    first_attempt_at: datetime
    at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """How a Flaky execution behaves: fail ``failures`` times, optionally via ``retry_after``."""

    failures: int
    retry_after_seconds: int
    options: str


def movement_options(name: str) -> StepOptions | None:
    match name:
        case "static":
            return None
        case "two-attempts":
            return StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2))
        case "single-attempt":
            return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))
        case "hour-interval":
            return StepOptions(execute_retry=RetryPolicy(initial_interval=timedelta(hours=1), maximum_attempts=3))
        case "default-attempts":
            return StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_interval=SECOND))
        case "capped":
            return StepOptions(execute_retry=RetryPolicy(
                initial_interval=SECOND, backoff_coefficient=100.0, maximum_interval=SECOND, maximum_attempts=4))
        case "two-seconds-total":
            return StepOptions(execute_retry=RetryPolicy(
                initial_interval=SECOND, backoff_coefficient=1.0, total_duration=timedelta(seconds=2)))
        case _:
            raise ValueError(name)


class Launch(Step[Plan]):
    def __init__(self, flow: RetryFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: Plan) -> StepDecision:
        return go_to_many(StepMovement.of(Flaky, input, options=movement_options(input.options)))


class Flaky(Step[Plan]):
    def __init__(self, flow: RetryFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(
            initial_interval=SECOND, backoff_coefficient=2.0, maximum_attempts=5))

    def execute(self, context: Context, input: Plan) -> StepDecision:
        self.flow.probe.record("attempt", Attempt(step_execution_id=context.step_execution_id, attempt=context.attempt,
                                                  first_attempt_at=context.first_attempt_at, at=time.monotonic()))
        if context.attempt <= input.failures:
            if input.retry_after_seconds:
                raise retry_after(input.retry_after_seconds, Boom(f"not yet ({context.attempt})"))
            raise Boom(f"attempt {context.attempt} fails")
        return graceful_complete(context.attempt)


class RetryFlow(NamedFlow[Plan]):
    def get_steps(self) -> StepList[Plan]:
        return StepList.start_step(Launch(self)).other_steps(Flaky(self))


def attempts_of(flow: NamedFlow[Plan]) -> list[Attempt]:
    return [a for a in flow.probe.values("attempt") if isinstance(a, Attempt)]


def run(dex: DexFixture, plan: Plan) -> tuple[RetryFlow, FlowStatus, list[Attempt], int | None]:
    flow = RetryFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, plan)
    result = harness.result(flow_id)
    output = result.single_output(int) if result.status is FlowStatus.COMPLETED else None
    return flow, result.status, attempts_of(flow), output


def test_execute_retries_with_exponential_backoff_on_one_step_execution(dex: DexFixture) -> None:
    _, status, attempts, output = run(dex, Plan(failures=2, retry_after_seconds=0, options="static"))
    assert (status, output) == (FlowStatus.COMPLETED, 3)
    assert [(a.step_execution_id, a.attempt) for a in attempts] == [("Flaky-1", 1), ("Flaky-1", 2), ("Flaky-1", 3)]
    assert len({a.first_attempt_at for a in attempts}) == 1, "first_attempt_at is stable across retries"
    assert attempts[1].at - attempts[0].at >= 0.9 * POLICY_SECOND, "initial interval 1 s"
    assert attempts[2].at - attempts[1].at >= 1.9 * POLICY_SECOND, "second interval 1 s x coefficient 2"


def test_maximum_interval_caps_the_backoff(dex: DexFixture) -> None:
    _, status, attempts, output = run(dex, Plan(failures=2, retry_after_seconds=0, options="capped"))
    assert (status, output) == (FlowStatus.COMPLETED, 3), "uncapped, the second retry would wait 100 s"
    assert attempts[2].at - attempts[1].at >= 0.9 * POLICY_SECOND


def test_zero_maximum_attempts_means_the_server_default_of_no_attempt_limit(dex: DexFixture) -> None:
    _, status, attempts, output = run(dex, Plan(failures=4, retry_after_seconds=0, options="default-attempts"))
    assert (status, output) == (FlowStatus.COMPLETED, 5)
    assert [a.attempt for a in attempts] == [1, 2, 3, 4, 5]


def test_per_movement_options_replace_static_ones_and_cap_attempts(dex: DexFixture) -> None:
    _, status, attempts, _ = run(dex, Plan(failures=99, retry_after_seconds=0, options="two-attempts"))
    assert status is FlowStatus.FAILED
    assert [a.attempt for a in attempts] == [1, 2]


def test_maximum_attempts_one_is_exactly_one_attempt(dex: DexFixture) -> None:
    _, status, attempts, _ = run(dex, Plan(failures=99, retry_after_seconds=0, options="single-attempt"))
    assert status is FlowStatus.FAILED
    assert [a.attempt for a in attempts] == [1]


def test_retry_after_overrides_the_policy_interval(dex: DexFixture) -> None:
    _, status, attempts, output = run(dex, Plan(failures=1, retry_after_seconds=1, options="hour-interval"))
    assert (status, output) == (FlowStatus.COMPLETED, 2), "retried after 1 s, not after the 1 h policy interval"
    assert attempts[1].at - attempts[0].at >= 0.9 * POLICY_SECOND


def test_total_duration_ends_retries(dex: DexFixture) -> None:
    _, status, attempts, _ = run(dex, Plan(failures=99, retry_after_seconds=0, options="two-seconds-total"))
    assert status is FlowStatus.FAILED
    assert 2 <= len(attempts) <= 4, f"about two seconds of 1 s retries, got {len(attempts)} attempts"


class Picky(Step[int]):
    """``wait_for`` fails ``input`` times under its own retry policy, then ``execute`` runs."""

    def __init__(self, flow: NamedFlow[int]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(wait_for_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=3),
                           execute_retry=RetryPolicy(maximum_attempts=1))

    def wait_for(self, context: Context, input: int) -> Wait:
        self.flow.probe.record("wait_for", (context.step_execution_id, context.attempt))
        if context.attempt <= input:
            raise Boom("wait_for not ready")
        return Wait.skip_immediately()

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("execute", (context.attempt, context.wait_for_method_failed()))
        return graceful_complete(context.attempt)


def test_wait_for_retries_under_its_own_policy(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Picky)
    harness, flow_id = dex.start_flow(flow, 2)
    assert harness.result(flow_id).single_output(int) == 1
    assert flow.probe.values("wait_for") == [("Picky-1", 1), ("Picky-1", 2), ("Picky-1", 3)]
    assert flow.probe.values("execute") == [(1, False)]


class AsyncFlaky(Step[int]):
    def __init__(self, flow: NamedFlow[int]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=3))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("attempt", context.attempt)
        if context.attempt <= input:
            raise Boom("async failure")
        return graceful_complete(context.attempt)


def test_async_worker_retries(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), AsyncFlaky)
    harness = dex.start(flow, async_worker=True)
    ok_id, failing_id = dex.flow_id("ok"), dex.flow_id("failing")
    harness.client.start_flow(flow, ok_id, 1)
    assert harness.result(ok_id).single_output(int) == 2
    harness.client.start_flow(flow, failing_id, 9)
    assert harness.result(failing_id).status is FlowStatus.FAILED
    assert flow.probe.values("attempt") == [1, 2, 1, 2, 3]
