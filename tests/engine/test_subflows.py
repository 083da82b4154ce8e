"""SubFlows as Dex defines them: a Wait condition that starts another Flow run and is satisfied
when it closes.

* The SubFlow's Flow ID is ``SubFlow:<parent Flow ID>-<Step execution id>-<index>`` (what
  ``SubFlow.get_flow_id`` gives), and ``execute`` reads its terminal result by stable index.
* ``all_of`` two SubFlows waits for both; ``any_of`` with a zero Timer picks the Timer, and the
  unfinished SubFlow's result is a RUNNING snapshot without outputs; the loser keeps running after
  the parent completes and can be stopped by its ID.
* A SubFlow's options apply: its timeout and timeout policy, its initial Attributes.
* A failed SubFlow is a terminal result too (the parent decides what to do with it).
* While the SubFlow runs, ``GetFlowState`` shows the parent's Step waiting on it, without a result.
* Every SubFlow is found by ``DexParentFlowID = '<parent Flow ID>'`` in SearchFlows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import grpc
from dex import (
    Attribute,
    Channel,
    Context,
    FlowStatus,
    FlowTimeoutPolicy,
    PersistenceSchema,
    RetryPolicy,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    SubFlow,
    SubFlowOptions,
    Timer,
    Wait,
    go_to,
    graceful_complete,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually

seed = Attribute("Seed", int)
release = Channel("Release", int)


class AddOne(Step[int]):
    def execute(self, context: Context, input: int) -> StepDecision:
        return go_to(AddOneMore, input + 1 + seed.get(context))


class AddOneMore(Step[int]):
    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))

    def execute(self, context: Context, input: int) -> StepDecision:
        if input < 0:
            raise ValueError(f"negative input {input}")
        return graceful_complete(input + 1)


class Adder(NamedFlow[int]):
    """The child: completes with input + 2 (+ its Seed Attribute); fails on a negative input."""

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(AddOne()).other_steps(AddOneMore())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(seed)


class Held(Step[int]):
    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(release.for_one())

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(input)


class Holder(NamedFlow[int]):
    """The child that waits for a Release message before it completes with its input."""

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Held())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(release)


def _describe(index: int, context: Context) -> str:
    result = SubFlow.get_condition_results(context, index)
    output = str(result.single_output(int)) if result.completions else ""
    return f"{SubFlow.get_flow_id(context, index)}|{result.status.name}|{output}"


class RunsOne(Step[int]):
    def __init__(self, parent: Parent) -> None:
        self.parent = parent

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(SubFlow.run(self.parent.child, input, self.parent.options))

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(_describe(0, context))


class RunsTwo(Step[int]):
    def __init__(self, parent: Parent) -> None:
        self.parent = parent

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.all_of(SubFlow.run(self.parent.child, input), SubFlow.run(self.parent.child, input + 10))

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(";".join(_describe(index, context) for index in range(2)))


class RacesATimer(Step[int]):
    def __init__(self, parent: Parent) -> None:
        self.parent = parent

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.any_of(Timer.by_duration(timedelta(0)), SubFlow.run(self.parent.child, input))

    def execute(self, context: Context, input: int) -> StepDecision:
        result = SubFlow.get_condition_results(context)
        try:
            result.single_output(int)
            rejected = False
        except ValueError:
            rejected = True
        return graceful_complete(f"{SubFlow.get_flow_id(context)}|{result.status.name}|"
                                 f"{str(result.is_terminal).lower()}|{str(rejected).lower()}")


class Parent(NamedFlow[int]):
    def __init__(self, flow_type: str, child: NamedFlow[int], start: Callable[[Parent], Step[int]],
                 options: SubFlowOptions | None = None) -> None:
        super().__init__(flow_type)
        self.child = child
        self.options = options
        self._start = start

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(self._start(self))


def test_a_subflow_gives_its_identity_and_output(dex: DexFixture) -> None:
    child = Adder(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, RunsOne)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, 4)
    assert harness.result(flow_id).single_output(str) == f"SubFlow:{flow_id}-RunsOne-1-0|COMPLETED|6"
    assert harness.client.describe_flow(f"SubFlow:{flow_id}-RunsOne-1-0").status is FlowStatus.COMPLETED


def test_all_of_two_subflows_gives_both_terminal_results_by_stable_index(dex: DexFixture) -> None:
    child = Adder(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, RunsTwo)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, 4)
    assert harness.result(flow_id).single_output(str).split(";") == [
        f"SubFlow:{flow_id}-RunsTwo-1-0|COMPLETED|6", f"SubFlow:{flow_id}-RunsTwo-1-1|COMPLETED|16"]
    page = harness.client.search_flows(f"DexParentFlowID = '{flow_id}'", 10)
    assert sorted(entry.flow_id for entry in page.flows) == [
        f"SubFlow:{flow_id}-RunsTwo-1-0", f"SubFlow:{flow_id}-RunsTwo-1-1"]


def test_an_any_of_loser_is_a_running_snapshot_that_keeps_running_and_can_be_stopped(dex: DexFixture) -> None:
    child = Holder(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, RacesATimer)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, 300)
    child_id, status, terminal, rejected = harness.result(flow_id).single_output(str).split("|")
    assert child_id == f"SubFlow:{flow_id}-RacesATimer-1-0"
    assert (status, terminal, rejected) == ("RUNNING", "false", "true")
    assert harness.client.describe_flow(child_id).status is FlowStatus.RUNNING, "the parent's end does not stop it"
    harness.client.stop_flow(child_id)
    assert harness.client.wait_for_flow(child_id).status is FlowStatus.CANCELED


def test_subflow_options_apply_their_timeout_policy_and_initial_attributes(dex: DexFixture) -> None:
    held = Holder(dex.flow_type("held"))
    timed_out = Parent(dex.flow_type("timeout"), held, RunsOne, SubFlowOptions(
        timeout=timedelta(seconds=1), timeout_policy=FlowTimeoutPolicy.CANCEL))
    adder = Adder(dex.flow_type("seeded"))
    seeded = Parent(dex.flow_type("seed"), adder, RunsOne, SubFlowOptions().with_attribute(seed, 100))
    harness = dex.start(timed_out, held, seeded, adder)
    first, second = dex.flow_id("timeout"), dex.flow_id("seed")
    harness.client.start_flow(timed_out, first, 1)
    harness.client.start_flow(seeded, second, 1)
    assert harness.result(second).single_output(str) == f"SubFlow:{second}-RunsOne-1-0|COMPLETED|103"
    assert harness.result(first).single_output(str) == f"SubFlow:{first}-RunsOne-1-0|CANCELED|"


def test_a_failed_subflow_is_a_terminal_result_of_the_parent_wait(dex: DexFixture) -> None:
    child = Adder(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, RunsOne)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, -10)
    assert harness.result(flow_id).single_output(str) == f"SubFlow:{flow_id}-RunsOne-1-0|FAILED|"


def test_the_subflow_run_links_to_its_parent_step_in_flow_state(dex: DexFixture) -> None:
    """While the child runs, the parent's Step is WAITING with one SubFlow condition and no result."""
    child = Holder(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, RunsOne)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, 7)
    child_id = f"SubFlow:{flow_id}-RunsOne-1-0"
    with grpc.insecure_channel(dex.engine.address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)

        def waiting() -> pb.ActiveStepExecutionState | None:
            state = stub.GetFlowState(pb.GetFlowStateRequest(flow_id=flow_id))
            steps = [s for s in state.active_step_executions if s.phase == pb.ACTIVE_STEP_PHASE_WAITING]
            return steps[0] if steps else None

        step = eventually(waiting, what="the parent's Step to wait on its SubFlow")
        assert len(step.waiting_condition.sub_flow_conditions) == 1
        assert not step.completed_conditions.completed_sub_flow_results
        stub.PublishToChannel(pb.PublishToChannelRequest(flow_id=child_id, messages=[pb.ChannelMessage(
            channel_name="Release", value=pb.Value(int_value=1))]))
    assert harness.result(flow_id).single_output(str) == f"{child_id}|COMPLETED|7"
