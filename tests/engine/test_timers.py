"""Timers (whole seconds) and ``SkipTimer``: a Timer fires no earlier than its duration, a zero
Timer fires at once, a waiting Timer can be skipped by condition id or by index, and skipping
something that is not a waiting Timer is refused with a clear error."""

from __future__ import annotations

import time
from datetime import timedelta

import grpc
import pytest
from dex import (
    AsyncContext,
    Channel,
    Context,
    DexServiceError,
    FlowNotActiveOrNotFoundError,
    FlowStatus,
    PersistenceSchema,
    RPCResult,
    Step,
    StepDecision,
    StepExecutionId,
    StepList,
    Timer,
    TimerId,
    Wait,
    go_to,
    graceful_complete,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, SingleStepFlow, retry_until

nudge = Channel("Nudge", str)


def wait_for_mode(mode: str) -> Wait:
    match mode:
        case "1s":
            return Wait.until(Timer.by_duration(timedelta(seconds=1)))
        case "0s":
            return Wait.until(Timer.by_duration(timedelta(0)))
        case "long-id":
            return Wait.until(Timer.by_duration(timedelta(hours=1), condition_id="long"))
        case "two-timers":
            return Wait.any_of(Timer.by_duration(timedelta(hours=1)), Timer.by_duration(timedelta(hours=2)))
        case "channel-and-1s":
            return Wait.all_of(nudge.for_one(), Timer.by_duration(timedelta(seconds=1)))
        case "long-index":
            return Wait.any_of(nudge.for_one(), Timer.by_duration(timedelta(hours=1)))
        case _:
            raise ValueError(mode)


class Sleep(Step[str]):
    def __init__(self, flow: TimerFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        self.flow.probe.record("waiting", time.monotonic())
        return wait_for_mode(input)

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("fired", (context.has_timer_fired(), context.has_timer_fired(0),
                                         time.monotonic()))
        self.flow.probe.record("second-timer", context.has_timer_fired(1))
        self.flow.probe.record("nudges", list(nudge.results(context)))
        if input == "long-id":
            return go_to(Sleep, "long-index")
        return graceful_complete(context.step_execution_id)


class TimerFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Sleep(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(nudge)

    @rpc
    def poke(self, context: Context) -> RPCResult[bool]:
        nudge.publish(context, "poke")
        return RPCResult(True)


def test_a_one_second_timer_fires_after_at_least_one_second(dex: DexFixture) -> None:
    flow = TimerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "1s")
    assert harness.result(flow_id).single_output(str) == "Sleep-1"
    (waiting,) = flow.probe.values("waiting")
    (fired,) = flow.probe.values("fired")
    assert isinstance(waiting, float) and isinstance(fired, tuple)
    assert fired[:2] == (True, True)
    assert fired[2] - waiting >= 0.9, "a Timer never fires before its duration"


def test_a_zero_timer_fires_at_once(dex: DexFixture) -> None:
    flow = TimerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "0s")
    assert harness.result(flow_id).status is FlowStatus.COMPLETED
    assert [f[:2] for f in flow.probe.values("fired") if isinstance(f, tuple)] == [(True, True)]


def test_skip_timer_by_condition_id_then_by_index(dex: DexFixture) -> None:
    flow = TimerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "long-id")
    retry_until(lambda: harness.client.skip_timer(flow_id, StepExecutionId("Sleep", 1),
                                                  TimerId.by_condition_id("long")),
                what="skip the armed Timer of Sleep-1", retry_on=(DexServiceError,))
    flow.probe.wait("waiting", 2)
    retry_until(lambda: harness.client.skip_timer(flow_id, StepExecutionId("Sleep", 2),
                                                  TimerId.by_condition_index(0)),
                what="skip the armed Timer of Sleep-2", retry_on=(DexServiceError,))
    result = harness.result(flow_id)
    assert result.single_output(str) == "Sleep-2"
    assert [f[:2] for f in flow.probe.values("fired") if isinstance(f, tuple)] == [(True, True), (True, True)]


REFUSALS = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)


def test_skip_timer_refuses_what_is_not_a_waiting_timer(dex: DexFixture) -> None:
    flow = TimerFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    with pytest.raises(FlowNotActiveOrNotFoundError):
        harness.client.skip_timer(flow_id, StepExecutionId("Sleep", 1), TimerId.by_condition_id("long"))
    harness.client.start_flow(flow, flow_id, "long-id")
    flow.probe.wait("waiting")
    for step, timer in ((StepExecutionId("Sleep", 7), TimerId.by_condition_id("long")),
                        (StepExecutionId("Nope", 1), TimerId.by_condition_index(0))):
        with pytest.raises(DexServiceError) as refused:
            harness.client.skip_timer(flow_id, step, timer)
        assert refused.value.code in REFUSALS, refused.value
        assert refused.value.detail
    # The real Timer is still armed and skippable after the refusals.
    retry_until(lambda: harness.client.skip_timer(flow_id, StepExecutionId("Sleep", 1),
                                                  TimerId.by_condition_id("long")),
                what="skip the armed Timer", retry_on=(DexServiceError,))
    flow.probe.wait("fired")


class AsyncSleep(Step[int]):
    def __init__(self, flow: NamedFlow[int]) -> None:
        self.flow = flow

    async def wait_for(self, context: AsyncContext, input: int) -> Wait:  # type: ignore[override]
        return Wait.until(Timer.by_duration(timedelta(seconds=input), condition_id="nap"))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        return graceful_complete(context.has_timer_fired())


def test_async_worker_timer_is_skippable(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), AsyncSleep)
    harness, flow_id = dex.start_flow(flow, 3600, async_worker=True)
    retry_until(lambda: harness.client.skip_timer(flow_id, StepExecutionId("AsyncSleep", 1),
                                                  TimerId.by_condition_id("nap")),
                what="skip the armed Timer", retry_on=(DexServiceError,))
    assert harness.result(flow_id).single_output(bool) is True


def test_skip_timer_by_index_selects_among_several_timers(dex: DexFixture) -> None:
    flow = TimerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "two-timers")
    retry_until(lambda: harness.client.skip_timer(flow_id, StepExecutionId("Sleep", 1), TimerId.by_condition_index(1)),
                what="skip the second Timer of Sleep-1", retry_on=(DexServiceError,))
    assert harness.result(flow_id).single_output(str) == "Sleep-1"
    assert [f[:2] for f in flow.probe.values("fired") if isinstance(f, tuple)] == [(True, False)]
    assert flow.probe.values("second-timer") == [True]


def test_all_of_a_channel_and_a_timer_waits_for_the_timer_too(dex: DexFixture) -> None:
    flow = TimerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "channel-and-1s")
    assert harness.client.invoke_rpc(flow.poke, flow_id) is True
    assert harness.result(flow_id).single_output(str) == "Sleep-1"
    (waiting,) = flow.probe.values("waiting")
    (fired,) = flow.probe.values("fired")
    assert isinstance(waiting, float) and isinstance(fired, tuple)
    assert fired[:2] == (True, True) and fired[2] - waiting >= 0.9
    assert flow.probe.values("nudges") == [["poke"]]
