"""Attribute locks are shared by Steps and RPCs: while a Step's ``execute`` holds a lock, an RPC
asking for it fails fast with ``RpcLockConflictError`` (an RPC without the lock still runs), two
RPCs contend the same way, AttributeMap instance locks only conflict per instance, a second
Step needing a held lock runs only after the holder committed (it sees the holder's write),
``wait_for`` locks cover only ``wait_for``, and locked increments from Steps and concurrent RPCs
lose no update."""

from __future__ import annotations

import pytest
from dex import (
    Attribute,
    AttributeMap,
    Client,
    Context,
    PersistenceSchema,
    RPCInvokeOptions,
    RPCResult,
    RpcLockConflictError,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    StepOptions,
    Wait,
    dead_end,
    go_to,
    go_to_many,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually, in_thread

counter = Attribute("Counter", int)
slots = AttributeMap("Slots", int)


class Fan(Step[list[str]]):
    def __init__(self, flow: LockFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: list[str]) -> StepDecision:
        if input == ["wait-lock"]:
            return go_to_many(StepMovement.of(WaitHolder, "w"))
        return go_to_many(*[StepMovement.of(Holder, name) for name in input])


class Holder(Step[str]):
    """Holds the Counter lock and the Slots/<input> instance lock while gated, then bumps Counter."""

    def __init__(self, flow: LockFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_lock_attributes=(counter.lock(), slots.lock("k")))

    def execute(self, context: Context, input: str) -> StepDecision:
        seen = counter.get(context)
        self.flow.probe.record("holding", (input, seen))
        if len(self.flow.probe.values("holding")) == 1:
            self.flow.gate.block(context.is_cancellation_requested)
        counter.set(context, seen + 1)
        self.flow.probe.record("releasing", input)
        return dead_end()


class WaitHolder(Step[str]):
    """Holds the Counter lock during ``wait_for`` (gated), not during ``execute``."""

    def __init__(self, flow: LockFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(wait_for_lock_attributes=(counter.lock(),))

    def wait_for(self, context: Context, input: str) -> Wait:
        self.flow.probe.record("wait-holding")
        self.flow.gate.block(context.is_cancellation_requested)
        return Wait.skip_immediately()

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("executing")
        self.flow.gate.block(context.is_cancellation_requested)
        return dead_end()


class LockFlow(NamedFlow[list[str]]):
    def get_steps(self) -> StepList[list[str]]:
        return StepList.start_step(Fan(self)).other_steps(Holder(self), WaitHolder(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(counter, slots)

    @rpc(lock_attributes=(counter.lock(),))
    def locked_bump(self, context: Context) -> RPCResult[int]:
        counter.set(context, counter.get(context) + 100)
        return RPCResult(counter.get(context))

    @rpc
    def peek(self, context: Context) -> RPCResult[int]:
        return RPCResult(counter.get(context))

    @rpc
    def slot_bump(self, context: Context, input: str) -> RPCResult[int]:
        slots.set(context, input, 1)
        return RPCResult(1)

    @rpc(lock_attributes=(counter.lock(),))
    def locked_wait(self, context: Context) -> RPCResult[int]:
        self.probe.record("rpc-holding")
        self.gate.block()
        return RPCResult(counter.get(context))


def test_rpc_lock_conflicts_with_a_step_holding_the_lock(dex: DexFixture) -> None:
    flow = LockFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["first"])
    flow.probe.wait("holding")
    with pytest.raises(RpcLockConflictError):
        harness.client.invoke_rpc(flow.locked_bump, flow_id)
    assert harness.client.invoke_rpc(flow.peek, flow_id) == 0, "an RPC without the lock still runs"
    with pytest.raises(RpcLockConflictError):
        harness.client.invoke_rpc(flow.slot_bump, flow_id, "k", options=RPCInvokeOptions(
            lock_attribute_map_instances=(slots.lock("k"),)))
    assert harness.client.invoke_rpc(flow.slot_bump, flow_id, "other", options=RPCInvokeOptions(
        lock_attribute_map_instances=(slots.lock("other"),))) == 1, "another map instance is free"
    flow.gate.open()
    value = eventually(lambda: _bump_or_none(flow, harness.client, flow_id), what="the lock to be released")
    assert value == 101, "the RPC ran after the Step committed its write"


def _bump_or_none(flow: LockFlow, client: Client, flow_id: str) -> int | None:
    try:
        return client.invoke_rpc(flow.locked_bump, flow_id)
    except RpcLockConflictError:
        return None


def test_two_rpcs_contend_for_one_lock(dex: DexFixture) -> None:
    flow = LockFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, [])
    holder = in_thread(lambda: harness.client.invoke_rpc(flow.locked_wait, flow_id))
    flow.probe.wait("rpc-holding")
    with pytest.raises(RpcLockConflictError):
        harness.client.invoke_rpc(flow.locked_bump, flow_id)
    flow.gate.open()
    assert holder(30.0) == 0
    assert harness.client.invoke_rpc(flow.locked_bump, flow_id) == 100


def test_a_step_needing_a_held_lock_runs_after_the_holder_commits(dex: DexFixture) -> None:
    flow = LockFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["one", "two"])
    first = flow.probe.wait("holding")[0]
    flow.gate.open()
    holders = flow.probe.wait("holding", 2)
    assert isinstance(first, tuple) and holders[0] == first and first[1] == 0
    second = "two" if first[0] == "one" else "one"
    assert holders[1] == (second, 1), "the second holder saw the first's write"
    assert flow.probe.wait("releasing", 2) == [first[0], second]
    eventually(lambda: harness.client.invoke_rpc(flow.peek, flow_id) == 2, what="both increments committed")


def test_wait_for_locks_are_held_only_during_wait_for(dex: DexFixture) -> None:
    flow = LockFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["wait-lock"])
    flow.probe.wait("wait-holding")
    with pytest.raises(RpcLockConflictError):
        harness.client.invoke_rpc(flow.locked_bump, flow_id)
    flow.gate.open()
    flow.probe.wait("executing")
    assert eventually(lambda: _bump_or_none(flow, harness.client, flow_id), what="the lock after wait_for") == 100


ticks = Attribute("Ticks", int)


class Tick(Step[int]):
    """Increments Ticks under its lock ``input`` more times, one Step execution per increment."""

    def __init__(self, flow: TickFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_lock_attributes=(ticks.lock(),))

    def execute(self, context: Context, input: int) -> StepDecision:
        ticks.set(context, ticks.get(context) + 1)
        return go_to(Tick, input - 1) if input > 1 else dead_end()


class TickFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Tick(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(ticks)

    @rpc(lock_attributes=(ticks.lock(),))
    def tick(self, context: Context) -> RPCResult[int]:
        ticks.set(context, ticks.get(context) + 1)
        return RPCResult(ticks.get(context))

    @rpc
    def total(self, context: Context) -> RPCResult[int]:
        return RPCResult(ticks.get(context))


def test_locked_increments_from_steps_and_rpcs_lose_no_update(dex: DexFixture) -> None:
    flow = TickFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 30)

    def tick_ten_times() -> int:
        conflicts = 0
        for _ in range(10):
            while True:
                try:
                    harness.client.invoke_rpc(flow.tick, flow_id)
                    break
                except RpcLockConflictError:
                    conflicts += 1
        return conflicts

    joins = [in_thread(tick_ten_times) for _ in range(4)]
    for join in joins:
        join(120.0)
    eventually(lambda: harness.client.invoke_rpc(flow.total, flow_id) == 30 + 40,
               what="30 Step increments and 40 RPC increments, none lost")
