"""The session's Dex persistence definitions, one object per persisted name of the spec.

Attributes, AttributeMaps, Channels and the ChannelMap are module-level: the SDK allows one
definition object in several Flows, and ``@rpc`` lock and load arguments are evaluated when the
Flow class is defined. A Stream may belong to one Flow only, so ``event_stream`` makes one per Flow.

Invariant: every name comes from the pure core's enums (``dex_agents.pure.persistence``), and every
value type has a codec in ``SESSION_CODECS``.
"""

from __future__ import annotations

from typing import Any, Final

from dex import Attribute, AttributeLock, AttributeMap, AttributeMapLoad, Channel, ChannelMap, Stream

from dex_agents.pure.persistence import AttributeName, ChannelMapName, ChannelName, MapName, StreamName
from dex_agents.pure.values import (
    AgentEvent,
    AgentInterruptResolution,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    ToolCallCompleted,
)
from dex_agents.shell.codecs import PendingInterrupts

AGENT_STATE: Final = Attribute(AttributeName.AGENT_STATE.value, AgentState)
FRAMEWORK_RUN_STATE: Final = Attribute(AttributeName.FRAMEWORK_RUN_STATE.value, str)
PENDING_INTERRUPTS: Final = Attribute[PendingInterrupts](AttributeName.PENDING_INTERRUPTS.value, PendingInterrupts)
AGENT_USAGE: Final = Attribute(AttributeName.AGENT_USAGE.value, AgentUsage)
AGENT_MESSAGES: Final = AttributeMap(MapName.AGENT_MESSAGES.value, AgentMessage)
AGENT_TOOL_CALLS: Final = AttributeMap(MapName.AGENT_TOOL_CALLS.value, AgentToolCall)
QUEUED_USER_MESSAGES: Final = Channel(ChannelName.QUEUED_USER_MESSAGES.value, AgentUserMessage)
TOOL_CALL_RESULTS: Final = Channel(ChannelName.TOOL_CALL_RESULTS.value, ToolCallCompleted)
INTERRUPT_RESOLUTIONS: Final = ChannelMap(ChannelMapName.INTERRUPT_RESOLUTIONS.value, AgentInterruptResolution)

ATTRIBUTES: Final[dict[AttributeName, Attribute[Any]]] = {
    AttributeName.AGENT_STATE: AGENT_STATE,
    AttributeName.FRAMEWORK_RUN_STATE: FRAMEWORK_RUN_STATE,
    AttributeName.PENDING_INTERRUPTS: PENDING_INTERRUPTS,
    AttributeName.AGENT_USAGE: AGENT_USAGE,
}
"""Singleton Attribute definitions by name (values are written through the typed effects)."""

MAPS: Final[dict[MapName, AttributeMap[Any]]] = {
    MapName.AGENT_MESSAGES: AGENT_MESSAGES,
    MapName.AGENT_TOOL_CALLS: AGENT_TOOL_CALLS,
}
"""AttributeMap definitions by name."""


def attribute_lock(name: AttributeName) -> AttributeLock:
    """The Dex lock of a singleton Attribute."""
    return ATTRIBUTES[name].lock()


def map_instance_load(name: MapName, key: str) -> AttributeMapLoad:
    """The Dex load of one AttributeMap instance."""
    return MAPS[name].load(key)


def event_stream(capacity_bytes: int) -> Stream[AgentEvent]:
    """A new ``AgentEvents`` Stream definition for one Flow type (its byte budget is shared by every
    session of that type)."""
    return Stream(StreamName.AGENT_EVENTS.value, AgentEvent, capacity_bytes)


SCHEMA_DEFINITIONS: Final = (
    AGENT_STATE,
    AGENT_MESSAGES,
    FRAMEWORK_RUN_STATE,
    AGENT_TOOL_CALLS,
    PENDING_INTERRUPTS,
    AGENT_USAGE,
    QUEUED_USER_MESSAGES,
    INTERRUPT_RESOLUTIONS,
    TOOL_CALL_RESULTS,
)
"""Every definition of a session Flow's schema except its own Stream, in the spec's table order."""

__all__ = [
    "AGENT_MESSAGES",
    "AGENT_STATE",
    "AGENT_TOOL_CALLS",
    "AGENT_USAGE",
    "ATTRIBUTES",
    "FRAMEWORK_RUN_STATE",
    "INTERRUPT_RESOLUTIONS",
    "MAPS",
    "PENDING_INTERRUPTS",
    "QUEUED_USER_MESSAGES",
    "SCHEMA_DEFINITIONS",
    "TOOL_CALL_RESULTS",
    "attribute_lock",
    "event_stream",
    "map_instance_load",
]
