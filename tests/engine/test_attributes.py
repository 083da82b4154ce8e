"""Attributes: writes commit atomically with the handler's decision, reads see earlier commits
and the handler's own staged writes, absent values read as type defaults, initial values from
``start_flow``, deletes, query RPCs on open and closed Flows, ``wait_for_attribute_match``,
Step-execution locals (durable per Step execution), and large and unicode values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from dex import (
    Attribute,
    AttributeMatch,
    Channel,
    Context,
    FlowStatus,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    Wait,
    WaitForAttributeOptions,
    dead_end,
    go_to,
    graceful_complete,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, SingleStepFlow, eventually, in_thread

ABSENT = "<absent>"


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    name: str
    tags: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    count: int
    label: str
    enabled: bool
    ratio: float
    profile: list[Profile]


count = Attribute("Count", int)
label = Attribute("Label", str)
enabled = Attribute("Enabled", bool)
ratio = Attribute("Ratio", float)
profile = Attribute("Profile", Profile)
bump = Channel("Bump", int)


def text(context: Context) -> str:
    """The Label value, or ``ABSENT`` (an absent str Attribute reads as ``None``)."""
    value = cast(str | None, label.get(context))
    return ABSENT if value is None else value


def snapshot(context: Context) -> Snapshot:
    value = cast(Profile | None, profile.get(context))
    return Snapshot(count=count.get(context), label=text(context), enabled=enabled.get(context),
                    ratio=ratio.get(context),
                    profile=[] if value is None else [value])


class Write(Step[str]):
    def __init__(self, flow: AttrFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("before", snapshot(context))
        count.set(context, count.get(context) + 5)
        label.set(context, input)
        enabled.set(context, True)
        ratio.set(context, 0.5)
        profile.set(context, Profile(name=input, tags=["a", "b"]))
        self.flow.probe.record("staged", snapshot(context))
        return go_to(Read, input)


class Read(Step[str]):
    def __init__(self, flow: AttrFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("read", snapshot(context))
        label.delete(context)
        return go_to(Counter, 0)


class Counter(Step[int]):
    """Waits for a bump, adds it to Count; stops once Count reaches 100."""

    def __init__(self, flow: AttrFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(bump.for_one())

    def execute(self, context: Context, input: int) -> StepDecision:
        total = count.get(context) + sum(bump.results(context))
        count.set(context, total)
        if total >= 100:
            return graceful_complete(total)
        return go_to(Counter, 0)


class AttrFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Write(self)).other_steps(Read(self), Counter(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(count, label, enabled, ratio, profile, bump)

    @rpc
    def snapshot(self, context: Context) -> RPCResult[Snapshot]:
        return RPCResult(snapshot(context))

    @rpc
    def add(self, context: Context, input: int) -> RPCResult[int]:
        bump.publish(context, input)
        return RPCResult(count.get(context))


def test_writes_commit_with_the_decision_and_absent_values_read_as_defaults(dex: DexFixture) -> None:
    flow = AttrFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "alpha")
    assert flow.probe.wait("before") == [Snapshot(count=0, label=ABSENT, enabled=False, ratio=0.0, profile=[])]
    staged = Snapshot(count=5, label="alpha", enabled=True, ratio=0.5, profile=[Profile(name="alpha", tags=["a", "b"])])
    assert flow.probe.wait("staged") == [staged]
    assert flow.probe.wait("read") == [staged]
    expected = Snapshot(count=5, label=ABSENT, enabled=True, ratio=0.5,
                        profile=[Profile(name="alpha", tags=["a", "b"])])
    eventually(lambda: harness.client.invoke_rpc(flow.snapshot, flow_id) == expected,
               what="the Read Step's delete to commit (query RPC)")


def test_start_flow_initial_attributes_reach_the_first_step(dex: DexFixture) -> None:
    flow = AttrFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "beta", StartFlowOptions().with_attribute(count, 37)
                              .with_attribute(profile, Profile(name="seed", tags=[])))
    before = flow.probe.wait("before")[0]
    assert isinstance(before, Snapshot)
    assert (before.count, before.profile) == (37, [Profile(name="seed", tags=[])])
    eventually(lambda: harness.client.invoke_rpc(flow.snapshot, flow_id).count == 42,
               what="Count 37 + 5 committed by the first Step")


def test_rpc_reads_committed_state_and_wait_for_attribute_match_sees_updates(dex: DexFixture) -> None:
    flow = AttrFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "gamma")
    flow.probe.wait("read")
    waiting = in_thread(lambda: harness.client.wait_for_attribute_match(
        flow_id, count, AttributeMatch.greater_than_or_equal(50), WaitForAttributeOptions()))
    for step in (20, 30):
        harness.client.invoke_rpc(flow.add, flow_id, step)
    matched = waiting(30.0)
    assert matched >= 50
    harness.client.invoke_rpc(flow.add, flow_id, 45)
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(int) == 100
    assert harness.client.invoke_rpc(flow.snapshot, flow_id).count == 100, "query RPC on a closed Flow"


class FailOnce(Step[str]):
    """Stages writes then fails on attempt 1; attempt 2 must not see them."""

    def __init__(self, flow: AtomicFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=2))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("attempt", (context.attempt, count.get(context), text(context)))
        count.set(context, 99)
        label.set(context, f"attempt-{context.attempt}")
        bump.publish(context, context.attempt)
        if context.attempt == 1:
            raise RuntimeError("fail after staging writes")
        return dead_end()


class AtomicFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(FailOnce(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(count, label, bump)

    @rpc
    def state(self, context: Context) -> RPCResult[list[str]]:
        return RPCResult([str(count.get(context)), text(context), str(bump.size(context))])


def test_a_failed_attempt_commits_none_of_its_writes(dex: DexFixture) -> None:
    flow = AtomicFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "x")
    assert flow.probe.wait("attempt", 2) == [(1, 0, ABSENT), (2, 0, ABSENT)]
    eventually(lambda: harness.client.invoke_rpc(flow.state, flow_id) == ["99", "attempt-2", "1"],
               what="only attempt 2's writes and publish committed")


class Remember(Step[str]):
    """``wait_for`` of the first execution stores a local; ``execute`` (and its retry) reads it back;
    the second execution of the same Step type does not see it."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=2))

    def wait_for(self, context: Context, input: str) -> Wait:
        if input == "first":
            context.set_step_execution_local("note", f"noted {input}")
        return Wait.skip_immediately()

    def execute(self, context: Context, input: str) -> StepDecision:
        value = cast(str | None, context.get_step_execution_local("note", str))
        self.flow.probe.record("local", (context.attempt, value))
        if context.attempt == 1:
            raise RuntimeError("retry to read the local again")
        if input == "first":
            return go_to(Remember, "second")
        return graceful_complete(ABSENT if value is None else value)


