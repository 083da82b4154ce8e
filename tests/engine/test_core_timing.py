"""Engine core, injectable clock and timing policy: the scheduler waits on the engine's clock (a
manual clock moves only when told), a Step retry an hour away runs as soon as that clock is moved
an hour on, ``EngineTiming`` refuses nonsense, and a server without one uses Dex's timings.
Runs in-process ``EngineServer``s with a ``ManualClock``; nothing here waits on real time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from dex import Context, FlowStatus, RetryPolicy, Step, StepDecision, StepOptions, graceful_complete

from dex_agents.engine.scheduler import Scheduler
from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import EngineTiming, ManualClock
from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, SingleStepFlow, eventually

EVENT_SECONDS = 10.0


def test_the_scheduler_runs_a_callback_only_once_its_clock_reaches_the_due_time() -> None:
    clock = ManualClock()
    scheduler = Scheduler(threading.RLock(), clock)
    ran: list[str] = []
    first, second = threading.Event(), threading.Event()

    def mark(label: str, event: threading.Event) -> None:
        ran.append(label)
        event.set()

    scheduler.call_later(60.0, lambda: mark("a minute", first))
    scheduler.call_later(3600.0, lambda: mark("an hour", second))
    scheduler.start()
    try:
        clock.advance(60.0)
        assert first.wait(EVENT_SECONDS)
        assert ran == ["a minute"], "the callback an hour away ran before its time"
        clock.advance(3540.0)
        assert second.wait(EVENT_SECONDS)
        assert ran == ["a minute", "an hour"]
    finally:
        scheduler.stop()


class RetriesInAnHour(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=timedelta(hours=1), maximum_attempts=2))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("attempt", context.attempt)
        if context.attempt == 1:
            raise RuntimeError("the first attempt fails")
        return graceful_complete(context.attempt)


@pytest.fixture
def manual(tmp_path: Path) -> Iterator[tuple[EngineServer, ManualClock]]:
    clock = ManualClock()
    running = EngineServer(tmp_path / "manual.db", clock=clock)
    running.start()
    try:
        yield running, clock
    finally:
        running.stop()


def test_a_retry_waits_on_the_engine_clock_not_on_real_time(
        dex: DexFixture, manual: tuple[EngineServer, ManualClock]) -> None:
    server, clock = manual
    flow = SingleStepFlow(dex.flow_type(), RetriesInAnHour)
    harness = dex.start(flow, address=server.address)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "x")

    def retry_scheduled() -> bool:
        with server.engine.lock:
            run = server.engine.current_flow(flow_id)
            step = server.engine.step(run.uid, "RetriesInAnHour-1") if run is not None else None
            return step is not None and step.attempt == 2

    eventually(retry_scheduled, what="the first attempt's failure to be committed")
    assert flow.probe.values("attempt") == [1]
    clock.advance(3600.0)
    result = harness.result(flow_id)
    assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 2)


@pytest.mark.parametrize("field", ["dispatch_wait", "policy_second", "deadline_check_interval", "long_poll_cap"])
def test_engine_timing_refuses_negative_and_zero_where_it_matters(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        EngineTiming(**{field: -1.0})
    if field in ("policy_second", "deadline_check_interval"):
        with pytest.raises(ValueError, match=field):
            EngineTiming(**{field: 0.0})


def test_a_server_without_a_timing_uses_dexs(tmp_path: Path) -> None:
    assert EngineServer(tmp_path / "default.db").timing == EngineTiming()


def test_a_manual_clock_never_goes_back() -> None:
    with pytest.raises(ValueError):
        ManualClock().advance(-1.0)
