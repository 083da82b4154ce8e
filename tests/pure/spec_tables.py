"""The spec's Step and Effects tables, written out independently of the code under test, so the state
machine checks every movement it receives against the spec rather than against the core's own tables."""

from __future__ import annotations

from collections.abc import Mapping

from dex_agents.pure.values.persistence import AttributeName, MapName, StepType
from dex_agents.pure.values.runner import ResolvedToolPolicy, ToolPolicy
from dex_agents.pure.flow.rows import Durability, MapInstanceRef
from dex_agents.pure.flow.step_options import StepMovement, StepOptionsSpec
from dex_agents.pure.values.session import ToolCallStatus, ToolEffect

TOOL_STEP_BY_EFFECT: dict[ToolEffect, StepType] = {
    ToolEffect.READ: StepType.CALL_TOOL,
    ToolEffect.IDEMPOTENT_WRITE: StepType.CALL_TOOL,
    ToolEffect.NON_IDEMPOTENT_WRITE: StepType.CALL_SINGLE_ATTEMPT_TOOL,
    ToolEffect.UNCLASSIFIED: StepType.CALL_SINGLE_ATTEMPT_TOOL,
}
"""Effects table, "Step" column."""

EXHAUSTED_STATUS_BY_EFFECT: dict[ToolEffect, ToolCallStatus] = {
    ToolEffect.READ: ToolCallStatus.FAILED,
    ToolEffect.IDEMPOTENT_WRITE: ToolCallStatus.OUTCOME_UNKNOWN,
    ToolEffect.NON_IDEMPOTENT_WRITE: ToolCallStatus.OUTCOME_UNKNOWN,
    ToolEffect.UNCLASSIFIED: ToolCallStatus.OUTCOME_UNKNOWN,
}
"""Effects table, "Crash mid-call" column: the record after the last attempt."""

TOOL_STEP_TYPES = frozenset({StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL})
RECORDING_STEP_TYPES = frozenset({StepType.RECORD_TOOL_FAILURE, StepType.RECORD_TOOL_OUTCOME_UNKNOWN, StepType.RECORD_TURN_FAILURE})


def _check_durability(options: StepOptionsSpec) -> None:
    assert options.execute_durability is Durability.SYNC and options.wait_for_durability is Durability.SYNC, (
        "every Step method sets SYNC durability explicitly"
    )


def _check_recording_route(options: StepOptionsSpec) -> None:
    _check_durability(options)
    assert options.execute_retry is not None and options.execute_retry.maximum_interval_seconds == 5, "backoff capped at 5 s"
    assert options.failure_route is None


def check_movement_against_spec(movement: StepMovement) -> None:
    """Assert a movement's complete options are the spec Step table's "Options" column for its Step."""
    options = movement.options
    _check_durability(options)
    own_instance = [MapInstanceRef(name=MapName.AGENT_TOOL_CALLS, key=str(movement.input))]
    match movement.step_type:
        case StepType.RUN_MODEL:
            assert options.execute_method_timeout_seconds == 15 * 60 and options.heartbeat_timeout_seconds == 2 * 60
            retry = options.execute_retry
            assert retry is not None and retry.maximum_attempts == 3 and retry.total_duration_seconds == 30 * 60
            route = options.failure_route
            assert route is not None and route.step_type is StepType.RECORD_TURN_FAILURE
            _check_recording_route(route.options)
        case (StepType.CALL_TOOL | StepType.CALL_SINGLE_ATTEMPT_TOOL | StepType.RECONCILE_TOOL_OUTCOME
              | StepType.AWAIT_SUB_AGENT):
            attempts, route_type = (
                (1, StepType.RECORD_TOOL_OUTCOME_UNKNOWN)
                if movement.step_type is StepType.CALL_SINGLE_ATTEMPT_TOOL
                else (3, StepType.RECORD_TOOL_OUTCOME_UNKNOWN if movement.step_type is StepType.RECONCILE_TOOL_OUTCOME
                      else StepType.RECORD_TOOL_FAILURE)
            )
            assert options.execute_retry is not None and options.execute_retry.maximum_attempts == attempts
            assert list(options.execute_load_attribute_map_instances) == own_instance, "a tool Step loads only its call"
            assert not options.execute_load_attribute_maps
            route = options.failure_route
            assert route is not None and route.step_type is route_type
            _check_recording_route(route.options)
            assert list(route.options.execute_load_attribute_map_instances) == own_instance
        case StepType.COMPACT_HISTORY:
            assert list(options.execute_lock_attributes) == [AttributeName.HISTORY_SUMMARY], "locks HistorySummary"
            route = options.failure_route
            assert route is not None and route.step_type is StepType.RECORD_TURN_FAILURE
        case StepType.AWAIT_TOOL_APPROVAL:
            assert list(options.execute_lock_attributes) == [AttributeName.PENDING_INTERRUPTS], "locks PendingInterrupts"
            assert list(options.execute_load_attribute_map_instances) == own_instance
        case StepType.AWAIT_USER_MESSAGE | StepType.RESUME_TURN:
            assert options.failure_route is None
        case (StepType.RECORD_TOOL_FAILURE | StepType.RECORD_TOOL_OUTCOME_UNKNOWN | StepType.RECORD_TURN_FAILURE
              | StepType.CANCEL_TURN | StepType.RECORD_TOOL_CANCELLATION):
            _check_recording_route(options)
        case StepType.START_AGENT_SESSION:
            raise AssertionError("nothing moves to StartAgentSession")


APPROVAL_BY_DEFAULT: dict[ToolEffect, bool] = {
    ToolEffect.READ: False,
    ToolEffect.IDEMPOTENT_WRITE: False,
    ToolEffect.NON_IDEMPOTENT_WRITE: True,
    ToolEffect.UNCLASSIFIED: True,
}
"""Effects table, "Default approval" column."""


def expected_policy(
    tool_name: str, framework_effect: ToolEffect | None, policies: Mapping[str, ToolPolicy], default_effect: ToolEffect
) -> ResolvedToolPolicy:
    """The spec's precedence: the tool's ``ToolPolicy``, then the framework effect, then ``defaultToolEffect``;
    ``requiresApproval`` from the policy when it sets one, else the effect's default."""
    policy = policies.get(tool_name)
    effect = policy.effect if policy is not None else framework_effect if framework_effect is not None else default_effect
    explicit = None if policy is None else policy.requires_approval
    return ResolvedToolPolicy(effect=effect, requires_approval=APPROVAL_BY_DEFAULT[effect] if explicit is None else explicit)
