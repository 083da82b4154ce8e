"""Durability across the engine's own death: the engine (a child process) is SIGKILLed and
restarted on the same database and port. Committed Flows go on: Attributes and queued Channel
messages survive, a waiting Timer is re-armed and fires, a task in flight is re-dispatched, a
waiting Step still waits, a retrying Step retries, busy Flows finish with every Step completed
exactly once in history, and the pull Worker reconnects by itself. Needs the local engine (skipped only with a real Dex)."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from pathlib import Path

from dex import (
    Attribute,
    Channel,
    Context,
    FlowStatus,
    PersistenceSchema,
    RPCResult,
    RetryPolicy,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    Timer,
    Wait,
    go_to,
    graceful_complete,
    rpc,
)

from tests.engine.conftest import DexFixture, EngineProcess, launch_api, require_local_engine
from tests.engine.harness import FLOW_WAIT, NamedFlow, eventually

stage = Attribute("Stage", str)
resume = Channel("Resume", str)


class Begin(Step[str]):
    def __init__(self, flow: RestartFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        stage.set(context, "started")
        if input == "gated":
            return go_to(Gated, input)
        if input == "hold":
            return go_to(Hold, "")
        if input == "flaky":
            return go_to(Flaky, input)
        if input == "loop":
            return go_to(Loop, 40)
        return go_to(Nap, 2)


class Nap(Step[int]):
    def __init__(self, flow: RestartFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(Timer.by_duration(timedelta(seconds=input)))

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("nap-fired", context.has_timer_fired())
        stage.set(context, f"{stage.get(context)}>napped")
        return go_to(Hold, "")


class Hold(Step[str]):
    def __init__(self, flow: RestartFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(resume.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(f"{stage.get(context)}>{resume.results(context)[0]}")


class Gated(Step[str]):
    """Blocks its first run on the gate; the engine dies meanwhile and re-dispatches the task."""

    def __init__(self, flow: RestartFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("gated-run", context.attempt)
        if len(self.flow.probe.values("gated-run")) == 1:
            self.flow.gate.block(context.is_cancellation_requested)
        return graceful_complete(f"{stage.get(context)}>gated-done")


class Flaky(Step[str]):
    """Fails attempt 1 with a 1 s back-off; the engine dies around that failure."""

    def __init__(self, flow: RestartFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("flaky-run", context.attempt)
        if len(self.flow.probe.values("flaky-run")) == 1:
            raise RuntimeError("first run fails")
        return graceful_complete(f"{stage.get(context)}>flaky-done")


class Loop(Step[int]):
    def __init__(self, flow: RestartFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("loop", context.flow_id)
        return go_to(Loop, input - 1) if input > 0 else graceful_complete(context.step_execution_id)


class RestartFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Begin(self)).other_steps(Nap(self), Hold(self), Gated(self), Flaky(self),
                                                            Loop(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(stage, resume)

    @rpc
    def send(self, context: Context, input: str) -> RPCResult[bool]:
        resume.publish(context, input)
        return RPCResult(True)


def start_process(dex: DexFixture, db_path: Path, port: int = 0) -> EngineProcess:
    process = launch_api().EngineProcess.start(db_path, port=port, log_path=dex.tmp_path / "engine.log")

    def stop() -> None:
        with contextlib.suppress(Exception):
            process.stop()

    dex.on_close(stop)
    return process


def test_flows_go_on_after_engine_sigkill_and_restart(dex: DexFixture) -> None:
    require_local_engine(dex.engine, "killing and restarting the engine")
    db_path = dex.tmp_path / "engine.sqlite3"
    engine = start_process(dex, db_path)
    flow = RestartFlow(dex.flow_type())
    harness = dex.start(flow, address=engine.address)
    gated_id, timer_id = dex.flow_id("gated"), dex.flow_id("timer")
    harness.client.start_flow(flow, gated_id, "gated")
    flow.probe.wait("gated-run")
    harness.client.start_flow(flow, timer_id, "timer")
    assert harness.client.invoke_rpc(flow.send, timer_id, "resumed") is True
    eventually(lambda: any(e.HasField("step_wait_for_completed")
                           and e.step_wait_for_completed.context.step_execution_id == "Nap-1"
                           for e in harness.history(timer_id)), what="Nap-1's Timer to be armed", timeout=10)
    engine.kill()
    flow.probe.record("engine-killed")
    restarted = start_process(dex, db_path, port=engine.port)
    assert restarted.address == engine.address
    flow.gate.open()
    timer_result = harness.client.wait_for_flow(timer_id, timeout=FLOW_WAIT)
    assert (timer_result.status, timer_result.single_output(str)) == (
        FlowStatus.COMPLETED, "started>napped>resumed")
    names = flow.probe.names()
    assert names.index("nap-fired") > names.index("engine-killed"), "the Timer fired after the restart"
    gated_result = harness.client.wait_for_flow(gated_id, timeout=FLOW_WAIT)
    assert (gated_result.status, gated_result.single_output(str)) == (FlowStatus.COMPLETED, "started>gated-done")
    assert len(flow.probe.values("gated-run")) == 2, "the in-flight task was dispatched again"
    assert harness.client.describe_flow(timer_id).status is FlowStatus.COMPLETED


def test_waiting_retrying_and_busy_flows_recover_exactly_once(dex: DexFixture) -> None:
    require_local_engine(dex.engine, "killing and restarting the engine")
    db_path = dex.tmp_path / "engine.sqlite3"
    engine = start_process(dex, db_path)
    flow = RestartFlow(dex.flow_type())
    harness = dex.start(flow, address=engine.address)
    waiting_id, flaky_id = dex.flow_id("waiting"), dex.flow_id("flaky")
    loop_ids = [dex.flow_id(f"loop{n}") for n in range(4)]
    harness.client.start_flow(flow, waiting_id, "hold")
    eventually(lambda: any(e.HasField("step_wait_for_completed") for e in harness.history(waiting_id)),
               what="Hold-1 waiting", timeout=10)
    for loop_id in loop_ids:
        harness.client.start_flow(flow, loop_id, "loop")
    harness.client.start_flow(flow, flaky_id, "flaky")
    flow.probe.wait("flaky-run")
    flow.probe.wait("loop", 20)
    engine.kill()
    start_process(dex, db_path, port=engine.port)
    assert harness.client.invoke_rpc(flow.send, waiting_id, "late") is True
    waiting = harness.client.wait_for_flow(waiting_id, timeout=FLOW_WAIT)
    assert (waiting.status, waiting.single_output(str)) == (FlowStatus.COMPLETED, "started>late")
    flaky = harness.client.wait_for_flow(flaky_id, timeout=FLOW_WAIT)
    assert (flaky.status, flaky.single_output(str)) == (FlowStatus.COMPLETED, "started>flaky-done")
    runs = flow.probe.values("flaky-run")
    assert runs[0] == 1 and runs[1] in (1, 2), "attempt 1 again if its failure was not committed, else 2"
    for loop_id in loop_ids:
        result = harness.client.wait_for_flow(loop_id, timeout=FLOW_WAIT)
        assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "Loop-41")
        completed = harness.completed_executes(loop_id)
        assert completed == ["Begin-1"] + [f"Loop-{n}" for n in range(1, 42)], "each Step completed exactly once"
