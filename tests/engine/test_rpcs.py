"""RPCs run on the pull Worker: writes and publishes commit with the answer, ``next_steps`` start
Steps and ``with_canceling_steps`` cancels waiting ones, query-only RPCs read closed Flows while
effectful ones are refused there, handler errors surface as ``WorkerInvocationError`` and commit
nothing, RPC timeouts end the call, and async RPCs work on ``AsyncWorker``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from dex import (
    AsyncContext,
    Attribute,
    Channel,
    Context,
    DexServiceError,
    FlowNotActiveOrNotFoundError,
    FlowStatus,
    PersistenceSchema,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    Wait,
    WorkerInvocationError,
    go_to,
    graceful_complete,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow

balance = Attribute("Balance", int)
events = Channel("Events", int)
never = Channel("Never", str)


class Boom(RuntimeError):
    """The planned failure of these tests."""


class Ledger(Step[int]):
    """Consumes deposit events until the balance reaches the input, then goes to Done."""

    def __init__(self, flow: LedgerFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(events.for_one())

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("event", list(events.results(context)))
        if balance.get(context) >= input:
            return go_to(Done, f"balance {balance.get(context)}")
        return go_to(Ledger, input)


class Parked(Step[str]):
    def __init__(self, flow: LedgerFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("parked-ran")
        return graceful_complete("parked")


class Done(Step[str]):
    def __init__(self, flow: LedgerFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(input)


class LedgerFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Ledger(self)).other_steps(Parked(self), Done(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(balance, events, never)

    @rpc
    def deposit(self, context: Context, input: int) -> RPCResult[int]:
        total = balance.get(context) + input
        balance.set(context, total)
        events.publish(context, input)
        return RPCResult(total)

    @rpc
    def read_balance(self, context: Context) -> RPCResult[int]:
        return RPCResult(balance.get(context))

    @rpc
    def faulty_deposit(self, context: Context, input: int) -> RPCResult[int]:
        balance.set(context, balance.get(context) + input)
        events.publish(context, input)
        raise Boom(f"refused deposit {input}")

    @rpc
    def park(self, context: Context, input: str) -> RPCResult[bool]:
        return RPCResult(True, next_steps=(StepMovement.of(Parked, input),))

    @rpc
    def interrupt(self, context: Context, input: str) -> RPCResult[str]:
        return RPCResult("interrupted", next_steps=(StepMovement.of(Done, input),)).with_canceling_steps(
            Parked, Ledger)

    @rpc(timeout=timedelta(seconds=1))
    def slow(self, context: Context) -> RPCResult[bool]:
        self.gate.block()
        return RPCResult(True)


def test_rpc_writes_and_publishes_commit_with_the_answer(dex: DexFixture) -> None:
    flow = LedgerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 30)
    assert harness.client.invoke_rpc(flow.deposit, flow_id, 10) == 10
    assert harness.client.invoke_rpc(flow.read_balance, flow_id) == 10, "read after the RPC answered"
    assert harness.client.invoke_rpc(flow.deposit, flow_id, 25) == 35
    result = harness.result(flow_id)
    assert result.single_output(str) == "balance 35"
    assert flow.probe.values("event") == [[10], [25]]


def test_query_rpc_reads_a_closed_flow_and_effectful_rpcs_are_refused(dex: DexFixture) -> None:
    flow = LedgerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 5)
    harness.client.invoke_rpc(flow.deposit, flow_id, 7)
    assert harness.result(flow_id).status is FlowStatus.COMPLETED
    assert harness.client.invoke_rpc(flow.read_balance, flow_id) == 7
    with pytest.raises(FlowNotActiveOrNotFoundError):
        harness.client.invoke_rpc(flow.deposit, flow_id, 1)
    assert harness.client.invoke_rpc(flow.read_balance, flow_id) == 7
    with pytest.raises(FlowNotActiveOrNotFoundError):
        harness.client.invoke_rpc(flow.read_balance, dex.flow_id("missing"))


def test_rpc_handler_error_surfaces_and_commits_nothing(dex: DexFixture) -> None:
    flow = LedgerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 100)
    with pytest.raises(WorkerInvocationError) as failed:
        harness.client.invoke_rpc(flow.faulty_deposit, flow_id, 50)
    assert failed.value.worker_error_type == f"{__name__}.Boom"
    assert "refused deposit 50" in failed.value.worker_error_detail
    assert harness.client.invoke_rpc(flow.read_balance, flow_id) == 0
    assert harness.client.invoke_rpc(flow.deposit, flow_id, 1) == 1
    assert flow.probe.wait("event") == [[1]], "the failed RPC published nothing"


def test_rpc_next_steps_start_steps_and_canceling_steps_cancel_them(dex: DexFixture) -> None:
    flow = LedgerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 1000)
    assert harness.client.invoke_rpc(flow.park, flow_id, "p") is True
    assert harness.client.invoke_rpc(flow.interrupt, flow_id, "stopped by rpc") == "interrupted"
    result = harness.result(flow_id)
    assert (result.status, result.single_output(str)) == (FlowStatus.COMPLETED, "stopped by rpc")
    assert flow.probe.values("parked-ran") == []
    assert flow.probe.values("event") == []


def test_rpc_timeout_ends_the_call(dex: DexFixture) -> None:
    flow = LedgerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 1)
    with pytest.raises(DexServiceError):
        harness.client.invoke_rpc(flow.slow, flow_id)
    flow.gate.open()
    assert harness.client.invoke_rpc(flow.deposit, flow_id, 1) == 1, "the Flow still serves RPCs"
    assert harness.result(flow_id).status is FlowStatus.COMPLETED


class AsyncLedgerFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(AsyncHold(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(balance, events)

    @rpc
    async def deposit(self, context: Context, input: int) -> RPCResult[int]:
        total = balance.get(context) + input
        balance.set(context, total)
        events.publish(context, input)
        return RPCResult(total)


class AsyncHold(Step[int]):
    def __init__(self, flow: AsyncLedgerFlow) -> None:
        self.flow = flow

    async def wait_for(self, context: AsyncContext, input: int) -> Wait:  # type: ignore[override]
        return Wait.until(events.for_n(input))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        return graceful_complete(sum(events.results(context)) + balance.get(context))


def test_async_rpc_on_async_worker(dex: DexFixture) -> None:
    flow = AsyncLedgerFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 2, async_worker=True)
    assert harness.client.invoke_rpc(flow.deposit, flow_id, 3) == 3  # type: ignore[arg-type]
    assert harness.client.invoke_rpc(flow.deposit, flow_id, 4) == 7  # type: ignore[arg-type]
    assert harness.result(flow_id).single_output(int) == 14
