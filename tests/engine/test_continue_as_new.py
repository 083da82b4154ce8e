"""Continue-as-new as Dex documents it: ``FlowConfig.continue_as_new_threshold`` and
``Client.trigger_continue_as_new`` roll a running Flow into a new run under the same Flow ID.

* The Flow ID stays; ``describe_flow`` names the new run; Attributes, pending Channel messages,
  stored Waits and the SubFlows they started carry over (a finished SubFlow is not started again).
* The ended run is ``CONTINUED_AS_NEW``: searched only with ``include_continued_as_new``, its
  history ends with ``flow_closed`` naming the next run, whose history starts again at event 1
  with the carried state.
* With a threshold the current run's history stays bounded (the engine's ``run_history`` reads the
  runs and the current run's history length from the database).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
import grpc
import pytest
from dex import (
    Attribute,
    AttributeMatch,
    Channel,
    Client,
    Context,
    DexServiceError,
    FlowConfig,
    FlowNotActiveOrNotFoundError,
    FlowStatus,
    PersistenceSchema,
    StartFlowOptions,
    Step,
    StepDecision,
    StepExecutionId,
    StepList,
    SubFlow,
    SubFlowOptions,
    Timer,
    TimerId,
    TimeTravelOptions,
    TimeTravelType,
    Wait,
    WaitForAttributeOptions,
    go_to,
    graceful_complete,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from tests.engine.conftest import DexFixture, require_local_engine
from tests.engine.harness import NamedFlow, read_history

armed = Attribute("Armed", bool)
label = Attribute("Label", str)
release = Channel("Release", int)
extra = Channel("Extra", int)
DELAY_TIMER = "delay-timer"


class Doubles(Step[int]):
    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(input + 2)


class Quick(NamedFlow[int]):
    """A child that completes at once with its input + 2."""

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Doubles())


class Delays(Step[int]):
    def wait_for(self, context: Context, input: int) -> Wait:
        armed.set(context, True)
        return Wait.until(Timer.by_duration(timedelta(seconds=input), condition_id=DELAY_TIMER))

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(input)


class Slow(NamedFlow[int]):
    """A child that waits on a long Timer (skipped by the test) and marks when it is armed."""

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Delays())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(armed)


class WaitsOnBoth(Step[int]):
    def __init__(self, parent: BothChildren) -> None:
        self.parent = parent

    def wait_for(self, context: Context, input: int) -> Wait:
        armed.set(context, True)
        options = SubFlowOptions(config_override=FlowConfig(continue_as_new_threshold=100))
        return Wait.all_of(SubFlow.run(self.parent.quick, input, options),
                           SubFlow.run(self.parent.slow, 300, options))

    def execute(self, context: Context, input: int) -> StepDecision:
        done, delayed = SubFlow.get_condition_results(context, 0), SubFlow.get_condition_results(context, 1)
        return graceful_complete(f"{SubFlow.get_flow_id(context, 0)}|{done.single_output(int)}|"
                                 f"{SubFlow.get_flow_id(context, 1)}|{delayed.status.name}")


class BothChildren(NamedFlow[int]):
    def __init__(self, flow_type: str, quick: Quick, slow: Slow) -> None:
        super().__init__(flow_type)
        self.quick, self.slow = quick, slow

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(WaitsOnBoth(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(armed)


def _armed(client: Client, flow_id: str) -> None:
    """Wait until the Flow's Wait is stored (its ``wait_for`` sets Armed in the same commit)."""
    client.wait_for_attribute_match(flow_id, armed, AttributeMatch.equal_to(True),
                                    WaitForAttributeOptions(request_timeout=timedelta(seconds=30)))


def test_subflow_results_survive_rollovers_and_no_subflow_is_started_again(dex: DexFixture) -> None:
    quick, slow = Quick(dex.flow_type("quick")), Slow(dex.flow_type("slow"))
    parent = BothChildren(dex.flow_type(), quick, slow)
    harness = dex.start(parent, quick, slow)
    client = harness.client
    flow_id = dex.flow_id()
    quick_id, slow_id = f"SubFlow:{flow_id}-WaitsOnBoth-1-0", f"SubFlow:{flow_id}-WaitsOnBoth-1-1"
    first_run = client.start_flow(parent, flow_id, 4, StartFlowOptions(
        config_override=FlowConfig(continue_as_new_threshold=1)))
    _armed(client, flow_id)
    assert client.wait_for_flow(quick_id).single_output(int) == 6
    quick_run = client.describe_flow(quick_id).run_id
    _armed(client, slow_id)
    assert client.describe_flow(flow_id).run_id != first_run, "a threshold of 1 rolls over at every commit"
    client.skip_timer(slow_id, StepExecutionId("Delays"), TimerId.by_condition_id(DELAY_TIMER))
    assert harness.result(flow_id).single_output(str).split("|") == [quick_id, "6", slow_id, "COMPLETED"]
    assert client.describe_flow(quick_id).run_id == quick_run
    earlier = client.search_flows(f"FlowId = '{flow_id}'", 100, include_continued_as_new=True).flows
    assert {entry.status for entry in earlier} == {FlowStatus.COMPLETED, FlowStatus.CONTINUED_AS_NEW}


