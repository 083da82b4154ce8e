"""Inputs and outputs of the session's RPCs (``send_user_message``, ``resolve_interrupt``,
``get_agent_snapshot``, ``list_agent_messages``, and ours, ``send_user_message_once``). Wire names as
in ``docs/wire.md``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from pyrsistent.typing import PVector

from dex_agents.pure.values.session import AgentInterrupt, AgentMessage, AgentState, AgentToolCall, AgentUsage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SendUserMessageInput:
    """``send_user_message`` input. Blank text (empty or whitespace only) is refused with ``false``."""

    text: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SendUserMessageOnceInput:
    """``send_user_message_once`` input: ``send_user_message`` with the message's identity. A second
    call with the same ``message_id`` (and text) answers ``true`` and queues nothing."""

    message_id: str
    text: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveInterruptInput:
    """``resolve_interrupt`` input. ``rejection_message`` is shown to the model when ``approved`` is false."""

    interrupt_id: str
    approved: bool
    rejection_message: str | None
    edited_arguments: str | None = None
    """Ours: a JSON object's text to run in place of the model's arguments (only with ``approved``);
    the tool's schema checks it in ``AwaitToolApproval`` before anything runs."""
    arguments_sha256: str | None = None
    """Ours: the ``arguments_sha256`` of the pending interrupt the approver saw; another value refuses."""
    approver: str | None = None
    """Ours: who decides (kept in the record's audit and the ``interrupt_resolved`` event)."""
    reason: str | None = None
    """Ours: why (kept as ``approver``)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendInterruptDeadlineInput:
    """``extend_interrupt_deadline`` input (ours): the pending interrupt's deadline becomes
    ``deadline_ms`` milliseconds after the call, when that is later than its deadline now."""

    interrupt_id: str
    deadline_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTurnInput:
    """``cancel_turn`` input (ours): cancel the running turn ``turn_id``, telling the model ``reason``."""

    turn_id: str
    reason: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CancelToolCallInput:
    """``cancel_tool_call`` input (ours): cancel the running turn's open call ``tool_call_id``; the model
    reads ``cancelled by the user: <reason>`` as its result and the turn goes on."""

    tool_call_id: str
    reason: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveToolOutcomeInput:
    """``resolve_tool_outcome`` input (ours): an operator settles a call whose outcome is unknown.

    ``status`` is ``"succeeded"`` (``output_or_message``: the tool's output) or ``"failed"`` (its error
    message); ``resolver`` names who settled it (not blank); ``reason`` says why (optional)."""

    tool_call_id: str
    status: str
    output_or_message: str
    resolver: str
    reason: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ListAgentMessagesInput:
    """``list_agent_messages`` input: the page holds messages with ``sequence < before_sequence``
    (all when ``None``), newest ``limit`` of them, returned oldest first. ``limit`` defaults to 50 and is
    clamped to 1..200."""

    before_sequence: int | None
    limit: int | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSnapshot:
    """``get_agent_snapshot`` output. ``state`` is ``None`` before the session starts; ``tool_calls`` are
    the active turn's records in deferral order; ``messages`` in sequence order."""

    state: AgentState | None
    messages: PVector[AgentMessage]
    pending_interrupts: PVector[AgentInterrupt]
    tool_calls: PVector[AgentToolCall]
    usage: AgentUsage
    queued_message_count: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentMessagePage:
    """``list_agent_messages`` output, oldest first. ``next_before_sequence`` is the ``before_sequence``
    of the next older page, or ``None`` when no older message exists."""

    messages: PVector[AgentMessage]
    next_before_sequence: int | None


__all__ = [
    "AgentMessagePage",
    "AgentSnapshot",
    "CancelToolCallInput",
    "CancelTurnInput",
    "ExtendInterruptDeadlineInput",
    "ListAgentMessagesInput",
    "ResolveInterruptInput",
    "ResolveToolOutcomeInput",
    "SendUserMessageInput",
    "SendUserMessageOnceInput",
]
