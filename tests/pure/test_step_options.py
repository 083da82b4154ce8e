"""Step options as data: the spec's Options column, complete options on every movement, and the
persisted names and effect records that refuse values of the wrong kind."""

from __future__ import annotations

import pytest
from pyrsistent import pvector

from dex_agents.pure.machine.effects import PublishToChannel, SetAttribute, SetMapInstance
from dex_agents.pure.machine.endings import GoToSteps
from dex_agents.pure.flow.rows import Durability, MapInstanceRef, RetrySpec
from dex_agents.pure.values.persistence import (
    AGENT_STATE,
    AGENT_TOOL_CALLS,
    AGENT_USAGE,
    FRAMEWORK_RUN_STATE,
    PENDING_INTERRUPTS,
    QUEUED_USER_MESSAGES,
    TOOL_CALL_RESULTS,
    AttributeKey,
    AttributeName,
    ChannelMapName,
    ChannelName,
    MapName,
    RpcName,
    StepType,
    StreamName,
)
from dex_agents.pure.flow.step_options import (
    FailureRoute,
    StepMovement,
    StepOptionsSpec,
    move_to,
    step_options_for,
)
from dex_agents.pure.values.session import AgentUsage, AgentUserMessage, ToolCallCompleted

from tests.pure.scenario_support import user_message


def test_run_model_options_match_the_spec() -> None:
    options = step_options_for(StepType.RUN_MODEL)
    assert options.execute_method_timeout_seconds == 15 * 60
    assert options.heartbeat_timeout_seconds == 2 * 60
    assert options.execute_retry == RetrySpec(maximum_attempts=3, total_duration_seconds=30 * 60)
    assert list(options.execute_load_attribute_maps) == [MapName.AGENT_MESSAGES, MapName.AGENT_TOOL_CALLS]
    route = options.failure_route
    assert route is not None and route.step_type is StepType.RECORD_TURN_FAILURE
    assert route.options.execute_retry == RetrySpec(maximum_interval_seconds=5)
    assert route.options.execute_durability is Durability.SYNC


def test_await_tool_approval_locks_pending_interrupts_in_execute() -> None:
    options = step_options_for(StepType.AWAIT_TOOL_APPROVAL, "c1")
    assert list(options.execute_lock_attributes) == [AttributeName.PENDING_INTERRUPTS]
    instance = MapInstanceRef(name=MapName.AGENT_TOOL_CALLS, key="c1")
    assert list(options.wait_for_load_attribute_map_instances) == [instance]
    assert list(options.execute_load_attribute_map_instances) == [instance]


@pytest.mark.parametrize(
    ("step_type", "attempts", "route"),
    [
        (StepType.CALL_TOOL, 3, StepType.RECORD_TOOL_FAILURE),
        (StepType.CALL_SINGLE_ATTEMPT_TOOL, 1, StepType.RECORD_TOOL_OUTCOME_UNKNOWN),
    ],
)
def test_tool_steps_and_their_routes_load_only_their_own_record(
    step_type: StepType, attempts: int, route: StepType
) -> None:
    options = step_options_for(step_type, "c1")
    assert options.execute_retry == RetrySpec(maximum_attempts=attempts)
    assert options.failure_route is not None and options.failure_route.step_type is route
    assert options.failure_route.options == step_options_for(route, "c1")
    assert list(options.execute_load_attribute_maps) == []


@pytest.mark.parametrize("step_type", [StepType.RECORD_TOOL_FAILURE, StepType.RECORD_TOOL_OUTCOME_UNKNOWN, StepType.RECORD_TURN_FAILURE])
def test_recording_steps_cap_their_retry_backoff_at_five_seconds(step_type: StepType) -> None:
    retry = step_options_for(step_type, "c1").execute_retry
    assert retry is not None and retry.maximum_interval_seconds == 5


@pytest.mark.parametrize("step_type", list(StepType))
def test_every_step_sets_sync_durability_on_both_methods(step_type: StepType) -> None:
    options = step_options_for(step_type, "c1")
    assert (options.wait_for_durability, options.execute_durability) == (Durability.SYNC, Durability.SYNC)


def test_resume_turn_loads_the_records_to_recount_them() -> None:
    assert list(step_options_for(StepType.RESUME_TURN).execute_load_attribute_maps) == [MapName.AGENT_TOOL_CALLS]


