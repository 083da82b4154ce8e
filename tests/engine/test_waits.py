"""Combined waits: ``any_of`` picks the first ready condition in Dex's canonical order (Timers,
then Channels, argument order within a kind) and consumes only the winner's messages; ``all_of``
needs every condition; ``any_combination_of`` consumes only the chosen combination; and
``skip_immediately`` runs ``execute`` at once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from dex import (
    AsyncContext,
    Channel,
    Client,
    ConditionCombination,
    Context,
    PersistenceSchema,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    Timer,
    Wait,
    dead_end,
    go_to,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually

ch_a = Channel("A", str)
ch_b = Channel("B", str)
ch_c = Channel("C", str)
go = Channel("Go", str)
HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    timer: bool
    a: list[str]
    b: list[str]
    c: list[str]


def wait_for_mode(mode: str) -> Wait:
    match mode:
        case "timer-or-a":
            return Wait.any_of(Timer.by_duration(HOUR), ch_a.for_one())
        case "b-or-a":
            return Wait.any_of(ch_b.for_one(), ch_a.for_one())
        case "a-or-zero-timer":
            return Wait.any_of(ch_a.for_one(), Timer.by_duration(timedelta(0)))
        case "a-and-2b":
            return Wait.all_of(ch_a.for_one(), ch_b.for_n(2))
        case "ab-or-c":
            return Wait.any_combination_of(
                ConditionCombination.of(ch_a.for_one(condition_id="a"), ch_b.for_one(condition_id="b")),
                ConditionCombination.of(ch_c.for_one(condition_id="c")))
        case "skip":
            return Wait.skip_immediately()
        case _:
            raise ValueError(mode)


def outcome(context: Context) -> Outcome:
    return Outcome(timer=context.has_timer_fired(), a=list(ch_a.results(context)), b=list(ch_b.results(context)),
                   c=list(ch_c.results(context)))


class Hold(Step[list[str]]):
    """Parks until ``Go`` so the test can queue messages first, then runs each mode in turn."""

    def __init__(self, flow: WaitFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: list[str]) -> Wait:
        return Wait.until(go.for_one())

    def execute(self, context: Context, input: list[str]) -> StepDecision:
        return go_to(Await, input)


class Await(Step[list[str]]):
    def __init__(self, flow: WaitFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: list[str]) -> Wait:
        return wait_for_mode(input[0])

    def execute(self, context: Context, input: list[str]) -> StepDecision:
        self.flow.probe.record(input[0], outcome(context))
        if len(input) > 1:
            return go_to(Await, input[1:])
        return dead_end()


class WaitFlow(NamedFlow[list[str]]):
    def get_steps(self) -> StepList[list[str]]:
        return StepList.start_step(Hold(self)).other_steps(Await(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(ch_a, ch_b, ch_c, go)

    @rpc
    def send(self, context: Context, input: list[str]) -> RPCResult[list[int]]:
        channels = {"a": ch_a, "b": ch_b, "c": ch_c, "go": go}
        for entry in input:
            name, value = entry.split("=")
            channels[name].publish(context, value)
        return RPCResult(self.sizes(context))

    @rpc
    def queued(self, context: Context) -> RPCResult[list[int]]:
        return RPCResult(self.sizes(context))

    @staticmethod
    def sizes(context: Context) -> list[int]:
        return [ch_a.size(context), ch_b.size(context), ch_c.size(context)]


def start(dex: DexFixture, modes: list[str], *, async_worker: bool = False) -> tuple[WaitFlow, str, Client]:
    flow = AsyncWaitFlow(dex.flow_type()) if async_worker else WaitFlow(dex.flow_type())
    harness = dex.start(flow, async_worker=async_worker)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, modes)
    return flow, flow_id, harness.client


def test_any_of_takes_the_ready_channel_while_a_timer_is_pending(dex: DexFixture) -> None:
    flow, flow_id, client = start(dex, ["timer-or-a"])
    client.invoke_rpc(flow.send, flow_id, ["go=1"])
    client.invoke_rpc(flow.send, flow_id, ["a=x"])
    assert flow.probe.wait("timer-or-a") == [Outcome(timer=False, a=["x"], b=[], c=[])]


def test_any_of_uses_canonical_order_and_consumes_only_the_winner(dex: DexFixture) -> None:
    flow, flow_id, client = start(dex, ["b-or-a", "a-or-zero-timer"])
    assert client.invoke_rpc(flow.send, flow_id, ["a=a1", "b=b1"]) == [1, 1, 0]
    client.invoke_rpc(flow.send, flow_id, ["go=1"])
    assert flow.probe.wait("b-or-a") == [Outcome(timer=False, a=[], b=["b1"], c=[])], "first ready in argument order"
    assert flow.probe.wait("a-or-zero-timer") == [Outcome(timer=True, a=[], b=[], c=[])], "Timers before Channels"
    eventually(lambda: client.invoke_rpc(flow.queued, flow_id) == [1, 0, 0],
               what="a1 left queued: losers consume nothing")


def test_all_of_waits_for_every_condition(dex: DexFixture) -> None:
    flow, flow_id, client = start(dex, ["a-and-2b"])
    client.invoke_rpc(flow.send, flow_id, ["go=1"])
    client.invoke_rpc(flow.send, flow_id, ["a=a1", "b=b1"])
    assert client.invoke_rpc(flow.queued, flow_id) == [1, 1, 0], "not all ready: nothing consumed"
    client.invoke_rpc(flow.send, flow_id, ["a=a2", "b=b2", "b=b3"])
    assert flow.probe.wait("a-and-2b") == [Outcome(timer=False, a=["a1"], b=["b1", "b2"], c=[])]
    eventually(lambda: client.invoke_rpc(flow.queued, flow_id) == [1, 1, 0], what="a2 and b3 left queued")


def test_any_combination_of_consumes_only_the_chosen_combination(dex: DexFixture) -> None:
    flow, flow_id, client = start(dex, ["ab-or-c", "ab-or-c"])
    client.invoke_rpc(flow.send, flow_id, ["go=1"])
    client.invoke_rpc(flow.send, flow_id, ["a=a1"])
    assert client.invoke_rpc(flow.queued, flow_id) == [1, 0, 0], "combination a+b incomplete"
    client.invoke_rpc(flow.send, flow_id, ["c=c1"])
    first = flow.probe.wait("ab-or-c")[0]
    assert first == Outcome(timer=False, a=[], b=[], c=["c1"])
    client.invoke_rpc(flow.send, flow_id, ["b=b1"])
    assert flow.probe.wait("ab-or-c", 2)[1] == Outcome(timer=False, a=["a1"], b=["b1"], c=[])
    eventually(lambda: client.invoke_rpc(flow.queued, flow_id) == [0, 0, 0], what="all consumed")


def test_skip_immediately_runs_execute_at_once(dex: DexFixture) -> None:
    flow, flow_id, client = start(dex, ["skip"])
    client.invoke_rpc(flow.send, flow_id, ["go=1"])
    assert flow.probe.wait("skip") == [Outcome(timer=False, a=[], b=[], c=[])]


class AsyncAwait(Step[list[str]]):
    def __init__(self, flow: WaitFlow) -> None:
        self.flow = flow

    async def wait_for(self, context: AsyncContext, input: list[str]) -> Wait:  # type: ignore[override]
        return wait_for_mode(input[0])

    async def execute(self, context: AsyncContext, input: list[str]) -> StepDecision:  # type: ignore[override]
        self.flow.probe.record(input[0], outcome(context))
        return dead_end()


class AsyncWaitFlow(WaitFlow):
    def get_steps(self) -> StepList[list[str]]:
        return StepList.start_step(AsyncAwait(self))


def test_async_worker_any_of(dex: DexFixture) -> None:
    flow, flow_id, client = start(dex, ["b-or-a"], async_worker=True)
    client.invoke_rpc(flow.send, flow_id, ["a=only-a"])
    assert flow.probe.wait("b-or-a") == [Outcome(timer=False, a=["only-a"], b=[], c=[])]
