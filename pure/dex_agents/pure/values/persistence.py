"""The session's persisted names, each paired once with the type of what it holds, plus the Step types
and RPC names, exactly as the spec writes them.

Every Flow type uses the same names, so one UI reads sessions of any agent. The enums are the closed
lists of names; the typed keys (``AGENT_STATE: AttributeKey[AgentState]``, ...) pair each name with its
wire type, and are what effects take, so a value of the wrong type for a name is a mypy error and a
misspelled name cannot reach the shell. The shell builds its Dex definitions and codecs from the keys.

Two names are ours, not the spec's: ``TurnModelCallCount`` (an int), the model calls of the running
turn that deferred tool calls, which enforces ``max_model_calls_per_turn``; and ``UserMessageReceipts``
(an AttributeMap of ``UserMessageReceipt`` by message ID), the messages ``send_user_message_once``
queued, so a second send of one answers as the first did. So is one RPC, ``send_user_message_once``.
They are additions: a reader that does not know them (the TypeScript package, a UI) never needs them,
and no spec value changed.

Invariants:
    * Exactly one key per persisted name (``PERSISTED_KEYS``: the spec's table order, then ours).
    * Every key's value type is a record, a vector of records (``WireType``), or a plain Python type
      Dex stores with its built-in codec: ``str`` for ``FrameworkRunState``, ``int`` for
      ``TurnModelCallCount``.
    * Keys are invariant in their value type: ``AttributeKey[AgentState]`` is not an
      ``AttributeKey[object]``, so a generic effect pins its value type to its key's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Generic, Protocol, TypeVar, final

from pyrsistent import PVector as PVectorType

from dex_agents.pure.values.session import (
    ToolCallCancellation,
    TurnCancellation,
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    HistorySummary,
    ToolCallCompleted,
    UserMessageReceipt,
)
from dex_agents.pure.values.time_travel import SessionRewind
from dex_agents.pure.wire.schema import RecordNode, VectorNode, WireNode, WireType, record_type, vector_type

T = TypeVar("T")


@final
class AttributeName(StrEnum):
    """Singleton Attributes (every Step and RPC invocation receives them without asking)."""

    AGENT_STATE = "AgentState"
    FRAMEWORK_RUN_STATE = "FrameworkRunState"
    PENDING_INTERRUPTS = "PendingInterrupts"
    AGENT_USAGE = "AgentUsage"
    TURN_MODEL_CALL_COUNT = "TurnModelCallCount"
    HISTORY_SUMMARY = "HistorySummary"
    COMPACTION_REQUESTED = "CompactionRequested"
    TURN_CANCELLATION = "TurnCancellation"


@final
class MapName(StrEnum):
    """AttributeMaps (a Step loads the whole map or single instances through its Step options)."""

    AGENT_MESSAGES = "AgentMessages"
    AGENT_TOOL_CALLS = "AgentToolCalls"
    USER_MESSAGE_RECEIPTS = "UserMessageReceipts"
    SESSION_REWINDS = "SessionRewinds"
    UNKNOWN_TOOL_OUTCOMES = "UnknownToolOutcomes"
    TOOL_CALL_CANCELLATIONS = "ToolCallCancellations"


@final
class ChannelName(StrEnum):
    """Channels. ``ToolCallResults`` is internal to the session."""

    QUEUED_USER_MESSAGES = "QueuedUserMessages"
    TOOL_CALL_RESULTS = "ToolCallResults"


@final
class ChannelMapName(StrEnum):
    """ChannelMaps, keyed by instance."""

    INTERRUPT_RESOLUTIONS = "InterruptResolutions"


@final
class StreamName(StrEnum):
    """Streams (best effort, byte budget shared by every session of the Flow type)."""

    AGENT_EVENTS = "AgentEvents"


@final
class StepType(StrEnum):
    """The session Flow's Step types (the Dex Step type names)."""

    START_AGENT_SESSION = "StartAgentSession"
    AWAIT_USER_MESSAGE = "AwaitUserMessage"
    RUN_MODEL = "RunModel"
    AWAIT_TOOL_APPROVAL = "AwaitToolApproval"
    CALL_TOOL = "CallTool"
    CALL_SINGLE_ATTEMPT_TOOL = "CallSingleAttemptTool"
    RECORD_TOOL_FAILURE = "RecordToolFailure"
    RECORD_TOOL_OUTCOME_UNKNOWN = "RecordToolOutcomeUnknown"
    RESUME_TURN = "ResumeTurn"
    RECORD_TURN_FAILURE = "RecordTurnFailure"
    COMPACT_HISTORY = "CompactHistory"
    RECONCILE_TOOL_OUTCOME = "ReconcileToolOutcome"
    CANCEL_TURN = "CancelTurn"
    RECORD_TOOL_CANCELLATION = "RecordToolCancellation"
    AWAIT_SUB_AGENT = "AwaitSubAgent"


