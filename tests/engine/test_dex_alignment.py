"""Behaviour Dex's documents decide, where the engine once differed:

* a Flow timeout with the CANCEL policy cancels the run with no error message (as any cancel);
* a method timeout's failure says ``timeout`` (what a caller matches on);
* a canceled Step method learns of its cancellation only when it records a heartbeat (or writes to
  a Stream), completes or fails ("A Step invocation is canceled only when it completes, fails, or
  records a heartbeat"): a handler that never heartbeats runs to its end and its result is
  discarded, one that heartbeats is interrupted at its next heartbeat, and an ASYNC local-phase
  attempt (a local activity) is interrupted at once;
* ASYNC durability: failed local attempts retry at once, and the regular fallback after the local
  phase starts at once too, sharing the attempt count (no back-off before it);
* a Step task that connected Workers decline while running nothing fails with NO_WORKER_AVAILABLE
  after the dispatch wait, instead of being declined forever;
* "retries of one logical method call reuse its first snapshot": a retry reads the Attributes the
  first attempt read, even if the run's Attributes changed in between (the next method reads the
  new ones).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from queue import SimpleQueue

import grpc
import pytest
from dex import (
    AsyncContext,
    Attribute,
    Channel,
    Context,
    FlowStatus,
    FlowTimeoutPolicy,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepDurability,
    StepExecutionId,
    StepList,
    StepOptions,
    Wait,
    WaitForStepCompletionOptions,
    dead_end,
    go_to,
    graceful_complete,
    rpc,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import EngineTiming, ManualClock
from tests.engine.conftest import DexFixture
from tests.engine.harness import GATE_SECONDS, NamedFlow, SingleStepFlow, eventually, in_thread
from tests.engine.probes import POLICY_SECOND

never = Channel("Never", str)
late = Attribute("Late", str)
WAIT = 10.0


class Parked(Step[str]):
    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return dead_end()


class ParkedFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Parked())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never)


def test_a_cancel_policy_flow_timeout_leaves_no_error_message(dex: DexFixture) -> None:
    flow = ParkedFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "park", StartFlowOptions(
        timeout=timedelta(seconds=1), timeout_policy=FlowTimeoutPolicy.CANCEL))
    result = harness.result(flow_id)
    assert (result.status, result.error_type, result.error_message) == (FlowStatus.CANCELED, None, None)


class Stuck(Step[str]):
    """Blocks past its one-second method timeout on its only attempt."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_method_timeout=timedelta(seconds=1), execute_retry=RetryPolicy(maximum_attempts=1))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.gate.block()  # ignores the cancellation: only the engine's timeout ends the attempt
        return dead_end()


def test_a_method_timeout_failure_says_timeout(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Stuck)
    harness, flow_id = dex.start_flow(flow, "x")
    result = harness.result(flow_id)
    assert result.status is FlowStatus.FAILED
    assert "timeout" in (result.error_message or "").lower()


class Blocking(Step[str]):
    """Runs until the gate opens: its input says whether it heartbeats meanwhile (``heartbeat``)
    and whether it is ASYNC (``local``, so its attempt runs in the local phase)."""

    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1),
                           execute_durability=StepDurability.ASYNC if self.flow.mode == "local" else StepDurability.SYNC)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("started")
        try:
            deadline = time.monotonic() + GATE_SECONDS
            while not self.flow.gate.is_open() and time.monotonic() < deadline:
                if input == "heartbeat":
                    await context.heartbeat()
                await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            self.flow.probe.record("interrupted")
            raise
        self.flow.probe.record("returned")
        late.set(context, "written by a canceled handler")
        return graceful_complete("late")