class Holds(Step[int]):
    def wait_for(self, context: Context, input: int) -> Wait:
        return Wait.until(release.for_one())

    def execute(self, context: Context, input: int) -> StepDecision:
        return graceful_complete(f"{label.get(context)}|{release.results(context)[0]}|{extra.size(context)}")


class Holding(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Holds())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(label, release, extra)


def _publish(dex: DexFixture, flow_id: str, channel: str, value: int) -> None:
    with grpc.insecure_channel(dex.engine.address) as raw:
        stub = dex_pb2_grpc.FlowServiceStub(raw)
        stub.PublishToChannel(pb.PublishToChannelRequest(
            flow_id=flow_id, messages=[pb.ChannelMessage(channel_name=channel, value=pb.Value(int_value=value))]))


def test_a_triggered_rollover_keeps_the_flow_id_attributes_messages_and_the_wait(dex: DexFixture) -> None:
    flow = Holding(dex.flow_type())
    harness = dex.start(flow)
    client = harness.client
    flow_id = dex.flow_id()
    first_run = client.start_flow(flow, flow_id, 0, StartFlowOptions().with_attribute(label, "kept"))
    _publish(dex, flow_id, "Extra", 7)
    client.trigger_continue_as_new(flow_id)
    second_run = client.describe_flow(flow_id).run_id
    assert second_run != first_run
    assert client.describe_flow(flow_id).status is FlowStatus.RUNNING
    started = read_history(dex.engine.address, flow_id)[0].flow_started_or_continued
    assert started.continued_start.previous_run_id == first_run
    assert [kv.key for kv in started.continued_start.attributes] == ["Label"]
    assert [step.step_execution_id for step in started.continued_start.steps_to_resume] == ["Holds-1"]
    ended = read_history(dex.engine.address, flow_id, run_id=first_run)[-1].flow_closed
    assert (ended.flow_status, ended.continued_to_run_id) == (pb.FLOW_STATUS_CONTINUED_AS_NEW, second_run)
    assert [e.run_id for e in client.search_flows(f"FlowId = '{flow_id}'", 10).flows] == [second_run]
    _publish(dex, flow_id, "Release", 5)
    assert harness.result(flow_id).single_output(str) == "kept|5|1"
    with pytest.raises(FlowNotActiveOrNotFoundError):
        client.trigger_continue_as_new(flow_id)


class Counts(Step[int]):
    def execute(self, context: Context, input: int) -> StepDecision:
        return go_to(Counts, input + 1) if input < 60 else graceful_complete(input)


class Counting(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Counts())


def test_a_threshold_bounds_the_current_runs_history(dex: DexFixture, tmp_path: Path) -> None:
    require_local_engine(dex.engine, "reading the engine's database")
    from dex_agents.engine.run_history import run_history
    from dex_agents.engine.server import EngineServer

    server = EngineServer(tmp_path / "engine.db")
    server.start()
    dex.on_close(lambda: server.stop(None))
    flow = Counting(dex.flow_type())
    harness = dex.start(flow, address=server.address)
    flow_id = dex.flow_id()
    harness.client.start_flow(flow, flow_id, 0, StartFlowOptions(
        config_override=FlowConfig(continue_as_new_threshold=10)))
    assert harness.result(flow_id).single_output(int) == 60
    runs = run_history(tmp_path / "engine.db", flow_id)
    assert runs is not None
    assert runs.rollovers >= 10, "120 Step-method events over a threshold of 10"
    assert runs.current_run_events <= 10 + 4, "the threshold plus one transaction's events"
    assert len(set(runs.run_ids)) == len(runs.run_ids)


def test_update_flow_config_sets_a_threshold_on_a_running_flow(dex: DexFixture) -> None:
    flow = Holding(dex.flow_type())
    harness = dex.start(flow)
    client = harness.client
    flow_id = dex.flow_id()
    first_run = client.start_flow(flow, flow_id, 0)
    client.update_flow_config(flow_id, FlowConfig(continue_as_new_threshold=1))
    assert client.describe_flow(flow_id).run_id != first_run, "a history longer than the new threshold"
    with pytest.raises(DexServiceError, match="must not be negative"):
        client.update_flow_config(flow_id, FlowConfig(continue_as_new_threshold=-1))
    _publish(dex, flow_id, "Release", 1)
    assert harness.result(flow_id).single_output(str) == "None|1|0"


def test_time_travel_to_the_start_of_a_continued_run_restores_the_carried_state(dex: DexFixture) -> None:
    flow = Holding(dex.flow_type())
    harness = dex.start(flow)
    client = harness.client
    flow_id = dex.flow_id()
    client.start_flow(flow, flow_id, 0, StartFlowOptions().with_attribute(label, "carried"))
    _publish(dex, flow_id, "Extra", 7)
    client.trigger_continue_as_new(flow_id)
    continued = client.describe_flow(flow_id).run_id
    reset_run = client.time_travel(flow_id, TimeTravelOptions(TimeTravelType.BEGINNING, reason="after a rollover"))
    assert reset_run != continued
    assert client.describe_flow(flow_id).status is FlowStatus.RUNNING
    _publish(dex, flow_id, "Release", 3)
    assert harness.result(flow_id).single_output(str) == "carried|3|1"
