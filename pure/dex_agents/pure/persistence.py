"""The session's persisted names and Step types, exactly as the spec writes them.

Every Flow type uses the same names, so one UI reads sessions of any agent. Effects refer to these
enums rather than to free strings, so a misspelled name cannot reach the shell.
"""

from __future__ import annotations

from enum import StrEnum
from typing import final


@final
class AttributeName(StrEnum):
    """Singleton Attributes (every Step and RPC invocation receives them without asking)."""

    AGENT_STATE = "AgentState"
    FRAMEWORK_RUN_STATE = "FrameworkRunState"
    PENDING_INTERRUPTS = "PendingInterrupts"
    AGENT_USAGE = "AgentUsage"


@final
class MapName(StrEnum):
    """AttributeMaps (a Step loads the whole map or single instances through its Step options)."""

    AGENT_MESSAGES = "AgentMessages"
    AGENT_TOOL_CALLS = "AgentToolCalls"


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


@final
class RpcName(StrEnum):
    """The session Flow's RPC names."""

    SEND_USER_MESSAGE = "send_user_message"
    RESOLVE_INTERRUPT = "resolve_interrupt"
    GET_AGENT_SNAPSHOT = "get_agent_snapshot"
    LIST_AGENT_MESSAGES = "list_agent_messages"


TOOL_CALL_STEP_TYPES = frozenset(
    {
        StepType.AWAIT_TOOL_APPROVAL,
        StepType.CALL_TOOL,
        StepType.CALL_SINGLE_ATTEMPT_TOOL,
        StepType.RECORD_TOOL_FAILURE,
        StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
    }
)
"""Step types whose input is a tool call ID (``str``)."""

NO_INPUT_STEP_TYPES = frozenset({StepType.AWAIT_USER_MESSAGE, StepType.RUN_MODEL, StepType.RECORD_TURN_FAILURE})
"""Step types whose input is ``None``. ``ResumeTurn`` takes an ``int``; ``StartAgentSession`` the start input."""

__all__ = [
    "NO_INPUT_STEP_TYPES",
    "TOOL_CALL_STEP_TYPES",
    "AttributeName",
    "ChannelMapName",
    "ChannelName",
    "MapName",
    "RpcName",
    "StepType",
    "StreamName",
]
