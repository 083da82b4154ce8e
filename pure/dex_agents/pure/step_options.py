"""Step options and Step movements as data: what the shell turns into ``dex.StepOptions`` and
``dex.StepMovement``.

Dex replaces a target's static options with a movement's options entirely (nothing is merged), so
every movement built here carries the *complete* options of its target: timeouts, retry policy,
SYNC durability on both methods, locks, state loads, and the failure route with its own complete
options. All durations are whole seconds (Dex rejects anything else).

Invariants:
    * ``step_options_for(step_type, step_input)`` is the single source of every Step's options; the
      shell uses it for static options too, so static and per-movement options never drift apart.
    * A tool Step and its failure route load only their own ``AgentToolCalls`` instance.
    * A failure route's options never carry a failure route of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias, assert_never, final

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.persistence import NO_INPUT_STEP_TYPES, TOOL_CALL_STEP_TYPES, AttributeName, MapName, StepType
from dex_agents.pure.policies import RETRYING_TOOL_ATTEMPTS, SINGLE_TOOL_ATTEMPT

RUN_MODEL_METHOD_TIMEOUT_SECONDS = 15 * 60
RUN_MODEL_HEARTBEAT_TIMEOUT_SECONDS = 2 * 60
RUN_MODEL_MAXIMUM_ATTEMPTS = 3
RUN_MODEL_TOTAL_DURATION_SECONDS = 30 * 60
RECORDING_BACKOFF_CAP_SECONDS = 5


@final
class Durability(StrEnum):
    """Dex Step durability of one method. The session always sets ``SYNC`` explicitly."""

    SYNC = "SYNC"
    ASYNC = "ASYNC"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RetrySpec:
    """A Dex ``RetryPolicy``; ``None`` fields use the server default. Durations are whole seconds."""

    maximum_attempts: int | None = None
    total_duration_seconds: int | None = None
    maximum_interval_seconds: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class MapInstanceRef:
    """One instance of an AttributeMap (to load it)."""

    name: MapName
    key: str


def _no_attributes() -> PVector[AttributeName]:
    return pvector()


def _no_maps() -> PVector[MapName]:
    return pvector()


def _no_instances() -> PVector[MapInstanceRef]:
    return pvector()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepOptionsSpec:
    """Complete options of one Step (a Dex ``StepOptions``). ``None`` timeouts use the server default."""

    execute_method_timeout_seconds: int | None = None
    heartbeat_timeout_seconds: int | None = None
    execute_retry: RetrySpec | None = None
    wait_for_durability: Durability = Durability.SYNC
    execute_durability: Durability = Durability.SYNC
    execute_lock_attributes: PVector[AttributeName] = field(default_factory=_no_attributes)
    wait_for_load_attribute_map_instances: PVector[MapInstanceRef] = field(default_factory=_no_instances)
    execute_load_attribute_maps: PVector[MapName] = field(default_factory=_no_maps)
    execute_load_attribute_map_instances: PVector[MapInstanceRef] = field(default_factory=_no_instances)
    failure_route: FailureRoute | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class FailureRoute:
    """Where Dex moves when ``execute`` runs out of attempts; the route receives the failed Step's input."""

    step_type: StepType
    options: StepOptionsSpec

    def __post_init__(self) -> None:
        if self.options.failure_route is not None:
            raise ValueError("a failure route's options must not carry another failure route")


