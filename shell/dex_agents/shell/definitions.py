"""The session's Dex persistence definitions, one object per persisted name, built from the pure
core's typed keys (``dex_agents.pure.values.persistence``).

Attributes, AttributeMaps, Channels and the ChannelMap are module-level: the SDK allows one
definition object in several Flows, and ``@rpc`` lock and load arguments are evaluated when the
Flow class is defined. A Stream may belong to one Flow only, so ``event_stream`` makes one per Flow.

Invariants:
    * Every definition's name and value type come from its key (nothing here names a type), and every
      value type has a codec in ``SESSION_CODECS`` (built from the same keys).
    * ``attribute_of(key)`` and its siblings return the one definition of ``key``, typed by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar, cast

from dex import Attribute, AttributeLock, AttributeMap, AttributeMapLoad, Channel, ChannelMap, Stream

from dex_agents.pure.values import persistence
from dex_agents.pure.values.persistence import (
    PERSISTED_KEYS,
    AttributeKey,
    AttributeName,
    ChannelKey,
    ChannelMapKey,
    ChannelMapName,
    ChannelName,
    MapKey,
    MapName,
    StreamKey,
)
from dex_agents.pure.values.session import AgentEvent
from dex_agents.shell.codecs import value_type_of

T = TypeVar("T")

AnyDefinition = Attribute[Any] | AttributeMap[Any] | Channel[Any] | ChannelMap[Any]
"""A definition the Flows share (everything but the Stream)."""


def _definition(key: object) -> AnyDefinition | None:
    match key:
        case AttributeKey(name=name, value_type=value_type):
            return Attribute(name.value, value_type_of(value_type))
        case MapKey(name=name, value_type=value_type):
            return AttributeMap(name.value, value_type_of(value_type))
        case ChannelKey(name=name, value_type=value_type):
            return Channel(name.value, value_type_of(value_type))
        case ChannelMapKey(name=name, value_type=value_type):
            return ChannelMap(name.value, value_type_of(value_type))
        case StreamKey():
            return None
        case _:
            raise TypeError(f"not a persisted key: {key!r}")


SCHEMA_DEFINITIONS: Final[tuple[AnyDefinition, ...]] = tuple(
    definition for definition in map(_definition, PERSISTED_KEYS) if definition is not None
)
"""Every definition of a session Flow's schema except its own Stream, in the spec's table order."""

ATTRIBUTES: Final[Mapping[AttributeName, Attribute[Any]]] = {
    AttributeName(d.name): d for d in SCHEMA_DEFINITIONS if isinstance(d, Attribute)
}
"""Singleton Attribute definitions by name."""

MAPS: Final[Mapping[MapName, AttributeMap[Any]]] = {
    MapName(d.name): d for d in SCHEMA_DEFINITIONS if isinstance(d, AttributeMap)
}
"""AttributeMap definitions by name."""

CHANNELS: Final[Mapping[ChannelName, Channel[Any]]] = {
    ChannelName(d.name): d for d in SCHEMA_DEFINITIONS if isinstance(d, Channel)
}
"""Channel definitions by name."""

CHANNEL_MAPS: Final[Mapping[ChannelMapName, ChannelMap[Any]]] = {
    ChannelMapName(d.name): d for d in SCHEMA_DEFINITIONS if isinstance(d, ChannelMap)
}
"""ChannelMap definitions by name."""


def attribute_of(key: AttributeKey[T]) -> Attribute[T]:
    """The Attribute definition of ``key``."""
    return cast(Attribute[T], ATTRIBUTES[key.name])


def map_of(key: MapKey[T]) -> AttributeMap[T]:
    """The AttributeMap definition of ``key``."""
    return cast(AttributeMap[T], MAPS[key.name])


def channel_of(key: ChannelKey[T]) -> Channel[T]:
    """The Channel definition of ``key``."""
    return cast(Channel[T], CHANNELS[key.name])


def channel_map_of(key: ChannelMapKey[T]) -> ChannelMap[T]:
    """The ChannelMap definition of ``key``."""
    return cast(ChannelMap[T], CHANNEL_MAPS[key.name])


AGENT_STATE: Final = attribute_of(persistence.AGENT_STATE)
FRAMEWORK_RUN_STATE: Final = attribute_of(persistence.FRAMEWORK_RUN_STATE)
PENDING_INTERRUPTS: Final = attribute_of(persistence.PENDING_INTERRUPTS)
AGENT_USAGE: Final = attribute_of(persistence.AGENT_USAGE)
TURN_MODEL_CALL_COUNT: Final = attribute_of(persistence.TURN_MODEL_CALL_COUNT)
HISTORY_SUMMARY: Final = attribute_of(persistence.HISTORY_SUMMARY)
COMPACTION_REQUESTED: Final = attribute_of(persistence.COMPACTION_REQUESTED)
AGENT_MESSAGES: Final = map_of(persistence.AGENT_MESSAGES)
AGENT_TOOL_CALLS: Final = map_of(persistence.AGENT_TOOL_CALLS)
USER_MESSAGE_RECEIPTS: Final = map_of(persistence.USER_MESSAGE_RECEIPTS)
UNKNOWN_TOOL_OUTCOMES: Final = map_of(persistence.UNKNOWN_TOOL_OUTCOMES)
TURN_CANCELLATION: Final = attribute_of(persistence.TURN_CANCELLATION)
TOOL_CALL_CANCELLATIONS: Final = map_of(persistence.TOOL_CALL_CANCELLATIONS)
QUEUED_USER_MESSAGES: Final = channel_of(persistence.QUEUED_USER_MESSAGES)
TOOL_CALL_RESULTS: Final = channel_of(persistence.TOOL_CALL_RESULTS)
INTERRUPT_RESOLUTIONS: Final = channel_map_of(persistence.INTERRUPT_RESOLUTIONS)


def attribute_lock(name: AttributeName) -> AttributeLock:
    """The Dex lock of a singleton Attribute."""
    return ATTRIBUTES[name].lock()


def map_instance_load(name: MapName, key: str) -> AttributeMapLoad:
    """The Dex load of one AttributeMap instance."""
    return MAPS[name].load(key)


def event_stream(capacity_bytes: int) -> Stream[AgentEvent]:
    """A new ``AgentEvents`` Stream definition for one Flow type (its byte budget is shared by every
    session of that type)."""
    key = persistence.AGENT_EVENTS
    return Stream(key.name.value, value_type_of(key.value_type), capacity_bytes)


__all__ = [
    "AGENT_MESSAGES",
    "AGENT_STATE",
    "AGENT_TOOL_CALLS",
    "AGENT_USAGE",
    "ATTRIBUTES",
    "CHANNELS",
    "CHANNEL_MAPS",
    "FRAMEWORK_RUN_STATE",
    "INTERRUPT_RESOLUTIONS",
    "MAPS",
    "PENDING_INTERRUPTS",
    "QUEUED_USER_MESSAGES",
    "COMPACTION_REQUESTED",
    "HISTORY_SUMMARY",
    "SCHEMA_DEFINITIONS",
    "TOOL_CALL_RESULTS",
    "TURN_MODEL_CALL_COUNT",
    "UNKNOWN_TOOL_OUTCOMES",
    "TOOL_CALL_CANCELLATIONS",
    "TURN_CANCELLATION",
    "USER_MESSAGE_RECEIPTS",
    "AnyDefinition",
    "attribute_lock",
    "attribute_of",
    "channel_map_of",
    "channel_of",
    "event_stream",
    "map_instance_load",
    "map_of",
]
