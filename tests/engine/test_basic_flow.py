"""Basic Flows: start input, Step chains and loops, execution ids ``<StepType>-<n>``, fan-out,
dead ends, graceful and forced completion, forced failure, already-started and id reuse, and the
same shapes on ``AsyncWorker`` and ``AsyncClient``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from dex import (
    AsyncClient,
    AsyncContext,
    Channel,
    ClientOptions,
    Context,
    FlowAlreadyStartedError,
    FlowErrorType,
    FlowStatus,
    IdReusePolicy,
    LongPollTimeoutError,
    PersistenceSchema,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    Wait,
    WorkerTarget,
    dead_end,
    force_complete,
    force_fail,
    go_to,
    go_to_many,
    graceful_complete,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import FLOW_WAIT, LoopThread, NamedFlow


@dataclass(frozen=True)
class Countdown:
    remaining: int
    value: int


@dataclass(frozen=True)
class Seen:
    step_execution_id: str
    from_step_execution_id: str
    attempt: int


def seen(context: Context) -> Seen:
    return Seen(context.step_execution_id, context.from_step_execution_id, context.attempt)


class Begin(Step[int]):
    def __init__(self, flow: ChainFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("seen", seen(context))
        return go_to(CountDown, Countdown(remaining=2, value=input))


class CountDown(Step[Countdown]):
    def __init__(self, flow: ChainFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: Countdown) -> StepDecision:
        self.flow.probe.record("seen", seen(context))
        if input.remaining == 0:
            return go_to(Double, input.value)
        return go_to(CountDown, Countdown(remaining=input.remaining - 1, value=input.value))


class Double(Step[int]):
    def __init__(self, flow: ChainFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("seen", seen(context))
        return graceful_complete(input * 2)


class ChainFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Begin(self)).other_steps(CountDown(self), Double(self))


def test_chain_and_loop_complete_with_output_and_execution_ids(dex: DexFixture) -> None:
    flow = ChainFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    run_id = harness.client.start_flow(flow, flow_id, 21)
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(int) == 42
    assert result.completions[0].step_execution_id == "Double-1"
    assert flow.probe.values("seen") == [
        Seen("Begin-1", "", 1),
        Seen("CountDown-1", "Begin-1", 1),
        Seen("CountDown-2", "CountDown-1", 1),
        Seen("CountDown-3", "CountDown-2", 1),
        Seen("Double-1", "CountDown-3", 1),
    ]
    info = harness.client.describe_flow(flow_id)
    assert (info.flow_id, info.run_id, info.flow_type, info.status) == (
        flow_id, run_id, flow.get_flow_type(), FlowStatus.COMPLETED)


class Spread(Step[list[str]]):
    def __init__(self, flow: FanFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: list[str]) -> StepDecision:
        return go_to_many(*[StepMovement.of(Leaf, item) for item in input])


class Leaf(Step[str]):
    def __init__(self, flow: FanFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("leaf", (context.step_execution_id, context.from_step_execution_id, input))
        return graceful_complete(f"leaf:{input}")


class FanFlow(NamedFlow[list[str]]):
    def get_steps(self) -> StepList[list[str]]:
        return StepList.start_step(Spread(self)).other_steps(Leaf(self))


def test_go_to_many_runs_every_movement_and_collects_every_output(dex: DexFixture) -> None:
    flow = FanFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, ["a", "b", "c"])
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert sorted(c.decode(str) for c in result.completions) == ["leaf:a", "leaf:b", "leaf:c"]
    leaves = flow.probe.values("leaf")
    assert sorted(str(leaf[0]) for leaf in leaves if isinstance(leaf, tuple)) == ["Leaf-1", "Leaf-2", "Leaf-3"]
    assert {leaf[1] for leaf in leaves if isinstance(leaf, tuple)} == {"Spread-1"}
    assert sorted(str(leaf[2]) for leaf in leaves if isinstance(leaf, tuple)) == ["a", "b", "c"]


never = Channel("Never", str)


class Idle(Step[str]):
    def __init__(self, flow: OpenFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("idle", input)
        return dead_end()


class Finish(Step[str]):
    def __init__(self, flow: OpenFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("finish", context.from_step_execution_id)
        return graceful_complete(f"finished:{input}")


class OpenFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Idle(self)).other_steps(Finish(self))

    @rpc
    def finish(self, context: Context, input: str) -> RPCResult[bool]:
        return RPCResult(True, next_steps=(StepMovement.of(Finish, input),))


def test_dead_end_keeps_the_flow_open_until_an_rpc_moves_it(dex: DexFixture) -> None:
    flow = OpenFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "x")
    flow.probe.wait("idle")
    with pytest.raises(LongPollTimeoutError):
        harness.client.wait_for_flow(flow_id, timeout=timedelta(seconds=1))
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING
    assert harness.client.invoke_rpc(flow.finish, flow_id, "bye") is True
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "finished:bye"
    assert flow.probe.values("finish") == [""]


class Fork(Step[str]):
    def __init__(self, flow: CompletionFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to_many(StepMovement.of(Slow, input), StepMovement.of(Quick, input))


class Slow(Step[str]):
    def __init__(self, flow: CompletionFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("slow-started")
        if input == "wait-on-channel":
            return go_to(Parked, input)
        self.flow.gate.block(context.is_cancellation_requested)
        self.flow.probe.record("slow-done")
        return dead_end()


class Parked(Step[str]):
    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("parked-ran")
        return dead_end()


class Quick(Step[str]):
    def __init__(self, flow: CompletionFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("quick-done")
        if input == "fail":
            return force_fail("quick decided to fail")
        if input == "wait-on-channel":
            return force_complete("forced")
        return graceful_complete("quick")


class CompletionFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Fork(self)).other_steps(Slow(self), Quick(self), Parked(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never)


def test_graceful_complete_waits_for_the_other_active_steps(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "graceful")
    flow.probe.wait("quick-done")
    flow.probe.wait("slow-started")
    with pytest.raises(LongPollTimeoutError):
        harness.client.wait_for_flow(flow_id, timeout=timedelta(seconds=1))
    flow.gate.open()
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "quick"
    assert flow.probe.values("slow-done") == [None]


def test_force_complete_closes_the_flow_despite_a_waiting_step(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "wait-on-channel")
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "forced"
    assert flow.probe.values("parked-ran") == []


def test_force_fail_fails_the_flow_with_the_reason(dex: DexFixture) -> None:
    flow = CompletionFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, "fail")
    result = harness.result(flow_id)
    assert result.status is FlowStatus.FAILED
    assert result.error_type is FlowErrorType.STEP_DECISION_FAILED
    assert "quick decided to fail" in (result.error_message or "")


def test_already_started_and_id_reuse_policies(dex: DexFixture) -> None:
    flow = OpenFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    first_run = harness.client.start_flow(flow, flow_id, "one")
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "two")
    harness.client.start_flow(flow, flow_id, "three", StartFlowOptions(ignore_already_started=True))
    assert harness.client.describe_flow(flow_id).run_id == first_run
    harness.client.invoke_rpc(flow.finish, flow_id, "done")
    assert harness.result(flow_id).status is FlowStatus.COMPLETED
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "again")
    with pytest.raises(FlowAlreadyStartedError):
        harness.client.start_flow(flow, flow_id, "again", StartFlowOptions(
            id_reuse_policy=IdReusePolicy.ALLOW_IF_PREVIOUS_FAILED))
    second_run = harness.client.start_flow(flow, flow_id, "again", StartFlowOptions(
        id_reuse_policy=IdReusePolicy.ALLOW_IF_NOT_RUNNING))
    assert second_run != first_run
    info = harness.client.describe_flow(flow_id)
    assert (info.run_id, info.status) == (second_run, FlowStatus.RUNNING)
    third_run = harness.client.start_flow(flow, flow_id, "replace", StartFlowOptions(
        id_reuse_policy=IdReusePolicy.ALLOW_TERMINATE_IF_RUNNING))
    assert third_run not in (first_run, second_run)
    assert harness.client.describe_flow(flow_id).run_id == third_run


class AsyncBegin(Step[int]):
    def __init__(self, flow: AsyncChainFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("seen", seen(context))
        return go_to(AsyncEnd, input + 1)


class AsyncEnd(Step[int]):
    def __init__(self, flow: AsyncChainFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record("seen", seen(context))
        return graceful_complete(input * 10)


class AsyncChainFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(AsyncBegin(self)).other_steps(AsyncEnd(self))


def test_async_worker_and_async_client_run_a_chain(dex: DexFixture) -> None:
    flow = AsyncChainFlow(dex.flow_type())
    harness = dex.start(flow, async_worker=True)
    flow_id = dex.flow_id()
    loop = LoopThread()
    try:
        async def scenario() -> int:
            async with AsyncClient(harness.registry, harness.cache, ClientOptions(
                    server_address=harness.address, worker_target=WorkerTarget(pull=True),
                    credential=harness.credential)) as client:
                await client.start_flow(flow, flow_id, 4)
                result = await client.wait_for_flow(flow_id, timeout=FLOW_WAIT)
                assert result.status is FlowStatus.COMPLETED
                return result.single_output(int)

        assert loop.call(scenario()) == 50
    finally:
        loop.close()
    assert flow.probe.values("seen") == [Seen("AsyncBegin-1", "", 1), Seen("AsyncEnd-1", "AsyncBegin-1", 1)]


class Split(Step[str]):
    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return go_to_many(StepMovement.of(Parked, "p"), StepMovement.of(Canceller, input))


class Canceller(Step[str]):
    """Completes gracefully while cancelling the parked sibling (Flow-wide or siblings only)."""

    def __init__(self, flow: CancelFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        decision = graceful_complete(f"cancelled by {context.step_execution_id}")
        if input == "siblings":
            return decision.with_canceling_sibling_steps(Parked)
        return decision.with_canceling_steps(Parked)


class CancelFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Split(self)).other_steps(Parked(self), Canceller(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(never)


@pytest.mark.parametrize("scope", ["flow-wide", "siblings"])
def test_a_decision_cancels_a_waiting_step_so_graceful_completion_can_close(dex: DexFixture, scope: str) -> None:
    flow = CancelFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, scope)
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "cancelled by Canceller-1")
    assert flow.probe.values("parked-ran") == []


def test_concurrent_flows_complete_independently(dex: DexFixture) -> None:
    flow = ChainFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_ids = {value: dex.flow_id(f"c{value}") for value in range(12)}
    for value, flow_id in flow_ids.items():
        harness.client.start_flow(flow, flow_id, value)
    for value, flow_id in flow_ids.items():
        result = harness.result(flow_id)
        assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 2 * value)
    ids = [s.step_execution_id for s in flow.probe.values("seen") if isinstance(s, Seen)]
    assert sorted(ids) == sorted(["Begin-1", "CountDown-1", "CountDown-2", "CountDown-3", "Double-1"] * 12)


def test_a_flow_started_before_any_worker_runs_once_one_registers(dex: DexFixture) -> None:
    flow = ChainFlow(dex.flow_type())
    client = dex.client(flow)
    flow_id = dex.flow_id()
    client.start_flow(flow, flow_id, 5)
    assert client.describe_flow(flow_id).status is FlowStatus.RUNNING
    harness = dex.start(flow)
    result = harness.result(flow_id)
    assert (result.status, result.single_output(int)) == (FlowStatus.COMPLETED, 10)
    assert [s.attempt for s in flow.probe.values("seen") if isinstance(s, Seen)] == [1, 1, 1, 1, 1]
