"""Durability modes: SYNC is the default; ``FlowConfig(step_durability=ASYNC)`` applies to the
Flow's Steps and a StepOptions method override beats it (as history records); a Step's writes are
committed before the next Step is dispatched; ASYNC Steps retry with shared attempt numbers; the
pull worker target can come from the start-time ``FlowConfig`` instead of the Client default; the
ASYNC local phase drops heartbeat checkpoints and ignores the method timeout (Dex step-options)."""

from __future__ import annotations

import time
from collections.abc import Generator
from datetime import timedelta

from dex import (
    Attribute,
    Client,
    ClientOptions,
    Context,
    FlowConfig,
    FlowStatus,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepDurability,
    StepList,
    StepOptions,
    StepOutput,
    WorkerTarget,
    go_to,
    graceful_complete,
    heartbeat,
    rpc,
)
from dex.dexpb import dex_pb2 as pb

from tests.engine.conftest import DexFixture
from tests.engine.probes import POLICY_SECOND
from tests.engine.harness import NamedFlow, SingleStepFlow

progress = Attribute("Progress", int)


class Plain(Step[int]):
    def __init__(self, flow: DurableFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=5))

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("plain", context.attempt)
        if context.attempt <= input:
            raise RuntimeError(f"attempt {context.attempt} fails")
        progress.set(context, 1)
        return go_to(Pinned, 0)


class Pinned(Step[int]):
    """Overrides durability to SYNC; blocks until the test saw the previous Step's write."""

    def __init__(self, flow: DurableFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_durability=StepDurability.SYNC)

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("pinned-running")
        self.flow.gate.block(context.is_cancellation_requested)
        progress.set(context, 2)
        return graceful_complete(progress.get(context))


class DurableFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Plain(self)).other_steps(Pinned(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(progress)

    @rpc
    def read(self, context: Context) -> RPCResult[int]:
        return RPCResult(progress.get(context))


def durabilities(events: list[pb.FlowHistoryEvent]) -> dict[str, int]:
    """Step execution id -> recorded durability of its completed ``execute``."""
    return {e.step_execute_completed.context.step_execution_id: e.step_execute_completed.context.durability
            for e in events if e.HasField("step_execute_completed")}


def run(dex: DexFixture, failures: int, options: StartFlowOptions) -> tuple[DurableFlow, dict[str, int]]:
    flow = DurableFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, failures, options)
    flow.probe.wait("pinned-running")
    assert harness.client.invoke_rpc(flow.read, flow_id) == 1, "committed before the next Step was dispatched"
    flow.gate.open()
    result = harness.result(flow_id)
    assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 2)
    return flow, durabilities(harness.history(flow_id))


def test_sync_is_the_default_and_writes_commit_before_the_next_step(dex: DexFixture) -> None:
    _, recorded = run(dex, 0, StartFlowOptions())
    assert recorded == {"Plain-1": pb.STEP_DURABILITY_SYNC, "Pinned-1": pb.STEP_DURABILITY_SYNC}


def test_flow_config_async_applies_and_a_method_override_beats_it(dex: DexFixture) -> None:
    flow, recorded = run(dex, 2, StartFlowOptions(config_override=FlowConfig(step_durability=StepDurability.ASYNC)))
    assert recorded == {"Plain-1": pb.STEP_DURABILITY_ASYNC, "Pinned-1": pb.STEP_DURABILITY_SYNC}
    assert flow.probe.values("plain") == [1, 2, 3], "ASYNC local and regular attempts share numbering"


def test_worker_target_from_the_start_time_flow_config(dex: DexFixture) -> None:
    flow = DurableFlow(dex.flow_type())
    harness = dex.start(flow)
    with Client(harness.registry, harness.cache, ClientOptions(server_address=harness.address,
                                                              credential=harness.credential)) as client:
        flow_id = dex.flow_id()
        client.start_flow(flow, flow_id, 0, StartFlowOptions(
            config_override=FlowConfig(worker_target=WorkerTarget(pull=True))))
        flow.probe.wait("pinned-running")
        flow.gate.open()
        assert harness.result(flow_id).single_output(int) == 2


class LocalPhase(Step[str]):
    """ASYNC local phase: attempt 1 checkpoints then fails; attempt 1 of ``slow`` outlives 1 s."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_durability=StepDurability.ASYNC, execute_method_timeout=timedelta(seconds=1),
                           execute_retry=RetryPolicy(maximum_attempts=3))

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        self.flow.probe.record("attempt", (context.attempt, context.has_last_heartbeat_value()))
        if input == "checkpoint" and context.attempt == 1:
            yield heartbeat(5)
            raise RuntimeError("fail after a checkpoint in the local phase")
        if input == "slow" and context.attempt == 1:
            time.sleep(2 * POLICY_SECOND)
        return graceful_complete(context.attempt)


def test_async_local_phase_drops_checkpoints(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), LocalPhase)
    harness, flow_id = dex.start_flow(flow, "checkpoint")
    assert harness.result(flow_id).single_output(int) == 2
    assert flow.probe.values("attempt") == [(1, False), (2, False)], "no checkpoint from the local phase"


def test_async_local_phase_ignores_the_method_timeout(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), LocalPhase)
    harness, flow_id = dex.start_flow(flow, "slow")
    assert harness.result(flow_id).single_output(int) == 1, "a 2 s local attempt with a 1 s method timeout"
    assert flow.probe.values("attempt") == [(1, False)]