MovementInput: TypeAlias = None | str | int
"""A Step input: ``None``, a tool call ID (``str``) or ``ResumeTurn``'s expected result count (``int``)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepMovement:
    """One Step to start, with its input and complete options (a Dex ``StepMovement``)."""

    step_type: StepType
    input: MovementInput
    options: StepOptionsSpec

    def __post_init__(self) -> None:
        problem = _movement_input_problem(self.step_type, self.input)
        if problem is not None:
            raise ValueError(problem)


def _movement_input_problem(step_type: StepType, step_input: MovementInput) -> str | None:
    if step_type is StepType.START_AGENT_SESSION:
        return "StartAgentSession is the start Step; nothing moves to it"
    if step_type in NO_INPUT_STEP_TYPES:
        return None if step_input is None else f"{step_type} takes no input, got {step_input!r}"
    if step_type in TOOL_CALL_STEP_TYPES:
        return None if isinstance(step_input, str) and step_input != "" else f"{step_type} takes a tool call ID"
    if isinstance(step_input, bool) or not isinstance(step_input, int) or step_input < 1:
        return f"{step_type} takes a positive result count, got {step_input!r}"
    return None


def _recording_options(load: PVector[MapInstanceRef], maps: PVector[MapName]) -> StepOptionsSpec:
    return StepOptionsSpec(
        execute_retry=RetrySpec(maximum_interval_seconds=RECORDING_BACKOFF_CAP_SECONDS),
        execute_load_attribute_maps=maps,
        execute_load_attribute_map_instances=load,
    )


def _tool_call_instance(tool_call_id: str) -> PVector[MapInstanceRef]:
    return pvector([MapInstanceRef(name=MapName.AGENT_TOOL_CALLS, key=tool_call_id)])


def _tool_step_options(tool_call_id: str, attempts: int, route: StepType) -> StepOptionsSpec:
    load = _tool_call_instance(tool_call_id)
    return StepOptionsSpec(
        execute_retry=RetrySpec(maximum_attempts=attempts),
        execute_load_attribute_map_instances=load,
        failure_route=FailureRoute(step_type=route, options=_recording_options(load, _no_maps())),
    )


def _record_turn_failure_options() -> StepOptionsSpec:
    return _recording_options(_no_instances(), pvector([MapName.AGENT_TOOL_CALLS]))


def step_options_for(step_type: StepType, tool_call_id: str | None = None) -> StepOptionsSpec:
    """Return the complete options of ``step_type`` (spec Step table, "Options" column).

    Args:
        step_type: The Step.
        tool_call_id: The call of a tool Step (``AwaitToolApproval``, ``CallTool``,
            ``CallSingleAttemptTool`` and the two recording routes); ignored for other Steps.

    Raises:
        ValueError: a tool Step without a tool call ID (a programmer error).
    """
    if step_type in TOOL_CALL_STEP_TYPES and not tool_call_id:
        raise ValueError(f"{step_type} options need the tool call ID")
    call_id = tool_call_id or ""
    match step_type:
        case StepType.START_AGENT_SESSION | StepType.AWAIT_USER_MESSAGE:
            return StepOptionsSpec()
        case StepType.RUN_MODEL:
            return StepOptionsSpec(
                execute_method_timeout_seconds=RUN_MODEL_METHOD_TIMEOUT_SECONDS,
                heartbeat_timeout_seconds=RUN_MODEL_HEARTBEAT_TIMEOUT_SECONDS,
                execute_retry=RetrySpec(
                    maximum_attempts=RUN_MODEL_MAXIMUM_ATTEMPTS, total_duration_seconds=RUN_MODEL_TOTAL_DURATION_SECONDS
                ),
                execute_load_attribute_maps=pvector([MapName.AGENT_MESSAGES, MapName.AGENT_TOOL_CALLS]),
                failure_route=FailureRoute(step_type=StepType.RECORD_TURN_FAILURE, options=_record_turn_failure_options()),
            )
        case StepType.AWAIT_TOOL_APPROVAL:
            load = _tool_call_instance(call_id)
            return StepOptionsSpec(
                execute_lock_attributes=pvector([AttributeName.PENDING_INTERRUPTS]),
                wait_for_load_attribute_map_instances=load,
                execute_load_attribute_map_instances=load,
            )
        case StepType.CALL_TOOL:
            return _tool_step_options(call_id, RETRYING_TOOL_ATTEMPTS, StepType.RECORD_TOOL_FAILURE)
        case StepType.CALL_SINGLE_ATTEMPT_TOOL:
            return _tool_step_options(call_id, SINGLE_TOOL_ATTEMPT, StepType.RECORD_TOOL_OUTCOME_UNKNOWN)
        case StepType.RECORD_TOOL_FAILURE | StepType.RECORD_TOOL_OUTCOME_UNKNOWN:
            return _recording_options(_tool_call_instance(call_id), _no_maps())
        case StepType.RESUME_TURN:
            return StepOptionsSpec(execute_load_attribute_maps=pvector([MapName.AGENT_TOOL_CALLS]))
        case StepType.RECORD_TURN_FAILURE:
            return _record_turn_failure_options()
        case _:
            assert_never(step_type)


def move_to(step_type: StepType, step_input: MovementInput = None) -> StepMovement:
    """Return a movement to ``step_type`` with ``step_input`` and its complete options.

    Raises:
        ValueError: the input does not fit the Step (a programmer error).
    """
    tool_call_id = step_input if isinstance(step_input, str) else None
    return StepMovement(step_type=step_type, input=step_input, options=step_options_for(step_type, tool_call_id))


__all__ = [
    "RECORDING_BACKOFF_CAP_SECONDS",
    "RUN_MODEL_HEARTBEAT_TIMEOUT_SECONDS",
    "RUN_MODEL_MAXIMUM_ATTEMPTS",
    "RUN_MODEL_METHOD_TIMEOUT_SECONDS",
    "RUN_MODEL_TOTAL_DURATION_SECONDS",
    "Durability",
    "FailureRoute",
    "MapInstanceRef",
    "MovementInput",
    "RetrySpec",
    "StepMovement",
    "StepOptionsSpec",
    "move_to",
    "step_options_for",
]
