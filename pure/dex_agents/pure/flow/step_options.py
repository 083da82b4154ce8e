"""Step options and Step movements as data, computed from the flow table: what the shell turns into
``dex.StepOptions`` and ``dex.StepMovement``.

Dex replaces a target's static options with a movement's options entirely (nothing is merged), so
every movement built here carries the *complete* options of its target: timeouts, retry policy,
durability on both methods, locks, state loads, and the failure route with its own complete options.

Invariants:
    * ``step_options_for(step_type, tool_call_id)`` is the single source of every Step's options, and
      it only reads ``flow.table.STEP_TABLE``; the shell uses it for static options too, so static and
      per-movement options never drift apart.
    * A failure route's options never carry a failure route of their own.
    * A movement's input fits its Step's input kind (checked on construction).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TypeAlias, assert_never, final

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.values.session import CompactionTrigger
from dex_agents.pure.flow.rows import Durability, MapInstanceRef, RetrySpec, StepInputKind
from dex_agents.pure.flow.table import STEP_TABLE
from dex_agents.pure.values.persistence import AttributeName, MapName, StepType


def _no_attributes() -> PVector[AttributeName]:
    return pvector()


def _no_maps() -> PVector[MapName]:
    return pvector()


def _no_instances() -> PVector[MapInstanceRef]:
    return pvector()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepOptionsSpec:
    """Complete options of one Step (a Dex ``StepOptions``). ``None`` timeouts use the server default.

    ``execute_cached_maps`` are maps of ``execute_load_attribute_maps`` a Worker may serve from its cache
    of committed instances (``flow_rows.MethodAccess.cached_maps``): the shell loads only the instances
    its cache lacks instead of the whole map.
    """

    execute_method_timeout_seconds: int | None = None
    heartbeat_timeout_seconds: int | None = None
    execute_retry: RetrySpec | None = None
    wait_for_durability: Durability = Durability.SYNC
    execute_durability: Durability = Durability.SYNC
    execute_lock_attributes: PVector[AttributeName] = field(default_factory=_no_attributes)
    wait_for_load_attribute_map_instances: PVector[MapInstanceRef] = field(default_factory=_no_instances)
    execute_load_attribute_maps: PVector[MapName] = field(default_factory=_no_maps)
    execute_load_attribute_map_instances: PVector[MapInstanceRef] = field(default_factory=_no_instances)
    execute_cached_maps: PVector[MapName] = field(default_factory=_no_maps)
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
    kind = STEP_TABLE[step_type].input
    match kind:
        case StepInputKind.START_INPUT:
            return f"{step_type} is the start Step; nothing moves to it"
        case StepInputKind.NONE:
            return None if step_input is None else f"{step_type} takes no input, got {step_input!r}"
        case StepInputKind.TOOL_CALL_ID:
            return None if isinstance(step_input, str) and step_input != "" else f"{step_type} takes a tool call ID"
        case StepInputKind.COMPACTION_TRIGGER:
            if step_input not in tuple(CompactionTrigger):  # a StrEnum member equals its value
                return f"{step_type} takes a compaction trigger, got {step_input!r}"
            return None
        case StepInputKind.RESULT_COUNT:
            if isinstance(step_input, bool) or not isinstance(step_input, int) or step_input < 1:
                return f"{step_type} takes a positive result count, got {step_input!r}"
            return None
        case _:
            assert_never(kind)


def _options(step_type: StepType, tool_call_id: str | None) -> StepOptionsSpec:
    row = STEP_TABLE[step_type]
    execute = row.execute
    route = None
    if row.failure_route is not None:
        route = FailureRoute(step_type=row.failure_route, options=_options(row.failure_route, tool_call_id))
    return StepOptionsSpec(
        execute_method_timeout_seconds=row.execute_method_timeout_seconds,
        heartbeat_timeout_seconds=row.heartbeat_timeout_seconds,
        execute_retry=row.execute_retry,
        wait_for_durability=row.durability,
        execute_durability=row.durability,
        execute_lock_attributes=pvector(execute.locks),
        wait_for_load_attribute_map_instances=pvector(row.wait_for.instances(tool_call_id)),
        execute_load_attribute_maps=pvector(execute.maps),
        execute_load_attribute_map_instances=pvector(execute.instances(tool_call_id)),
        execute_cached_maps=pvector(execute.cached_maps),
        failure_route=route,
    )


def step_options_for(step_type: StepType, tool_call_id: str | None = None) -> StepOptionsSpec:
    """Return the complete options of ``step_type`` (its row of the flow table).

    Args:
        step_type: The Step.
        tool_call_id: The call of a Step whose input is a tool call ID (``AwaitToolApproval``,
            ``CallTool``, ``CallSingleAttemptTool`` and the two recording routes); ignored otherwise.

    Raises:
        ValueError: a tool call Step without a tool call ID (a programmer error).
    """
    takes_call = STEP_TABLE[step_type].input is StepInputKind.TOOL_CALL_ID
    if takes_call and not tool_call_id:
        raise ValueError(f"{step_type} options need the tool call ID")
    return _options(step_type, tool_call_id if takes_call else None)


RetryOverrides: TypeAlias = Mapping[StepType, RetrySpec]
"""Retry options that replace the rows' for some Step types (a Flow's ``model_retry``)."""


def with_retries(options: StepOptionsSpec, step_type: StepType, retries: RetryOverrides) -> StepOptionsSpec:
    """``options`` of ``step_type`` with its retry replaced when ``retries`` names it (its failure
    route's too, for the route's own Step type); the same object when nothing changes."""
    route = options.failure_route
    new_route = route
    if route is not None:
        route_options = with_retries(route.options, route.step_type, retries)
        if route_options is not route.options:
            new_route = FailureRoute(step_type=route.step_type, options=route_options)
    retry = retries.get(step_type, options.execute_retry)
    if retry == options.execute_retry and new_route is route:
        return options
    return replace(options, execute_retry=retry, failure_route=new_route)


def movement_with_retries(movement: StepMovement, retries: RetryOverrides) -> StepMovement:
    """``movement`` with its options' retry replaced where ``retries`` says (``with_retries``)."""
    if not retries:
        return movement
    options = with_retries(movement.options, movement.step_type, retries)
    return movement if options is movement.options else replace(movement, options=options)


def move_to(step_type: StepType, step_input: MovementInput = None) -> StepMovement:
    """Return a movement to ``step_type`` with ``step_input`` and its complete options.

    Raises:
        ValueError: the input does not fit the Step (a programmer error).
    """
    tool_call_id = step_input if isinstance(step_input, str) else None
    return StepMovement(step_type=step_type, input=step_input, options=step_options_for(step_type, tool_call_id))


__all__ = [
    "FailureRoute",
    "MovementInput",
    "RetryOverrides",
    "StepMovement",
    "StepOptionsSpec",
    "move_to",
    "movement_with_retries",
    "step_options_for",
    "with_retries",
]