@final
class RpcName(StrEnum):
    """The session Flow's RPC names."""

    SEND_USER_MESSAGE = "send_user_message"
    RESOLVE_INTERRUPT = "resolve_interrupt"
    GET_AGENT_SNAPSHOT = "get_agent_snapshot"
    LIST_AGENT_MESSAGES = "list_agent_messages"
    SEND_USER_MESSAGE_ONCE = "send_user_message_once"
    COMPACT_HISTORY = "compact_history"
    EXTEND_INTERRUPT_DEADLINE = "extend_interrupt_deadline"
    RECORD_SESSION_REWIND = "record_session_rewind"
    CANCEL_TURN = "cancel_turn"
    CANCEL_TOOL_CALL = "cancel_tool_call"
    RESOLVE_TOOL_OUTCOME = "resolve_tool_outcome"


def _node_holds(value: object, node: WireNode) -> bool:
    match node:
        case RecordNode(record=record):
            return isinstance(value, record)
        case VectorNode(item=item):
            return isinstance(value, PVectorType) and all(_node_holds(element, item) for element in value)
        case _:
            raise TypeError(f"no persisted name holds a {type(node).__name__}")


def holds(value_type: WireType[T] | type[T], value: object) -> bool:
    """Whether ``value`` is of ``value_type`` (records by class, vectors item by item; shallow; a
    ``bool`` is not an ``int``)."""
    if isinstance(value_type, WireType):
        return _node_holds(value, value_type.node)
    return isinstance(value, value_type) and not (value_type is int and isinstance(value, bool))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AttributeKey(Generic[T]):
    """A singleton Attribute holding ``T``: a record or vector (``WireType``) or a plain ``str``."""

    name: AttributeName
    value_type: WireType[T] | type[T]

    def holds(self, value: object) -> bool:
        """Whether ``value`` may be stored under this Attribute."""
        return holds(self.value_type, value)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class MapKey(Generic[T]):
    """An AttributeMap whose instances hold ``T``."""

    name: MapName
    value_type: WireType[T]

    def holds(self, value: object) -> bool:
        """Whether ``value`` may be stored in an instance of this map."""
        return holds(self.value_type, value)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelKey(Generic[T]):
    """A Channel carrying ``T`` messages."""

    name: ChannelName
    value_type: WireType[T]

    def holds(self, value: object) -> bool:
        """Whether ``value`` may be published on this Channel."""
        return holds(self.value_type, value)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelMapKey(Generic[T]):
    """A ChannelMap whose instances carry ``T`` messages."""

    name: ChannelMapName
    value_type: WireType[T]

    def holds(self, value: object) -> bool:
        """Whether ``value`` may be published on an instance of this ChannelMap."""
        return holds(self.value_type, value)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StreamKey(Generic[T]):
    """A Stream of ``T`` items."""

    name: StreamName
    value_type: WireType[T]


class PersistedKey(Protocol):
    """Any of the typed keys, with its value type erased (what a list of every key holds)."""

    @property
    def name(self) -> str: ...

    @property
    def value_type(self) -> object: ...


AGENT_STATE: Final = AttributeKey(name=AttributeName.AGENT_STATE, value_type=record_type(AgentState))
AGENT_MESSAGES: Final = MapKey(name=MapName.AGENT_MESSAGES, value_type=record_type(AgentMessage))
"""Keyed by ``message_sequence_key(sequence)`` (12-digit zero-padded)."""
FRAMEWORK_RUN_STATE: Final = AttributeKey(name=AttributeName.FRAMEWORK_RUN_STATE, value_type=str)
"""Set only between a turn's model calls."""
AGENT_TOOL_CALLS: Final = MapKey(name=MapName.AGENT_TOOL_CALLS, value_type=record_type(AgentToolCall))
"""Keyed by tool call ID; only the active turn's records."""
PENDING_INTERRUPTS: Final = AttributeKey(name=AttributeName.PENDING_INTERRUPTS, value_type=vector_type(AgentInterrupt))
AGENT_USAGE: Final = AttributeKey(name=AttributeName.AGENT_USAGE, value_type=record_type(AgentUsage))
"""Cumulative over the session."""
TURN_MODEL_CALL_COUNT: Final = AttributeKey(name=AttributeName.TURN_MODEL_CALL_COUNT, value_type=int)
"""Model calls of the running turn that deferred tool calls (Dex INT64); absent outside a turn and
before its first deferral. Not in the spec: an addition old readers never need."""
USER_MESSAGE_RECEIPTS: Final = MapKey(name=MapName.USER_MESSAGE_RECEIPTS, value_type=record_type(UserMessageReceipt))
"""Keyed by message ID: the messages ``send_user_message_once`` queued. Not in the spec: an addition
old readers never need."""
HISTORY_SUMMARY: Final = AttributeKey(name=AttributeName.HISTORY_SUMMARY, value_type=record_type(HistorySummary))
"""The latest history compaction (``CompactHistory``); absent until the first. Not in the spec: an
addition old readers never need (they see the whole transcript, which is never cut)."""
COMPACTION_REQUESTED: Final = AttributeKey(name=AttributeName.COMPACTION_REQUESTED, value_type=int)
"""Set (to 1) by ``compact_history``: the next model call compacts first; deleted by the compaction.
Not in the spec: an addition old readers never need."""
SESSION_REWINDS: Final = MapKey(name=MapName.SESSION_REWINDS, value_type=record_type(SessionRewind))
"""Keyed by the Dex run a rewind replaced: the audit of each rewind (``record_session_rewind``). Not in
the spec: an addition old readers never need; nothing on a turn's path loads it."""
UNKNOWN_TOOL_OUTCOMES: Final = MapKey(name=MapName.UNKNOWN_TOOL_OUTCOMES, value_type=record_type(AgentToolCall))
"""Keyed by tool call ID: every call whose record became ``outcome_unknown``, kept after its turn ended
(``AgentToolCalls`` holds only the running turn's) until ``resolve_tool_outcome`` settles it, and then
with its ``settlement``. Not in the spec: an addition old readers never need."""
TURN_CANCELLATION: Final = AttributeKey(name=AttributeName.TURN_CANCELLATION, value_type=record_type(TurnCancellation))
"""Written by ``cancel_turn`` (and nothing else writes it): the running turn is being cancelled;
``CancelTurn`` ends the turn and deletes it. Not in the spec: absent outside a cancellation."""
TOOL_CALL_CANCELLATIONS: Final = MapKey(name=MapName.TOOL_CALL_CANCELLATIONS,
                                        value_type=record_type(ToolCallCancellation))