class CancelFlow(NamedFlow[str]):
    def __init__(self, flow_type: str, mode: str) -> None:
        super().__init__(flow_type)
        self.mode = mode

    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Blocking(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(late)

    @rpc
    def cancel_blocking(self, context: Context) -> RPCResult[bool]:
        return RPCResult(True).with_canceling_steps(Blocking)

    @rpc
    def read_late(self, context: Context) -> RPCResult[str]:
        return RPCResult(late.get(context) or "unset")


@pytest.mark.parametrize("mode", ["quiet", "heartbeat", "local"])
def test_a_canceled_handler_learns_of_it_only_at_a_heartbeat_or_in_the_local_phase(dex: DexFixture, mode: str) -> None:
    flow = CancelFlow(dex.flow_type(), mode)
    harness, flow_id = dex.start_flow(flow, "heartbeat" if mode == "heartbeat" else "quiet", async_worker=True)
    flow.probe.wait("started")
    harness.client.invoke_rpc(flow.cancel_blocking, flow_id)
    harness.client.wait_for_step_completion(flow_id, StepExecutionId("Blocking", 1), WaitForStepCompletionOptions(
        request_timeout=timedelta(seconds=WAIT)))
    if mode == "quiet":
        flow.gate.open()
        flow.probe.wait("returned")
        assert "interrupted" not in flow.probe.names(), "a handler that never heartbeats runs to its end"
    else:
        flow.probe.wait("interrupted")
        flow.gate.open()
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING, "the late result is discarded"
    assert harness.client.invoke_rpc(flow.read_late, flow_id) == "unset"
    assert "Blocking-1" not in harness.completed_executes(flow_id)


class FailsThrice(Step[str]):
    """ASYNC; its first three attempts (the local phase) and the fourth (the regular fallback) fail."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_durability=StepDurability.ASYNC)

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("attempt", context.attempt)
        if context.attempt <= 4:
            raise RuntimeError(f"attempt {context.attempt} fails")
        return graceful_complete(context.attempt)


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[EngineServer, ManualClock]]:
    clock = ManualClock(start=time.time())
    server = EngineServer(tmp_path / "clocked.db", clock=clock)
    server.start()
    try:
        yield server, clock
    finally:
        server.stop()


def test_the_async_fallback_starts_at_once_and_later_retries_back_off(
        dex: DexFixture, clocked: tuple[EngineServer, ManualClock]) -> None:
    server, clock = clocked
    flow = SingleStepFlow(dex.flow_type(), FailsThrice)
    harness = dex.start(flow, address=server.address)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "x")
    assert flow.probe.wait("attempt", 4, timeout=WAIT) == [1, 2, 3, 4], \
        "three local attempts and the regular fallback ran without the clock moving"

    def fifth_scheduled() -> bool:
        with server.engine.lock:
            run = server.engine.current_flow(flow_id)
            step = server.engine.step(run.uid, "FailsThrice-1") if run is not None else None
            return step is not None and step.attempt == 5

    eventually(fifth_scheduled, what="the fallback's failure to be committed", timeout=WAIT)
    clock.advance(2.0 ** 3)  # the fifth attempt continues the back-off at the cumulative attempt (4)
    result = harness.result(flow_id)
    assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 5)


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[EngineServer]:
    server = EngineServer(tmp_path / "quick.db", timing=EngineTiming(dispatch_wait=0.5, policy_second=POLICY_SECOND))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_step_every_idle_worker_declines_fails_with_no_worker_available(quick: EngineServer) -> None:
    """A raw pull Worker that runs nothing and declines every task (as a stopping Worker does)."""
    requests: SimpleQueue[pb.PollWorkerTaskRequest | None] = SimpleQueue()
    requests.put(pb.PollWorkerTaskRequest(register=pb.PollWorkerTaskRegister(queue="Declined", app_worker_id="w")))

    def outgoing() -> Iterator[pb.PollWorkerTaskRequest]:
        while (request := requests.get()) is not None:
            yield request

    declines: list[str] = []

    def decline_everything(responses: Iterator[pb.PollWorkerTaskResponse]) -> None:
        try:
            for response in responses:
                if response.HasField("task"):
                    declines.append(response.task.task_id)
                    requests.put(pb.PollWorkerTaskRequest(reject=pb.PollWorkerTaskReject(
                        task_id=response.task.task_id, reason=pb.POLL_WORKER_TASK_REJECT_REASON_NO_CAPACITY)))
        except grpc.RpcError:
            pass  # cancelled below

    with grpc.insecure_channel(quick.address) as channel:
        service = dex_pb2_grpc.FlowServiceStub(channel)
        worker = dex_pb2_grpc.WorkerTaskServiceStub(channel)
        responses = worker.PollWorkerTask(outgoing(), timeout=WAIT)
        try:
            assert next(responses).HasField("registered")
            declining = in_thread(lambda: decline_everything(responses))
            service.StartFlow(pb.StartFlowRequest(
                flow_id="declined", flow_type="Declined", start_step_type="S", step_input=pb.Value(string_value="x"),
                step_options=pb.StepOptions(skip_wait_for=True,
                                            execute_retry_policy=pb.RetryPolicy(maximum_attempts=1))), timeout=WAIT)
            result = service.WaitForFlow(
                pb.WaitForFlowRequest(flow_id="declined", wait_time_seconds=int(WAIT)), timeout=WAIT + 5)
        finally:
            requests.put(None)
            responses.cancel()
        declining(WAIT)
    assert declines, "the Worker was offered the task"
    assert result.flow_status == pb.FLOW_STATUS_FAILED
    assert "NO_WORKER_AVAILABLE" in result.error_message


level = Attribute("Level", int)


class ReadsLevel(Step[str]):
    """Records the Level it reads; its first attempt fails."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("level", (context.attempt, level.get(context)))
        if context.attempt == 1:
            raise RuntimeError("the first attempt fails")
        return go_to(ReadsAgain, input)


class ReadsAgain(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(level.get(context))


class LevelFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(ReadsLevel(self)).other_steps(ReadsAgain(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(level)


def test_a_retry_reuses_its_first_attempts_snapshot(dex: DexFixture, clocked: tuple[EngineServer, ManualClock]) -> None:
    server, clock = clocked
    flow = LevelFlow(dex.flow_type())
    harness = dex.start(flow, address=server.address)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "x", StartFlowOptions().with_attribute(level, 1))

    def retry_scheduled() -> bool:
        with server.engine.lock:
            run = server.engine.current_flow(flow_id)
            step = server.engine.step(run.uid, "ReadsLevel-1") if run is not None else None
            return step is not None and step.attempt == 2

    eventually(retry_scheduled, what="the first attempt's failure to be committed", timeout=WAIT)
    with grpc.insecure_channel(server.address) as channel:
        dex_pb2_grpc.FlowServiceStub(channel).SetAttributes(
            pb.SetAttributesRequest(flow_id=flow_id, attributes=[pb.AttributeWrite(
                key="Level", value=pb.Value(int_value=2))]), timeout=WAIT)
    clock.advance(2.0)  # past the retry's back-off (1 s)
    assert harness.result(flow_id).single_output(int) == 2, "the next method reads the new value"
    assert flow.probe.values("level") == [(1, 1), (2, 1)], "the retry read the first attempt's snapshot"

