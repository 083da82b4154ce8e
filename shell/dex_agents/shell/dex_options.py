"""The pure core's Step options, movements, flow-table waits and RPC rows as the SDK's objects
(``StepOptions``, ``StepMovement``, ``Wait``, ``@rpc`` arguments): the Dex side of
``dex_agents.pure.flow.step_options`` and ``flow.table``.

A pure translation: every field of ``StepOptionsSpec`` maps to one ``StepOptions`` field, durations
are whole seconds, names become the module-level definitions, a Step's fixed wait is its row's, and an
RPC's name, locks and loads come from its row of ``flow.table.RPC_TABLE``. Nothing is decided here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, Final, TypeAlias, TypeVar, assert_never

from dex import AttributeMapLoad, FlowConfig, RetryPolicy, Step, StepDurability, StepMovement, StepOptions, Wait, rpc

from dex_agents.pure.flow.rows import (
    Durability,
    ForChildSession,
    ForInputCountMessages,
    ForOneMessage,
    ForResolutionOrDeadline,
    NoWait,
    RetrySpec,
)
from dex_agents.pure.flow.table import RPC_TABLE, STEP_TABLE
from dex_agents.pure.values.persistence import MapName, RpcName, StepType
from dex_agents.pure.flow.step_options import StepMovement as MovementSpec
from dex_agents.pure.flow.step_options import StepOptionsSpec
from dex_agents.shell.definitions import CHANNELS, MAPS, attribute_lock, map_instance_load

StepClassOf: TypeAlias = Callable[[StepType], type[Step[Any]]]
"""Resolves a Step type to the Step class registered for it (movement targets are classes)."""

CachedLoads: TypeAlias = Callable[[MapName], tuple[AttributeMapLoad, ...]]
"""The instance loads of a cached map (``execute_cached_maps``) a movement's target needs: those the
moving Worker's cache of committed instances lacks."""


DEFAULT_CONTINUE_AS_NEW_THRESHOLD: Final = 10_000
"""History events after which a session's run continues as new (``FlowConfig.continue_as_new_threshold``;
``SessionClient.start`` sets it): the Flow ID stays, Attributes and waits carry over, and the history
the engine keeps for the current run stays bounded however long the session lives."""


def session_flow_config(config: FlowConfig | None = None) -> FlowConfig:
    """``config`` (or an empty one) with the session's continue-as-new threshold unless it sets one."""
    if config is None:
        return FlowConfig(continue_as_new_threshold=DEFAULT_CONTINUE_AS_NEW_THRESHOLD)
    if config.continue_as_new_threshold is not None:
        return config
    return replace(config, continue_as_new_threshold=DEFAULT_CONTINUE_AS_NEW_THRESHOLD)


def _seconds(seconds: int | None) -> timedelta | None:
    return None if seconds is None else timedelta(seconds=seconds)


def _retry(spec: RetrySpec | None) -> RetryPolicy | None:
    if spec is None:
        return None
    return RetryPolicy(
        maximum_attempts=spec.maximum_attempts or 0,
        total_duration=_seconds(spec.total_duration_seconds),
        maximum_interval=_seconds(spec.maximum_interval_seconds),
        initial_interval=_seconds(spec.initial_interval_seconds),
    )


HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])


def dex_durability(durability: Durability) -> StepDurability:
    match durability:
        case Durability.SYNC:
            return StepDurability.SYNC
        case Durability.ASYNC:
            return StepDurability.ASYNC
        case _:
            assert_never(durability)


def dex_step_options(spec: StepOptionsSpec, step_class_of: StepClassOf,
                     cached_loads: CachedLoads | None = None) -> StepOptions:
    """The SDK ``StepOptions`` of ``spec``, its failure route included. With ``cached_loads``, a cached map
    loads only the instances it names instead of the whole map (without: the whole map)."""
    cached = frozenset(spec.execute_cached_maps) if cached_loads is not None else frozenset()
    options = StepOptions(
        execute_method_timeout=_seconds(spec.execute_method_timeout_seconds),
        heartbeat_timeout=_seconds(spec.heartbeat_timeout_seconds),
        execute_retry=_retry(spec.execute_retry),
        wait_for_durability=dex_durability(spec.wait_for_durability),
        execute_durability=dex_durability(spec.execute_durability),
        execute_lock_attributes=tuple(attribute_lock(name) for name in spec.execute_lock_attributes),
        wait_for_load_attribute_map_instances=tuple(
            map_instance_load(ref.name, ref.key) for ref in spec.wait_for_load_attribute_map_instances
        ),
        execute_load_attribute_maps=tuple(MAPS[name] for name in spec.execute_load_attribute_maps if name not in cached),
        execute_load_attribute_map_instances=(
            *(map_instance_load(ref.name, ref.key) for ref in spec.execute_load_attribute_map_instances),
            *(load for name in spec.execute_load_attribute_maps if name in cached
              for load in (cached_loads(name) if cached_loads is not None else ())),
        ),
    )
    route = spec.failure_route
    if route is None:
        return options
    return options.on_execute_failure_proceed_to(
        step_class_of(route.step_type), dex_step_options(route.options, step_class_of, cached_loads)
    )


def dex_movement(movement: MovementSpec, step_class_of: StepClassOf,
                 cached_loads: CachedLoads | None = None) -> StepMovement[Any]:
    """The SDK ``StepMovement`` of one pure movement, with its complete options (``cached_loads``: see
    ``dex_step_options``)."""
    options = dex_step_options(movement.options, step_class_of, cached_loads)
    return StepMovement.of(step_class_of(movement.step_type), movement.input, options=options)


def dex_wait(step_type: StepType, step_input: int | None = None) -> Wait:
    """The ``Wait`` of a Step whose row fixes it: one message on a Channel, or as many as the Step's
    input (a result count) says. ``AwaitToolApproval``'s wait is the core's (``perform.perform_wait``).

    Raises:
        ValueError: the row has no fixed wait (a programmer error).
    """
    wait = STEP_TABLE[step_type].wait
    match wait:
        case ForOneMessage(channel=channel):
            return Wait.until(CHANNELS[channel].for_one())
        case ForInputCountMessages(channel=channel) if step_input is not None:
            return Wait.until(CHANNELS[channel].for_n(step_input))
        case ForInputCountMessages() | ForResolutionOrDeadline() | ForChildSession() | NoWait():
            raise ValueError(f"{step_type} has no fixed wait for input {step_input!r}: {wait}")
        case _:
            assert_never(wait)


def session_rpc(name: RpcName) -> Callable[[HandlerT], HandlerT]:
    """The ``@rpc`` decorator of the RPC ``name``: its protocol name, locks and loads from its row (a
    cached map is not loaded: the handler reads it through the Worker's cache, ``shell.history``)."""
    access = RPC_TABLE[name].access
    if access.call_instances:
        raise ValueError(f"RPC {name} has no tool call whose instances it could load")
    return rpc(
        name=name.value,
        lock_attributes=tuple(attribute_lock(attribute) for attribute in access.locks),
        load_attribute_maps=tuple(MAPS[name] for name in access.maps if name not in access.cached_maps),
    )


__all__ = [
    "DEFAULT_CONTINUE_AS_NEW_THRESHOLD",
    "CachedLoads",
    "StepClassOf",
    "dex_durability",
    "dex_movement",
    "dex_step_options",
    "dex_wait",
    "session_flow_config",
    "session_rpc",
]