"""Keyed by tool call ID: written by ``cancel_tool_call`` (nothing else writes it), read and deleted by
``RecordToolCancellation`` (or ``CancelTurn``). Not in the spec: present only during a cancellation."""
QUEUED_USER_MESSAGES: Final = ChannelKey(name=ChannelName.QUEUED_USER_MESSAGES, value_type=record_type(AgentUserMessage))
INTERRUPT_RESOLUTIONS: Final = ChannelMapKey(
    name=ChannelMapName.INTERRUPT_RESOLUTIONS, value_type=record_type(AgentInterruptResolution)
)
"""Keyed by interrupt ID."""
TOOL_CALL_RESULTS: Final = ChannelKey(name=ChannelName.TOOL_CALL_RESULTS, value_type=record_type(ToolCallCompleted))
AGENT_EVENTS: Final = StreamKey(name=StreamName.AGENT_EVENTS, value_type=record_type(AgentEvent))

PERSISTED_KEYS: Final[tuple[PersistedKey, ...]] = (
    AGENT_STATE,
    AGENT_MESSAGES,
    FRAMEWORK_RUN_STATE,
    AGENT_TOOL_CALLS,
    PENDING_INTERRUPTS,
    AGENT_USAGE,
    QUEUED_USER_MESSAGES,
    INTERRUPT_RESOLUTIONS,
    TOOL_CALL_RESULTS,
    AGENT_EVENTS,
    TURN_MODEL_CALL_COUNT,
    USER_MESSAGE_RECEIPTS,
    HISTORY_SUMMARY,
    COMPACTION_REQUESTED,
    SESSION_REWINDS,
    UNKNOWN_TOOL_OUTCOMES,
    TURN_CANCELLATION,
    TOOL_CALL_CANCELLATIONS,
)
"""Every persisted name's key: the spec's, in its table order, then ours (``TurnModelCallCount``,
``UserMessageReceipts``, ``HistorySummary``, ``CompactionRequested``, ``UnknownToolOutcomes``,
``TurnCancellation``, ``ToolCallCancellations``)."""


__all__ = [
    "AGENT_EVENTS",
    "AGENT_MESSAGES",
    "AGENT_STATE",
    "AGENT_TOOL_CALLS",
    "AGENT_USAGE",
    "COMPACTION_REQUESTED",
    "FRAMEWORK_RUN_STATE",
    "HISTORY_SUMMARY",
    "INTERRUPT_RESOLUTIONS",
    "PENDING_INTERRUPTS",
    "PERSISTED_KEYS",
    "QUEUED_USER_MESSAGES",
    "TOOL_CALL_RESULTS",
    "TURN_MODEL_CALL_COUNT",
    "UNKNOWN_TOOL_OUTCOMES",
    "TOOL_CALL_CANCELLATIONS",
    "TURN_CANCELLATION",
    "USER_MESSAGE_RECEIPTS",
    "SESSION_REWINDS",
    "AttributeKey",
    "AttributeName",
    "ChannelKey",
    "ChannelMapKey",
    "ChannelMapName",
    "ChannelName",
    "MapKey",
    "MapName",
    "PersistedKey",
    "RpcName",
    "StepType",
    "StreamKey",
    "StreamName",
    "holds",
]
