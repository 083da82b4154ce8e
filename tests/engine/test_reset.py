"""``ResetFlow`` (the SDK's ``Client.time_travel``) as Dex defines it: a new run of the same Flow ID
from a point of an existing run's history.

* From the beginning, RPC effects after the point (locking or not) are reapplied, so the run
  completes again with the same Attributes; with ``skip_writes_reapply`` they are not, and the new
  run waits at its start with no Attribute.
* To one Step execution's ``execute``: its ``wait_for`` result (the message its Wait consumed) is
  kept and ``execute`` runs again; to a Step type: its latest execution runs again.
* A running run is terminated by the reset; the new run is the Flow ID's current run.
* SubFlows across a parent reset follow their reuse policy: ATTACH keeps the running child,
  ALWAYS_RESTART replaces it, the default starts a failed child again.
* A reset point missing from history is FAILED_PRECONDITION, an unknown Flow NOT_FOUND.
"""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest
from dex import (
    Attribute,
    Channel,
    Context,
    DexServiceError,
    FlowNotFoundError,
    FlowStatus,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    Step,
    StepDecision,
    StepExecutionId,
    StepList,
    StepMovement,
    StepOptions,
    SubFlow,
    SubFlowOptions,
    SubFlowReusePolicy,
    TimerId,
    Timer,
    TimeTravelOptions,
    TimeTravelStepMethod,
    TimeTravelType,
    Wait,
    go_to,
    graceful_complete,
    rpc,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from tests.engine.conftest import DexFixture
from tests.engine.harness import Harness, NamedFlow, eventually, retry_until

signal = Channel("Signal", str)
data = Attribute("Data", str)
counter = Attribute("Counter", int)
FROM_START = TimeTravelOptions(TimeTravelType.BEGINNING, reason="test")


class WaitSignal(Step[str]):
    def __init__(self, flow: ResetFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        self.flow.probe.record("wait_for", input)
        return Wait.until(signal.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        (message,) = signal.results(context)
        self.flow.probe.record("execute", message)
        return go_to(Complete, message)


class Complete(Step[str]):
    def execute(self, context: Context, input: str) -> StepDecision:
        return graceful_complete(f"complete:{input}")


class Count(Step[int]):
    def __init__(self, flow: ResetFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: int) -> StepDecision:
        self.flow.probe.record("count", input)
        return go_to(Count, input + 1) if input < 3 else go_to(Complete, str(input))


class ResetFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(WaitSignal(self)).other_steps(Complete(), Count(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(signal, data, counter)

    def _write(self, context: Context) -> None:
        data.set(context, "random-string")
        counter.set(context, 100)
        signal.publish(context, "from-rpc")

    @rpc(lock_attributes=(data.lock(), counter.lock()))
    def with_locking(self, context: Context) -> None:
        self._write(context)

    @rpc
    def without_locking(self, context: Context) -> None:
        self._write(context)

    @rpc
    def read(self, context: Context) -> RPCResult[str]:
        return RPCResult(f"{data.get(context)}|{counter.get(context)}")

    @rpc
    def count_from(self, context: Context, input: int) -> RPCResult[bool]:
        return RPCResult(True, (StepMovement.of(Count, input),))


def _completed(harness: Harness, flow: ResetFlow, flow_id: str, locking: bool) -> str:
    harness.client.invoke_rpc(flow.with_locking if locking else flow.without_locking, flow_id)
    return harness.result(flow_id).single_output(str)


@pytest.mark.parametrize("locking", [True, False])
def test_a_reset_from_the_beginning_reapplies_rpc_effects(dex: DexFixture, locking: bool) -> None:
    flow = ResetFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    assert _completed(harness, flow, flow_id, locking) == "complete:from-rpc"
    first_run = harness.client.describe_flow(flow_id).run_id
    new_run = harness.client.time_travel(flow_id, FROM_START)
    assert new_run != first_run
    assert harness.result(flow_id).single_output(str) == "complete:from-rpc"
    assert harness.client.describe_flow(flow_id).run_id == new_run
    assert harness.client.invoke_rpc(flow.read, flow_id) == "random-string|100"
    assert flow.probe.values("wait_for") == ["go", "go"], "the start Step's wait_for ran again"
    fork = [e for e in harness.history(flow_id) if e.HasField("time_travel_fork")]
    assert [e.time_travel_fork.previous_run_id for e in fork] == [first_run]


def test_a_reset_that_skips_writes_starts_over_without_them(dex: DexFixture) -> None:
    flow = ResetFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    assert _completed(harness, flow, flow_id, True) == "complete:from-rpc"
    harness.client.time_travel(flow_id, TimeTravelOptions(TimeTravelType.BEGINNING, skip_writes_reapply=True))
    flow.probe.wait("wait_for", 2)
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING
    assert harness.client.invoke_rpc(flow.read, flow_id) == "None|0", "no Attribute was written in the new run"
    harness.client.invoke_rpc(flow.without_locking, flow_id)
    assert harness.result(flow_id).single_output(str) == "complete:from-rpc"


def test_a_reset_to_an_execute_keeps_its_wait_for_result(dex: DexFixture) -> None:
    flow = ResetFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    assert _completed(harness, flow, flow_id, False) == "complete:from-rpc"
    harness.client.time_travel(flow_id, TimeTravelOptions(
        TimeTravelType.STEP_EXECUTION_ID, step_execution_id="WaitSignal-1", step_method=TimeTravelStepMethod.EXECUTE,
        skip_writes_reapply=True))
    assert harness.result(flow_id).single_output(str) == "complete:from-rpc"
    assert flow.probe.values("execute") == ["from-rpc", "from-rpc"], "execute ran again on the consumed message"
    assert flow.probe.values("wait_for") == ["go"], "wait_for did not run again"


def test_a_reset_to_a_step_type_reruns_its_latest_execution(dex: DexFixture) -> None:
    flow = ResetFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    harness.client.invoke_rpc(flow.count_from, flow_id, 1)
    flow.probe.wait("count", 3)
    harness.client.stop_flow(flow_id)
    harness.result(flow_id)
    harness.client.time_travel(flow_id, TimeTravelOptions(TimeTravelType.STEP_TYPE, step_type="Count",
                                                          skip_writes_reapply=True))
    assert flow.probe.wait("count", 4) == [1, 2, 3, 3], "only the latest execution (Count-3) ran again"
    eventually(lambda: "Complete-1" in harness.completed_executes(flow_id), what="Count-3 to go on to Complete")
    assert harness.client.describe_flow(flow_id).status is FlowStatus.RUNNING, "WaitSignal-1 still waits"


def test_a_reset_terminates_a_running_run_and_refuses_points_history_lacks(dex: DexFixture) -> None:
    flow = ResetFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, "go")
    flow.probe.wait("wait_for")
    old_run = harness.client.describe_flow(flow_id).run_id
    with pytest.raises(DexServiceError, match="no execute start"):
        harness.client.time_travel(flow_id, TimeTravelOptions(
            TimeTravelType.STEP_EXECUTION_ID, step_execution_id="WaitSignal-1",
            step_method=TimeTravelStepMethod.EXECUTE))
    with pytest.raises(FlowNotFoundError):
        harness.client.time_travel(dex.flow_id("missing"), FROM_START)
    harness.client.time_travel(flow_id, FROM_START)
    flow.probe.wait("wait_for", 2)
    with grpc.insecure_channel(dex.engine.address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        old = stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id=flow_id, run_id=old_run))
    assert old.flow_status == pb.FLOW_STATUS_TERMINATED
    harness.client.invoke_rpc(flow.without_locking, flow_id)
    assert harness.result(flow_id).single_output(str) == "complete:from-rpc"


# ---- SubFlows across a parent reset

release = Channel("Release", int)


class Held(Step[int]):
    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(Timer.by_duration(timedelta(hours=1), condition_id="hour"))

    def execute(self, context: Context, input: int) -> StepDecision:
        if input < 0:
            raise ValueError("a negative input fails the child")
        return graceful_complete(input)


class Child(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Held())


class RunsChild(Step[int]):
    def __init__(self, parent: Parent) -> None:
        self.parent = parent

    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(SubFlow.run(self.parent.child, input, SubFlowOptions(reuse_policy=self.parent.policy)))

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(SubFlow.get_condition_results(context).status.name)


class Parent(NamedFlow[int]):
    def __init__(self, flow_type: str, child: Child, policy: SubFlowReusePolicy) -> None:
        super().__init__(flow_type)
        self.child = child
        self.policy = policy

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(RunsChild(self))


def _finish_child(harness: Harness, child_id: str) -> None:
    retry_until(lambda: harness.client.skip_timer(child_id, StepExecutionId("Held", 1), TimerId.by_condition_id("hour")),
                what=f"the timer of {child_id} to be pending", retry_on=(DexServiceError,))


@pytest.mark.parametrize(("policy", "restarts"), [(SubFlowReusePolicy.ATTACH, False),
                                                   (SubFlowReusePolicy.ALWAYS_RESTART, True)])
def test_a_running_subflow_across_a_parent_reset_follows_its_reuse_policy(
        dex: DexFixture, policy: SubFlowReusePolicy, restarts: bool) -> None:
    child = Child(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, policy)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, 5)
    child_id = f"SubFlow:{flow_id}-RunsChild-1-0"
    first_child_run = retry_until(lambda: harness.client.describe_flow(child_id).run_id, what="the child to start",
                                  retry_on=(FlowNotFoundError,))
    harness.client.time_travel(flow_id, FROM_START)

    def child_run() -> str | None:
        info = harness.client.describe_flow(child_id)
        changed = info.run_id != first_child_run
        return info.run_id if info.status is FlowStatus.RUNNING and changed == restarts else None

    active = eventually(child_run, what="the child run the policy asks for")
    assert (active != first_child_run) is restarts
    _finish_child(harness, child_id)
    assert harness.result(flow_id).single_output(str) == "COMPLETED"


def test_the_default_reuse_policy_starts_a_failed_subflow_again_after_a_parent_reset(dex: DexFixture) -> None:
    child = Child(dex.flow_type("child"))
    parent = Parent(dex.flow_type(), child, SubFlowReusePolicy.RESTART_IF_PREVIOUS_EXITS_ABNORMALLY)
    harness = dex.start(parent, child)
    flow_id = dex.flow_id()
    harness.client.start_flow(parent, flow_id, -1)
    child_id = f"SubFlow:{flow_id}-RunsChild-1-0"
    _finish_child(harness, child_id)
    assert harness.result(flow_id).single_output(str) == "FAILED"
    first_child_run = harness.client.describe_flow(child_id).run_id
    harness.client.time_travel(flow_id, FROM_START)
    eventually(lambda: harness.client.describe_flow(child_id).run_id != first_child_run, what="a new child run")
    _finish_child(harness, child_id)
    assert harness.result(flow_id).single_output(str) == "FAILED"
