"""Engine core, commit first, then change memory: when the COMMIT that records a Step method's
outcome fails (a full disk, an I/O error), the engine forgets nothing it had not yet recorded. The
task stays in flight with its deadline and its Attribute locks stay held, so the attempt's
timeouts still apply and the Step goes on once a later commit succeeds (here: the heartbeat
timeout fails the attempt and the retry completes the Flow). Runs an in-process ``EngineServer``
on a manual clock, so no timeout fires unless the test moves the clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dex import (
    AsyncContext,
    Attribute,
    Context,
    FlowStatus,
    PersistenceSchema,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    Wait,
    graceful_complete,
)

from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import ManualClock
from tests.engine.conftest import DexFixture
from tests.engine.faults import FailingCommit
from tests.engine.harness import Gate, NamedFlow, eventually

WAIT = 10.0
counter = Attribute("Counter", int)


class Holder(Step[str]):
    """Holds the Counter lock in the method named by its input (``execute`` or ``wait_for``); its
    first attempt blocks on the gate, then returns a result or raises (input ``execute-error``)."""

    def __init__(self, flow: CommitFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_lock_attributes=(counter.lock(),), wait_for_lock_attributes=(counter.lock(),))

    def wait_for(self, context: Context, input: str) -> Wait:
        if input == "wait_for":
            self._attempt(context, input)
        return Wait.skip_immediately()

    def execute(self, context: Context, input: str) -> StepDecision:
        if input != "wait_for":
            self._attempt(context, input)
        counter.set(context, context.attempt)
        return graceful_complete(context.attempt)

    def _attempt(self, context: Context, input: str) -> None:
        self.flow.probe.record("attempt", context.attempt)
        if context.attempt == 1:
            self.flow.gate.block()
            if input == "execute-error":
                raise RuntimeError("the first attempt fails")


class CommitFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Holder(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(counter)


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[EngineServer, ManualClock]]:
    clock = ManualClock(start=time.time())  # deadlines sent to the Worker lie in its future
    server = EngineServer(tmp_path / "commit-first.db", clock=clock)
    server.start()
    try:
        yield server, clock
    finally:
        server.stop()


@pytest.mark.parametrize("method", ["execute", "execute-error", "wait_for"])
def test_a_failed_outcome_commit_leaves_the_task_its_deadline_and_its_locks(
        dex: DexFixture, clocked: tuple[EngineServer, ManualClock], method: str) -> None:
    server, clock = clocked
    engine = server.engine
    flow = CommitFlow(dex.flow_type())
    harness = dex.start(flow, address=server.address)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, method)

    def first_attempt() -> bool | None:
        if flow.probe.values("attempt"):
            return True
        clock.advance(0.05)  # a decline's back-off (a Worker still registering, under load) runs on this clock
        return None

    eventually(first_attempt, what="the first attempt", timeout=WAIT)
    with engine.lock:
        run = engine.current_flow(flow_id)
        assert run is not None
        key = (run.uid, "Holder-1")
        task = engine.running[key]
        deadline, heartbeat_deadline = task.deadline, task.heartbeat_deadline
        failing = FailingCommit.install(engine.store)
    try:
        flow.gate.open()
        assert failing.failed.wait(WAIT), "the outcome's commit was attempted"
        with engine.lock:  # the reader thread that hit the failure is done with it
            failing.remove(engine.store)
            assert engine.running.get(key) is task, "the task is still in flight"
            assert not task.done
            assert (task.deadline, task.heartbeat_deadline) == (deadline, heartbeat_deadline)
            assert engine.locks.get((run.uid, "Counter")) == "step:Holder-1", "the lock is still held"
            step = engine.step(run.uid, "Holder-1")
            assert step is not None and step.attempt == 1
            assert step.phase == ("wait_for" if method == "wait_for" else "execute")
    finally:
        with engine.lock:
            failing.remove(engine.store)

    clock.advance(61.0)  # past the attempt's heartbeat timeout (1 min)

    def retry_scheduled() -> bool:
        with engine.lock:
            current = engine.step(run.uid, "Holder-1")
            return current is not None and current.attempt == 2

    eventually(retry_scheduled, what="the attempt to time out", timeout=WAIT)
    clock.advance(2.0)  # past the retry's back-off (1 s); attempt 2 then has its full heartbeat timeout
    flow.probe.wait("attempt", 2, timeout=WAIT)
    result = harness.result(flow_id)
    assert flow.probe.values("attempt") == [1, 2]
    execute_attempt = 1 if method == "wait_for" else 2
    assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, execute_attempt)
    with engine.lock:
        assert not engine.locks and not engine.running


class Beats(Step[str]):
    """Heartbeats once its first gate opens, then returns once its second gate opens."""

    def __init__(self, flow: BeatFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("started")
        await self.flow.gate.block_async()
        await context.heartbeat("checkpoint")
        self.flow.probe.record("beat")
        await self.flow.second.block_async()
        return graceful_complete(context.attempt)


class BeatFlow(NamedFlow[str]):
    def __init__(self, flow_type: str) -> None:
        super().__init__(flow_type)
        self.second = Gate()

    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Beats(self))


def test_a_failed_heartbeat_commit_changes_nothing_in_memory(
        dex: DexFixture, clocked: tuple[EngineServer, ManualClock]) -> None:
    """The heartbeat's commit failed: the attempt has still sent no output (it may be re-delivered)
    and its heartbeat deadline is unchanged."""
    server, _ = clocked
    engine = server.engine
    flow = BeatFlow(dex.flow_type())
    dex.on_close(flow.second.open)
    harness = dex.start(flow, address=server.address, async_worker=True)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "x")
    flow.probe.wait("started")
    with engine.lock:
        run = engine.current_flow(flow_id)
        assert run is not None
        task = engine.running[(run.uid, "Beats-1")]
        heartbeat_deadline = task.heartbeat_deadline
        failing = FailingCommit.install(engine.store)
    try:
        flow.gate.open()
        assert failing.failed.wait(WAIT), "the heartbeat's commit was attempted"
        with engine.lock:
            failing.remove(engine.store)
            assert not task.output_seen, "no output frame was recorded"
            assert task.heartbeat_deadline == heartbeat_deadline
            step = engine.step(run.uid, "Beats-1")
            assert step is not None and not step.output_seen and step.heartbeat is None
    finally:
        with engine.lock:
            failing.remove(engine.store)
    flow.second.open()
    assert harness.result(flow_id).single_output(int) == 1

