"""RPC inputs: one per RPC call ``reduce`` takes (``RpcCall``, part of ``step_inputs.SessionInput``),
each a past-tense fact named for the call (``SendUserMessageCalled``, ``AgentSnapshotRequested``).

An RPC runs in no Step, so its input carries no ``Invocation``: only the RPC's own input record and,
for an RPC that reads a clock, ``now_ms`` (the Worker clock, epoch milliseconds, read once by the
shell). The core answers each with ``AnswerRpc`` or ``RefuseRpc`` (``endings``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

from dex_agents.pure.values.rpc import (
    CancelToolCallInput,
    CancelTurnInput,
    ExtendInterruptDeadlineInput,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    ResolveToolOutcomeInput,
    SendUserMessageInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.values.time_travel import RecordSessionRewindInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SendUserMessageCalled:
    """``send_user_message`` was called."""

    input: SendUserMessageInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveInterruptCalled:
    """``resolve_interrupt`` was called at ``now_ms`` (epoch milliseconds, the Worker clock)."""

    input: ResolveInterruptInput
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendInterruptDeadlineCalled:
    """``extend_interrupt_deadline`` was called at ``now_ms`` (epoch milliseconds, the Worker clock)."""

    input: ExtendInterruptDeadlineInput
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveToolOutcomeCalled:
    """``resolve_tool_outcome`` was called at ``now_ms`` (epoch milliseconds, the Worker clock), with the
    call's ``UnknownToolOutcomes`` and ``AgentToolCalls`` instances loaded. Ours."""

    input: ResolveToolOutcomeInput
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSnapshotRequested:
    """``get_agent_snapshot`` was called."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentMessagesListed:
    """``list_agent_messages`` was called."""

    input: ListAgentMessagesInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SendUserMessageOnceCalled:
    """``send_user_message_once`` was called (its message's ``UserMessageReceipts`` instance loaded)."""

    input: SendUserMessageOnceInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CompactHistoryCalled:
    """``compact_history`` was called."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRewindRecorded:
    """``record_session_rewind`` was called at ``now_ms`` (epoch milliseconds, the Worker clock), right
    after ``SessionClient.rewind`` moved the session back (ours)."""

    input: RecordSessionRewindInput
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTurnCalled:
    """``cancel_turn`` was called at ``now_ms`` (epoch milliseconds, the Worker clock; the turn's
    records loaded)."""

    input: CancelTurnInput
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CancelToolCallCalled:
    """``cancel_tool_call`` was called at ``now_ms`` (the turn's records loaded)."""

    input: CancelToolCallInput
    now_ms: int


RpcCall: TypeAlias = (
    CancelTurnCalled
    | CancelToolCallCalled
    | ExtendInterruptDeadlineCalled
    | SessionRewindRecorded
    | CompactHistoryCalled
    | SendUserMessageCalled
    | ResolveInterruptCalled
    | AgentSnapshotRequested
    | AgentMessagesListed
    | SendUserMessageOnceCalled
    | ResolveToolOutcomeCalled
)
"""Every RPC's input."""

__all__ = [
    "AgentMessagesListed",
    "AgentSnapshotRequested",
    "CancelToolCallCalled",
    "CancelTurnCalled",
    "CompactHistoryCalled",
    "ExtendInterruptDeadlineCalled",
    "ResolveInterruptCalled",
    "ResolveToolOutcomeCalled",
    "RpcCall",
    "SendUserMessageCalled",
    "SendUserMessageOnceCalled",
    "SessionRewindRecorded",
]
