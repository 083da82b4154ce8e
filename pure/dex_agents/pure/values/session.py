"""The session's persisted wire values: what Dex Attributes, AttributeMaps, Channels and the Stream hold.

Every record is a frozen, slotted, keyword-only dataclass; collections inside records are
``PVector``/``PMap``. Field names are the wire names (snake_case JSON, see ``docs/wire.md``), and every
enum's value is its wire string. Nothing here decides anything: the reducers do.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, final

from pyrsistent.typing import PVector

from dex_agents.pure.wire.json_value import JsonObject


@final
class AgentStatus(StrEnum):
    """What the session is doing now (``AgentState.status``)."""

    WAITING_FOR_USER_MESSAGE = "waiting_for_user_message"
    RUNNING_MODEL = "running_model"
    RUNNING_TOOLS = "running_tools"


@final
class CompactionTrigger(StrEnum):
    """Why a compaction ran (its wire value is ``HistorySummary.trigger`` and the event's)."""

    REACTIVE = "reactive"
    PROACTIVE = "proactive"
    REQUESTED = "requested"


@final
class ToolEffect(StrEnum):
    """A tool's effect class: it decides the tool Step, retries, idempotency key, approval and crash record."""

    READ = "read"
    IDEMPOTENT_WRITE = "idempotent_write"
    NON_IDEMPOTENT_WRITE = "non_idempotent_write"
    UNCLASSIFIED = "unclassified"


@final
class ToolCallStatus(StrEnum):
    """Lifecycle of one tool call record. ``AWAITING_APPROVAL`` and ``PENDING`` are open; the rest are final."""

    AWAITING_APPROVAL = "awaiting_approval"
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    OUTCOME_UNKNOWN = "outcome_unknown"
    CANCELED = "canceled"
    """Ours: an operator cancelled the call before it finished (``cancel_tool_call``, ``cancel_turn``)."""

    @property
    def is_final(self) -> bool:
        """True once the record will never change again (one ``ToolCallCompleted`` was published)."""
        return self not in (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.PENDING)


@final
class MessageRole(StrEnum):
    """Author of a stored message."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSessionStartInput:
    """Input of the ``StartAgentSession`` Step (the Flow's start input).

    ``fork`` (ours, optional on the wire): the conversation a forked session starts from
    (``SessionClient.fork``); the session starts seeded with it instead of empty.

    ``parent_session_id`` and ``parent_tool_call_id`` (ours, may be absent): set when the session is a
    sub-agent's child session, started as a Dex SubFlow by the parent's tool call: it runs the turn of
    its ``initial_message`` and then completes its Flow with the turn's result (``SubAgentResult``).
    """

    initial_message: str | None = None
    fork: AgentSessionFork | None = None
    parent_session_id: str | None = None
    parent_tool_call_id: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentUsage:
    """Token and request counts. Every field is a non-negative count; usage adds field by field."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentResult:
    """What a sub-agent's child session completes its Flow with when its one turn ends (ours).

    ``status``: ``"completed"`` (``text``: the turn's last assistant text) or ``"failed"`` (``text``:
    the turn's error); ``usage``: the child session's whole usage, which the parent adds to its own.
    """

    status: str
    text: str
    usage: AgentUsage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentState:
    """The ``AgentState`` Attribute.

    Invariants: ``current_turn_id`` is ``turn-<turn_count>`` while a turn runs and ``None`` while
    waiting; ``current_turn_sequence`` is the sequence of that turn's user message; ``message_count``
    is the highest stored message sequence (sequences start at 1 with no gaps); ``turn_count`` =
    ``completed_turn_count`` + ``failed_turn_count`` + (1 while a turn runs).
    """

    status: AgentStatus
    turn_count: int
    current_turn_id: str | None
    current_turn_sequence: int | None
    message_count: int
    completed_turn_count: int
    failed_turn_count: int
    last_turn_error: str | None
    canceled_turn_count: int = 0
    """Ours: turns that ended canceled (``cancel_turn``); may be absent on decode (0)."""
    parent_session_id: str | None = None
    """Ours (may be absent): the parent session of a sub-agent's child session, which completes its
    Flow when its one turn ends instead of awaiting another message."""
    parent_tool_call_id: str | None = None
    """Ours (may be absent): the parent's tool call a sub-agent's child session runs."""

    @property
    def ended_turn_count(self) -> int:
        """Turns that ended, completed, failed or canceled (turns end in order: ``turn-<n>`` ended once
        this is ``n``)."""
        return self.completed_turn_count + self.failed_turn_count + self.canceled_turn_count


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCancellation:
    """An operator's cancellation of the running turn (the ``TurnCancellation`` Attribute; ours).

    Attributes:
        turn_id: The canceled turn.
        reason: Why, as ``cancel_turn`` gave it.
        requested_at: When ``cancel_turn`` accepted it (ISO-8601 UTC, milliseconds).
    """

    turn_id: str
    reason: str
    requested_at: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCancellation:
    """Who cancelled a tool call, when and why (``AgentToolCall.cancellation``, and the
    ``ToolCallCancellations`` instance ``cancel_tool_call`` writes; ours).

    Attributes:
        reason: Why, as ``cancel_tool_call`` or ``cancel_turn`` gave it.
        canceled_at: When the RPC accepted it (ISO-8601 UTC, milliseconds).
        scope: ``"tool_call"`` (``cancel_tool_call``: the turn goes on) or ``"turn"`` (``cancel_turn``).
    """

    reason: str
    canceled_at: str
    scope: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkMessage:
    """A message as the runner produces it. ``framework_item`` is framework-native JSON, replayed unchanged;
    the other fields are display projections."""

    role: MessageRole
    text: str | None
    tool_call_id: str | None
    tool_name: str | None
    tool_arguments: str | None
    tool_output: str | None
    framework_item: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentMessage:
    """One stored message (``AgentMessages`` instance keyed by the 12-digit sequence key)."""

    sequence: int
    turn_id: str
    role: MessageRole
    text: str | None
    tool_call_id: str | None
    tool_name: str | None
    tool_arguments: str | None
    tool_output: str | None
    framework_item: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallApproval:
    """Who decided a call's approval, when and why (``AgentToolCall.approval``; ours, not the spec's).

    Attributes:
        approved: The decision.
        approver: Who decided, as ``resolve_interrupt`` named them (``None``: not named).
        reason: Why, as given (``None``: none given).
        resolved_at: When ``resolve_interrupt`` accepted it (ISO-8601 UTC, milliseconds).
        original_arguments: The model's arguments when the approver edited them (the record's
            ``arguments`` then hold the edited ones, which ran); ``None`` when not edited.
    """

    approved: bool
    approver: str | None = None
    reason: str | None = None
    resolved_at: str | None = None
    original_arguments: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSettlement:
    """How an ``outcome_unknown`` call was settled (``AgentToolCall.settlement``; ours).

    Attributes:
        settled_by: ``"reconcile"`` (the tool policy's reconcile answered) or ``"operator"``
            (``resolve_tool_outcome``).
        resolver: Who settled it (``None``: the reconcile function, or not named).
        reason: Why, as given.
        settled_at: When (ISO-8601 UTC, milliseconds).
        unknown_error: The error that had left the outcome unknown.
    """

    settled_by: str
    resolver: str | None = None
    reason: str | None = None
    settled_at: str | None = None
    unknown_error: str | None = None


REFERENCE_KEY: Final = "$dex_agents_ref"
"""The key of the object that stands, inside a stored ``framework_item``, for a display field of its message
(``{"$dex_agents_ref": "text"}``): a long text is stored once (``dex_agents.adapters.kit.messages``)."""


def item_refers_to(framework_item: str, field: str) -> bool:
    """Whether ``framework_item`` (compact JSON) holds its message's ``field`` by reference.

    >>> item_refers_to('[{"content":{"$dex_agents_ref":"text"}}]', "text")
    True
    """
    return f'"{REFERENCE_KEY}":"{field}"' in framework_item


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentToolCall:
    """One tool call record of the active turn (``AgentToolCalls`` instance keyed by tool call ID).

    Invariants: ``deferral_order`` is the zero-based position in the model's response;
    ``output`` is set only when ``SUCCEEDED``; ``error`` only when ``FAILED`` or ``OUTCOME_UNKNOWN``;
    ``rejection_message`` only when ``REJECTED``; ``interrupt_id`` only when approval was required.
    """

    tool_call_id: str
    turn_id: str
    tool_name: str
    arguments: str
    effect: ToolEffect
    requires_approval: bool
    deferral_order: int
    idempotency_key: str
    status: ToolCallStatus
    interrupt_id: str | None
    output: str | None
    error: str | None
    rejection_message: str | None
    approval: ToolCallApproval | None = None
    """Set when a ``resolve_interrupt`` decided the approval (ours; may be absent on decode)."""
    unknown_error: str | None = None
    """Set once the call's outcome became unknown: while the record is still ``pending``, its tool
    policy's ``reconcile`` is being asked (``ReconcileToolOutcome``); the tool never runs again."""
    settlement: ToolCallSettlement | None = None
    """How an unknown outcome was settled (ours; may be absent on decode)."""
    cancellation: ToolCallCancellation | None = None
    """Set when an operator cancelled the call before it finished (ours; may be absent on decode): the
    record is then ``canceled``, ``outcome_unknown`` (a single-attempt write that may have started) or
    ``rejected`` (an approval still pending)."""
    sub_agent: str | None = None
    """Ours (may be absent): the child agent's Flow type when the tool is a sub-agent; the call then runs
    in ``AwaitSubAgent``, as a child session (a Dex SubFlow of this session)."""
    child_session_id: str | None = None
    """Ours (may be absent): the sub-agent's child session, once it ended."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentInterrupt:
    """A pending tool approval (an element of the ``PendingInterrupts`` Attribute).

    ``deadline`` is an ISO-8601 UTC instant with milliseconds (``2026-01-02T03:04:05.678Z``) or ``None``.
    """

    interrupt_id: str
    turn_id: str
    tool_call_id: str
    tool_name: str
    arguments: str
    effect: ToolEffect
    deadline: str | None
    arguments_sha256: str | None = None
    """The SHA-256 (lowercase hex) of ``arguments``' UTF-8 bytes: what ``resolve_interrupt`` checks its
    ``arguments_sha256`` against. Ours; absent (``None``) in interrupts written before it existed."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentInterruptResolution:
    """An answer to an interrupt (``InterruptResolutions`` ChannelMap instance keyed by interrupt ID)."""

    interrupt_id: str
    approved: bool
    rejection_message: str | None
    edited_arguments: str | None = None
    """The approver's arguments (a JSON object's text), to run in place of the model's; ours."""
    approver: str | None = None
    reason: str | None = None
    resolved_at: str | None = None
    """When ``resolve_interrupt`` accepted it (ISO-8601 UTC, milliseconds); ours."""
    deadline: str | None = None
    """The interrupt's deadline when it was resolved, so an edit ``AwaitToolApproval`` refuses puts
    the interrupt back as it was; ours."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentUserMessage:
    """A queued user message (``QueuedUserMessages`` Channel)."""

    text: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageReceipt:
    """A user message sent with an identity (``send_user_message_once``), kept in the
    ``UserMessageReceipts`` AttributeMap under ``message_id``: a second send of it answers ``true``
    and queues nothing. Ours, not the spec's."""

    message_id: str
    text_sha256: str | None = None
    """The SHA-256 of the text's UTF-8 bytes, in lowercase hex: a receipt never holds the text again."""
    text: str | None = None
    """Only in receipts written by versions before ``text_sha256`` (read, never written)."""

    @staticmethod
    def of(message_id: str, text: str) -> UserMessageReceipt:
        """The receipt of ``text`` queued under ``message_id`` (its digest, not the text)."""
        return UserMessageReceipt(message_id=message_id, text_sha256=text_sha256(text))

    def binds(self, text: str) -> bool:
        """Whether a resend of ``text`` under this message ID is the message the receipt records."""
        if self.text_sha256 is not None:
            return self.text_sha256 == text_sha256(text)
        return self.text == text


def text_sha256(text: str) -> str:
    """The lowercase hex SHA-256 of ``text`` encoded as UTF-8 (``text`` holds no lone surrogate)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallCompleted:
    """Published once to ``ToolCallResults`` when a tool call record becomes final."""

    tool_call_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HistorySummary:
    """The session's latest history compaction (the ``HistorySummary`` Attribute). Ours, not the spec's.

    The model sees ``text`` in place of every stored message up to ``through_sequence``; the transcript
    itself keeps every message whole.

    Attributes:
        text: The summary (of the previous summary, when any, and the span it replaced).
        through_sequence: The last message sequence the summary covers (the boundary).
        summarized_messages: How many stored messages the summary covers in all (1..``through_sequence``).
        trigger: Why the latest compaction ran: ``reactive``, ``proactive`` or ``requested``.
        turn_id: The turn it ran in (``None``: between turns).
        compactions: How many compactions the session made (this one included).
    """

    text: str
    through_sequence: int
    summarized_messages: int
    trigger: str
    turn_id: str | None
    compactions: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSessionFork:
    """The seed of a forked session (ours): the original's committed conversation right after its turn
    ``at_turn`` ended, as ``SessionClient.fork`` read it from the original's history.

    Invariants (``StartAgentSession`` refuses a seed that breaks them): ``state`` is between turns
    (``current_turn_id`` is ``None``) and has ended ``at_turn`` turns; ``messages`` are that state's
    ``message_count`` messages, sequences ``1..message_count`` in order, each of a turn up to ``at_turn``.
    No pending approvals, queued messages or tool call records are carried.

    Attributes:
        source_session_id: The session forked from.
        at_turn: The turn of the original the fork starts after.
        state: The original's ``AgentState`` then (the fork's first turn is ``turn-<turn_count + 1>``).
        messages: Its ``AgentMessages`` then.
        usage: Its cumulative ``AgentUsage`` then.
        history_summary: Its ``HistorySummary`` then (``None``: it had not compacted).
    """

    source_session_id: str
    at_turn: int
    state: AgentState
    messages: PVector[AgentMessage]
    usage: AgentUsage
    history_summary: HistorySummary | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEvent:
    """One live event of the ``AgentEvents`` Stream. ``payload`` is a JSON object whose keys depend on
    ``type`` (see ``docs/wire.md``); ``turn_id`` is ``None`` outside a turn."""

    type: str
    turn_id: str | None
    attempt: int
    step_execution_id: str
    payload: JsonObject


__all__ = [
    "REFERENCE_KEY",
    "item_refers_to",
    "CompactionTrigger",
    "AgentEvent",
    "AgentInterrupt",
    "AgentInterruptResolution",
    "AgentMessage",
    "AgentSessionFork",
    "AgentSessionStartInput",
    "AgentState",
    "AgentStatus",
    "AgentToolCall",
    "AgentUsage",
    "AgentUserMessage",
    "FrameworkMessage",
    "HistorySummary",
    "MessageRole",
    "SubAgentResult",
    "ToolCallApproval",
    "ToolCallCancellation",
    "ToolCallCompleted",
    "ToolCallSettlement",
    "ToolCallStatus",
    "ToolEffect",
    "TurnCancellation",
    "UserMessageReceipt",
]
