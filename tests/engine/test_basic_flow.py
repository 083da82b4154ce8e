"""Basic Flows: start input, Step chains and loops, execution ids ``<StepType>-<n>``, fan-out with
``go_to_many``, many Flows at once, a Flow started before any Worker registered, and the same shapes
on ``AsyncWorker`` and ``AsyncClient``. (Completion, dead ends and id reuse: test_flow_completion.)"""

from __future__ import annotations

from dataclasses import dataclass

from dex import (
    AsyncClient,
    AsyncContext,
    ClientOptions,
    Context,
    FlowStatus,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    WorkerTarget,
    go_to,
    go_to_many,
    graceful_complete,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import FLOW_WAIT, LoopThread, NamedFlow


@dataclass(frozen=True, slots=True, kw_only=True)
class Countdown:
    remaining: int
    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    step_execution_id: str
    from_step_execution_id: str
    attempt: int


def seen(context: Context) -> Seen:
    return Seen(step_execution_id=context.step_execution_id,
                from_step_execution_id=context.from_step_execution_id, attempt=context.attempt)


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
        Seen(step_execution_id="Begin-1", from_step_execution_id="", attempt=1),
        Seen(step_execution_id="CountDown-1", from_step_execution_id="Begin-1", attempt=1),
        Seen(step_execution_id="CountDown-2", from_step_execution_id="CountDown-1", attempt=1),
        Seen(step_execution_id="CountDown-3", from_step_execution_id="CountDown-2", attempt=1),
        Seen(step_execution_id="Double-1", from_step_execution_id="CountDown-3", attempt=1),
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
    harness, flow_id = dex.start_flow(flow, ["a", "b", "c"])
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert sorted(c.decode(str) for c in result.completions) == ["leaf:a", "leaf:b", "leaf:c"]
    leaves = flow.probe.values("leaf")
    assert sorted(str(leaf[0]) for leaf in leaves if isinstance(leaf, tuple)) == ["Leaf-1", "Leaf-2", "Leaf-3"]
    assert {leaf[1] for leaf in leaves if isinstance(leaf, tuple)} == {"Spread-1"}
    assert sorted(str(leaf[2]) for leaf in leaves if isinstance(leaf, tuple)) == ["a", "b", "c"]



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
    assert flow.probe.values("seen") == [
        Seen(step_execution_id="AsyncBegin-1", from_step_execution_id="", attempt=1),
        Seen(step_execution_id="AsyncEnd-1", from_step_execution_id="AsyncBegin-1", attempt=1)]


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
