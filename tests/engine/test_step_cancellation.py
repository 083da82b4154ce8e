"""A Step canceled by another Step's decision while it runs with ASYNC durability, as Dex does it:

* in the local phase the handler is interrupted at once (an async handler gets ``CancelledError``
  and its context reports the cancellation), it ran once, its failure route is not taken, and what
  it returns after the interruption (a decision, an Attribute write) is discarded;
* an attempt still running when the local phase ends is not failed and not started again: it falls
  back in place to a regular attempt, and a Step with a heartbeat timeout of its own is still told
  of a later cancellation at once (upstream's "local timeout fallback").

The canceling Step waits for a message the test publishes, so the order of events is decided by
the test, not by time; the phase's end is reached by moving the engine's clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from dex import (
    AsyncContext,
    Attribute,
    Channel,
    Context,
    FlowStatus,
    PersistenceSchema,
    RPCResult,
    Step,
    StepDecision,
    StepDurability,
    StepExecutionId,
    StepList,
    StepMovement,
    StepOptions,
    Wait,
    WaitForStepCompletionOptions,
    force_fail,
    go_to,
    go_to_many,
    graceful_complete,
    rpc,
)

from dex_agents.engine import policy
from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import ManualClock
from tests.engine.conftest import DexFixture
from tests.engine.harness import GATE_SECONDS, Harness, NamedFlow, eventually

go_ahead = Channel("GoAhead", str)
finish_now = Channel("FinishNow", str)
written_late = Attribute("WrittenLate", str)
WAIT = 20.0


class Begin(Step[str]):
    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to_many(StepMovement.of(Busy, input), StepMovement.of(Canceller, input))


class Busy(Step[str]):
    """ASYNC; runs until the gate opens, recording an interruption; after one it still returns a
    decision and writes an Attribute, which the engine must discard."""

    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        beat = timedelta(seconds=2) if self.flow.with_heartbeat_timeout else None
        return StepOptions(execute_durability=StepDurability.ASYNC, heartbeat_timeout=beat,
                           execute_method_timeout=timedelta(seconds=15)).on_execute_failure_proceed_to(Fallback)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("started", context.attempt)
        deadline = time.monotonic() + GATE_SECONDS
        try:
            while not self.flow.gate.is_open() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            self.flow.probe.record("interrupted", context.is_cancellation_requested())
        written_late.set(context, "after the cancellation")
        return go_to(Fallback, input)


class Fallback(Step[str]):
    """The failure route of Busy; taking it is a defect here."""

    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("failure route")
        return force_fail("the canceled Step's failure route ran")


class Canceller(Step[str]):
    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(go_ahead.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to(Finish, input).with_canceling_steps(Busy)


class Finish(Step[str]):
    """Keeps the run open until the test has seen the canceled Step complete (then completes it)."""

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(finish_now.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(input)


class CancelFlow(NamedFlow[str]):
    def __init__(self, flow_type: str, *, with_heartbeat_timeout: bool) -> None:
        super().__init__(flow_type)
        self.with_heartbeat_timeout = with_heartbeat_timeout

    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Begin()).other_steps(Busy(self), Fallback(self), Canceller(), Finish())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(go_ahead, finish_now, written_late)

    @rpc
    def cancel_now(self, context: Context) -> RPCResult[bool]:
        go_ahead.publish(context, "go")
        return RPCResult(True)

    @rpc
    def finish(self, context: Context) -> RPCResult[bool]:
        finish_now.publish(context, "done")
        return RPCResult(True)

    @rpc
    def late_value(self, context: Context) -> RPCResult[str]:
        return RPCResult(written_late.get(context) or "unset")


def _check_canceled_once(flow: CancelFlow, harness: Harness, flow_id: str, label: str) -> None:
    harness.client.invoke_rpc(flow.cancel_now, flow_id)
    harness.client.wait_for_step_completion(flow_id, StepExecutionId("Busy", 1), WaitForStepCompletionOptions(
        request_timeout=timedelta(seconds=WAIT)))
    harness.client.invoke_rpc(flow.finish, flow_id)
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, label)
    assert flow.probe.wait("interrupted", timeout=WAIT) == [True], "interrupted, and its context says so"
    assert flow.probe.values("started") == [1], "the canceled Step ran once"
    assert "failure route" not in flow.probe.names()
    assert "Busy-1" not in harness.completed_executes(flow_id), "what it returned afterwards is discarded"
    assert harness.client.invoke_rpc(flow.late_value, flow_id) == "unset", "its late Attribute write too"


def test_a_local_phase_attempt_is_interrupted_at_once(dex: DexFixture) -> None:
    flow = CancelFlow(dex.flow_type(), with_heartbeat_timeout=False)
    harness, flow_id = dex.start_flow(flow, "local execute", async_worker=True)
    flow.probe.wait("started")
    _check_canceled_once(flow, harness, flow_id, "local execute")
    flow.gate.open()
    assert harness.client.describe_flow(flow_id).status is FlowStatus.COMPLETED


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[EngineServer, ManualClock]]:
    clock = ManualClock(start=time.time())
    server = EngineServer(tmp_path / "clocked.db", clock=clock)
    server.start()
    try:
        yield server, clock
    finally:
        server.stop()


def _busy_task_is_regular(server: EngineServer, flow_id: str) -> bool:
    with server.engine.lock:
        run = server.engine.current_flow(flow_id)
        task = server.engine.running.get((run.uid, "Busy-1")) if run is not None else None
        return task is not None and not task.local_phase and task.attempt == 1


def _busy_attempt(server: EngineServer, flow_id: str) -> int:
    with server.engine.lock:
        run = server.engine.current_flow(flow_id)
        step = server.engine.step(run.uid, "Busy-1") if run is not None else None
        return step.attempt if step is not None else 0


def _past_the_local_phase(dex: DexFixture, server: EngineServer, clock: ManualClock,
                          label: str) -> tuple[CancelFlow, Harness, str]:
    """A Flow (Busy with a heartbeat timeout of its own) on the clocked engine, started with ``label``,
    whose first Busy attempt has run past the local phase and is a regular attempt now."""
    flow = CancelFlow(dex.flow_type(), with_heartbeat_timeout=True)
    harness = dex.start(flow, async_worker=True, address=server.address)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, label)
    flow.probe.wait("started")
    clock.advance(policy.ASYNC_LOCAL_SECONDS + 1)
    eventually(lambda: _busy_task_is_regular(server, flow_id), what="the local phase's end", timeout=WAIT)
    return flow, harness, flow_id


def test_an_attempt_past_the_local_phase_falls_back_in_place_and_is_still_canceled(
        dex: DexFixture, clocked: tuple[EngineServer, ManualClock]) -> None:
    server, clock = clocked
    flow, harness, flow_id = _past_the_local_phase(dex, server, clock, "local timeout fallback")
    assert flow.probe.values("started") == [1], "the fallback goes on with the running invocation"
    assert "interrupted" not in flow.probe.names()
    _check_canceled_once(flow, harness, flow_id, "local timeout fallback")


def test_after_the_fallback_the_regular_heartbeat_timeout_applies(
        dex: DexFixture, clocked: tuple[EngineServer, ManualClock]) -> None:
    server, clock = clocked
    flow, _, flow_id = _past_the_local_phase(dex, server, clock, "quiet")
    clock.advance(policy.MINIMUM_HEARTBEAT_TIMEOUT + 1)
    assert flow.probe.wait("interrupted", timeout=WAIT) == [True], "timed out: its Worker is told"
    eventually(lambda: _busy_attempt(server, flow_id) == 2, what="the timeout's commit", timeout=WAIT)
    clock.advance(policy.DEFAULT_INITIAL_INTERVAL + 1)  # a regular retry backs off
    assert flow.probe.wait("started", 2, timeout=WAIT) == [1, 2], "the timed-out attempt retries"
