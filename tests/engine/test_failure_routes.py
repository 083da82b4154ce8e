"""Failure routes: when ``execute`` runs out of attempts Dex moves to the recovery Step with the
failed Step's input unchanged and the final error (detail and type) in ``recovery_error``; route
options (static or per movement) govern the recovery Step; ``wait_for`` failures either fail the
Flow (default) or PROCEED to ``execute`` with the error exposed."""

from __future__ import annotations

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
    StepMovement,
    StepOptions,
    Wait,
    WaitForFailurePolicy,
    go_to_many,
    graceful_complete,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, SingleStepFlow

SECOND = timedelta(seconds=1)
BOOM_TYPE = f"{__name__}.Boom"


class Boom(RuntimeError):
    """The planned failure of these tests."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovered:
    step_execution_id: str
    from_step_execution_id: str
    attempt: int
    input: str
    detail: str
    error_type: str


def recovered(context: Context, input: str) -> Recovered:
    error = context.recovery_error
    return Recovered(step_execution_id=context.step_execution_id,
                     from_step_execution_id=context.from_step_execution_id, attempt=context.attempt, input=input,
                     detail="" if error is None else error.detail, error_type="" if error is None else error.error_type)


class Failing(Step[str]):
    def __init__(self, flow: RouteFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2)
                           ).on_execute_failure_proceed_to(Recover)

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("failing", context.attempt)
        raise Boom(f"boom:{input}:{context.attempt}")


class Recover(Step[str]):
    """Fails its first attempt when the input asks for it; its own options allow one attempt."""

    def __init__(self, flow: RouteFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("recovered", recovered(context, input))
        if input.startswith("flaky") and context.attempt == 1:
            raise Boom("recovery needs a second attempt")
        return graceful_complete(f"recovered:{input}")


class Entry(Step[str]):
    """Routes per movement when the input starts with ``flaky``, else uses Failing's static options."""

    def __init__(self, flow: RouteFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        if not input.startswith("flaky"):
            return go_to_many(StepMovement.of(Failing, input))
        route = StepOptions(execute_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2))
        options = StepOptions(execute_retry=RetryPolicy(maximum_attempts=1)).on_execute_failure_proceed_to(
            Recover, route)
        return go_to_many(StepMovement.of(Failing, input, options=options))


class RouteFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Entry(self)).other_steps(Failing(self), Recover(self))


def test_exhausted_execute_moves_to_the_recovery_step_with_input_and_error(dex: DexFixture) -> None:
    flow = RouteFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "order-7")
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "recovered:order-7")
    assert flow.probe.values("failing") == [1, 2]
    assert flow.probe.values("recovered") == [
        Recovered(step_execution_id="Recover-1", from_step_execution_id="Failing-1", attempt=1, input="order-7",
                  detail="boom:order-7:2", error_type=BOOM_TYPE)]


def test_route_options_govern_the_recovery_step(dex: DexFixture) -> None:
    flow = RouteFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "flaky-9")
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "recovered:flaky-9")
    assert flow.probe.values("failing") == [1], "the movement's options allow one attempt"
    recoveries = [r for r in flow.probe.values("recovered") if isinstance(r, Recovered)]
    assert [r.attempt for r in recoveries] == [1, 2], "the route's options allow two attempts"
    assert {(r.input, r.detail, r.error_type) for r in recoveries} == {("flaky-9", "boom:flaky-9:1", BOOM_TYPE)}


class BadWait(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(wait_for_retry=RetryPolicy(initial_interval=SECOND, maximum_attempts=2),
                           wait_for_failure=WaitForFailurePolicy.PROCEED)

    def wait_for(self, context: Context, input: str) -> Wait:
        self.flow.probe.record("wait_for", context.attempt)
        raise Boom(f"wait boom {context.attempt}")

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("execute", (context.wait_for_method_failed(), recovered(context, input)))
        return graceful_complete(f"proceeded:{input}")


def test_wait_for_failure_proceed_runs_execute_with_the_error(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), BadWait)
    harness, flow_id = dex.start_flow(flow, "w")
    assert harness.result(flow_id).single_output(str) == "proceeded:w"
    assert flow.probe.values("wait_for") == [1, 2]
    ((failed, info),) = [e for e in flow.probe.values("execute") if isinstance(e, tuple)]
    assert failed is True
    assert isinstance(info, Recovered)
    assert (info.input, info.detail, info.error_type) == ("w", "wait boom 2", BOOM_TYPE)


class StrictWait(BadWait):
    def get_step_options(self) -> StepOptions:
        return StepOptions(wait_for_retry=RetryPolicy(maximum_attempts=1))


def test_wait_for_failure_fails_the_flow_by_default(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), StrictWait)
    harness, flow_id = dex.start_flow(flow, "w")
    result = harness.result(flow_id)
    assert result.status is FlowStatus.FAILED
    assert flow.probe.values("wait_for") == [1]
    assert flow.probe.values("execute") == []


class AsyncFailing(Step[str]):
    def __init__(self, flow: AsyncRouteFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1)).on_execute_failure_proceed_to(
            AsyncRecover)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        raise Boom(f"async boom:{input}")


class AsyncRecover(Step[str]):
    def __init__(self, flow: AsyncRouteFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("recovered", recovered(context, input))
        return graceful_complete(input)


class AsyncRouteFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(AsyncFailing(self)).other_steps(AsyncRecover(self))


def test_async_worker_failure_route(dex: DexFixture) -> None:
    flow = AsyncRouteFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "a1", async_worker=True)
    assert harness.result(flow_id).single_output(str) == "a1"
    assert flow.probe.values("recovered") == [
        Recovered(step_execution_id="AsyncRecover-1", from_step_execution_id="AsyncFailing-1", attempt=1,
                  input="a1", detail="async boom:a1", error_type=BOOM_TYPE)]