def test_step_execution_locals_live_per_step_execution(dex: DexFixture) -> None:
    flow = SingleStepFlow(dex.flow_type(), Remember)
    harness, flow_id = dex.start_flow(flow, "first")
    assert harness.result(flow_id).single_output(str) == ABSENT
    assert flow.probe.values("local") == [(1, "noted first"), (2, "noted first"), (1, None), (2, None)]


big_text = Attribute("BigText", str)


class Bulky(Step[str]):
    """Takes a large input, stores a larger Attribute, and echoes a large output."""

    def __init__(self, flow: BulkyFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        big_text.set(context, input * 4)
        return graceful_complete(input[::-1])


class BulkyFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Bulky(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(big_text)

    @rpc
    def read_big(self, context: Context) -> RPCResult[str]:
        return RPCResult(text_of(context))


def text_of(context: Context) -> str:
    value = cast(str | None, big_text.get(context))
    return ABSENT if value is None else value


def test_large_and_unicode_values_round_trip(dex: DexFixture) -> None:
    flow = BulkyFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = dex.flow_id("unicode") + "-ключ-é"
    chunk = "Dex ✓ ключ é 😀 " * 3000
    harness.client.start_flow(flow, flow_id, chunk)
    assert harness.result(flow_id).single_output(str) == chunk[::-1]
    assert harness.client.invoke_rpc(flow.read_big, flow_id) == chunk * 4