@pytest.mark.parametrize(
    ("step_type", "step_input"),
    [
        (StepType.START_AGENT_SESSION, None),
        (StepType.RUN_MODEL, "c1"),
        (StepType.CALL_TOOL, None),
        (StepType.CALL_TOOL, ""),
        (StepType.RESUME_TURN, 0),
        (StepType.RESUME_TURN, True),
        (StepType.RESUME_TURN, "3"),
    ],
)
def test_a_movement_refuses_an_input_that_does_not_fit_its_step(step_type: StepType, step_input: object) -> None:
    with pytest.raises(ValueError):
        StepMovement(step_type=step_type, input=step_input, options=StepOptionsSpec())  # type: ignore[arg-type]


def test_tool_step_options_need_the_tool_call_id() -> None:
    with pytest.raises(ValueError, match="tool call ID"):
        step_options_for(StepType.CALL_TOOL)


def test_a_failure_route_cannot_chain_another_route() -> None:
    inner = FailureRoute(step_type=StepType.RECORD_TOOL_FAILURE, options=StepOptionsSpec())
    with pytest.raises(ValueError, match="another failure route"):
        FailureRoute(step_type=StepType.RECORD_TOOL_FAILURE, options=StepOptionsSpec(failure_route=inner))


def test_move_to_builds_complete_options() -> None:
    movement = move_to(StepType.CALL_TOOL, "c9")
    assert movement.options == step_options_for(StepType.CALL_TOOL, "c9")
    assert move_to(StepType.RESUME_TURN, 2).input == 2


def test_persisted_names_are_the_specs_plus_ours() -> None:
    assert [n.value for n in AttributeName] == [
        "AgentState", "FrameworkRunState", "PendingInterrupts", "AgentUsage", "TurnModelCallCount", "HistorySummary",
        "CompactionRequested", "TurnCancellation"]
    assert [n.value for n in MapName] == ["AgentMessages", "AgentToolCalls", "UserMessageReceipts", "SessionRewinds",
                                          "UnknownToolOutcomes", "ToolCallCancellations"]
    assert [n.value for n in ChannelName] == ["QueuedUserMessages", "ToolCallResults"]
    assert [n.value for n in ChannelMapName] == ["InterruptResolutions"]
    assert [n.value for n in StreamName] == ["AgentEvents"]
    assert [n.value for n in RpcName] == [
        "send_user_message",
        "resolve_interrupt",
        "get_agent_snapshot",
        "list_agent_messages",
        "send_user_message_once",
        "compact_history",
        "extend_interrupt_deadline",
        "record_session_rewind",
        "cancel_turn",
        "cancel_tool_call",
        "resolve_tool_outcome",
    ]
    assert {s.value for s in StepType} == {
        "StartAgentSession",
        "AwaitUserMessage",
        "RunModel",
        "AwaitToolApproval",
        "CallTool",
        "CallSingleAttemptTool",
        "RecordToolFailure",
        "RecordToolOutcomeUnknown",
        "ResumeTurn",
        "RecordTurnFailure",
        "CompactHistory",
        "ReconcileToolOutcome",
        "CancelTurn",
        "RecordToolCancellation",
        "AwaitSubAgent",
    }


@pytest.mark.parametrize(
    ("attribute", "value"),
    [
        (AGENT_STATE, AgentUsage()),
        (FRAMEWORK_RUN_STATE, AgentUsage()),
        (AGENT_USAGE, "x"),
        (PENDING_INTERRUPTS, "x"),
    ],
)
def test_set_attribute_refuses_a_value_of_another_attribute(attribute: AttributeKey[object], value: object) -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        SetAttribute(attribute=attribute, value=value)


def test_set_attribute_accepts_the_attributes_own_type() -> None:
    assert SetAttribute.of(PENDING_INTERRUPTS, pvector()).value == pvector()
    assert SetAttribute.of(FRAMEWORK_RUN_STATE, "rs").value == "rs"


def test_map_and_channel_effects_refuse_values_of_another_kind() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        SetMapInstance.of(AGENT_TOOL_CALLS, "k", user_message("x"))  # type: ignore[misc]
    with pytest.raises(ValueError, match="cannot carry"):
        PublishToChannel.of(TOOL_CALL_RESULTS, AgentUserMessage(text="x"))  # type: ignore[misc]
    with pytest.raises(ValueError, match="cannot carry"):
        PublishToChannel.of(QUEUED_USER_MESSAGES, ToolCallCompleted(tool_call_id="c"))  # type: ignore[misc]


def test_go_to_steps_needs_a_movement() -> None:
    with pytest.raises(ValueError, match="at least one movement"):
        GoToSteps(movements=pvector())


def test_pending_interrupts_must_be_a_vector_of_interrupts() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        SetAttribute.of(PENDING_INTERRUPTS, pvector([AgentUsage()]))  # type: ignore[misc]
