"""The values behind the golden files in ``tests/pure/golden/``: one realistic value per wire type, plus one
``AgentEvent`` per event type of the spec's events table.

Each golden file holds exactly ``encode_as(value, wire_type)`` (no trailing newline). Regenerate them after
a deliberate wire change with ``python -m tests.pure.golden_values`` and review the diff: a changed golden
file is a wire format change that other-language readers must follow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar, final

from dex import JsonCodec, Value
from pyrsistent import pvector
from returns.result import Result

from dex_agents.pure.machine.invocation_record import InvocationRecord, RecordedCompaction
from dex_agents.pure.values.rpc import (
    AgentMessagePage,
    AgentSnapshot,
    CancelToolCallInput,
    CancelTurnInput,
    ExtendInterruptDeadlineInput,
    ResolveToolOutcomeInput,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.values.runner import (
    DeferredToolCall,
    McpToolAnnotations,
    ReconciledOutcome,
    ResolvedToolPolicy,
    ToolCallsRequested,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.pure.values.session import (
    ToolCallCancellation,
    TurnCancellation,
    HistorySummary,
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentSessionFork,
    AgentSessionStartInput,
    AgentState,
    AgentStatus,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    FrameworkMessage,
    ToolCallApproval,
    ToolCallCompleted,
    SubAgentResult,
    ToolCallSettlement,
    ToolCallStatus,
    ToolEffect,
    UserMessageReceipt,
)
from dex_agents.pure.wire import (
    WireError,
    WireType,
    decode_as,
    encode_as,
    from_json_data,
    record_type,
    to_json_data,
    vector_type,
)

from dex_agents.pure.values.time_travel import RecordSessionRewindInput, RewoundToolCall, SessionRewind
from tests.pure.golden_fixtures import (
    ANSWER_MESSAGE,
    REWOUND_CHARGE,
    SESSION_REWIND,
    CALL_USAGE,
    CHARGE_CALL,
    EVENTS,
    INTERRUPT,
    PAGE_MESSAGES,
    SEARCH_CALL,
    SESSION_USAGE,
    SNAPSHOT_MESSAGES,
    STATE,
    TOOL_RESULT_MESSAGE,
    UNBOUNDED_INTERRUPT,
    UNKNOWN_CALL,
    USER_MESSAGE,
    stored_message,
)

GOLDEN_DIRECTORY = Path(__file__).resolve().parent / "golden"

T = TypeVar("T")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenCase:
    """One golden file: its stem, the value it holds, and that value's wire type as encode/decode functions."""

    stem: str
    value: object
    type_name: str
    encode: Callable[[], str]
    decode: Callable[[str], Result[object, WireError]]
    through_dex_codec: Callable[[], tuple[Value, object]]
    """Store the value with a Dex ``JsonCodec`` built from the wire module; gives the stored Value and its decoding."""

    @property
    def path(self) -> Path:
        return GOLDEN_DIRECTORY / f"{self.stem}.json"


def _case(stem: str, value: T, wire_type: WireType[T]) -> GoldenCase:
    def decode(text: str) -> Result[object, WireError]:
        return decode_as(text, wire_type)

    def through_dex_codec() -> tuple[Value, object]:
        codec: JsonCodec[T] = JsonCodec(
            wire_type.name,
            lambda data: from_json_data(data, wire_type).unwrap(),
            lambda item: to_json_data(item, wire_type),
        )
        stored = codec.encode(value)
        return stored, codec.decode(stored)

    return GoldenCase(
        stem=stem,
        value=value,
        type_name=wire_type.name,
        encode=lambda: encode_as(value, wire_type),
        decode=decode,
        through_dex_codec=through_dex_codec,
    )


FORK = AgentSessionFork(
    source_session_id="session-41", at_turn=1,
    state=AgentState(status=AgentStatus.WAITING_FOR_USER_MESSAGE, turn_count=1, current_turn_id=None,
                     current_turn_sequence=None, message_count=2, completed_turn_count=1, failed_turn_count=0,
                     last_turn_error=None),
    messages=SNAPSHOT_MESSAGES[:2], usage=CALL_USAGE, history_summary=None)
"""A fork of ``session-41`` after its turn 1 (its question and answer)."""

GOLDEN_CASES: list[GoldenCase] = [
    _case("agent_session_start_input", AgentSessionStartInput(initial_message="Où est la commande 42 ? 📦"), record_type(AgentSessionStartInput)),
    _case("agent_session_start_input.empty", AgentSessionStartInput(initial_message=None), record_type(AgentSessionStartInput)),
    _case("agent_session_start_input.fork", AgentSessionStartInput(initial_message=None, fork=FORK),
          record_type(AgentSessionStartInput)),
    _case("agent_session_fork", FORK, record_type(AgentSessionFork)),
    _case("rewound_tool_call", REWOUND_CHARGE, record_type(RewoundToolCall)),
    _case("session_rewind", SESSION_REWIND, record_type(SessionRewind)),
    _case(
        "record_session_rewind_input",
        RecordSessionRewindInput(to_turn=SESSION_REWIND.to_turn, reason=SESSION_REWIND.reason,
                                 previous_run_id=SESSION_REWIND.previous_run_id,
                                 removed_turn_count=SESSION_REWIND.removed_turn_count,
                                 tool_calls=SESSION_REWIND.tool_calls),
        record_type(RecordSessionRewindInput),
    ),
    _case("agent_session_start_input.child", AgentSessionStartInput(
        initial_message="Refund order 17 if it was charged twice.", parent_session_id="support-ana",
        parent_tool_call_id="call_billing_1"), record_type(AgentSessionStartInput)),
    _case("agent_usage", SESSION_USAGE, record_type(AgentUsage)),
    _case("sub_agent_result", SubAgentResult(status="completed", text="Refunded order 17 (rf_881).",
                                             usage=SESSION_USAGE), record_type(SubAgentResult)),
    _case(
        "history_summary",
        HistorySummary(
            text="The user (Ana) asked about order 42 (shipped with DHL, tracking JD014600003) and had order 17 "
                 "refunded: refund_order succeeded (EUR 35.90, refund ID rf_881). She prefers email updates.",
            through_sequence=14,
            summarized_messages=14,
            trigger="reactive",
            turn_id="turn-6",
            compactions=1,
        ),
        record_type(HistorySummary),
    ),
    _case("agent_state", STATE, record_type(AgentState)),
    _case(
        "agent_state.failed",
        AgentState(
            status=AgentStatus.WAITING_FOR_USER_MESSAGE,
            turn_count=3,
            current_turn_id=None,
            current_turn_sequence=None,
            message_count=7,
            completed_turn_count=2,
            failed_turn_count=1,
            last_turn_error="RunModel failed after 3 attempts: 429 Too Many Requests",
        ),
        record_type(AgentState),
    ),
    _case("framework_message", TOOL_RESULT_MESSAGE, record_type(FrameworkMessage)),
    _case("agent_message", stored_message(3, USER_MESSAGE), record_type(AgentMessage)),
    _case("agent_tool_call", CHARGE_CALL, record_type(AgentToolCall)),
    _case("agent_tool_call.outcome_unknown", UNKNOWN_CALL, record_type(AgentToolCall)),
    _case(
        "agent_tool_call.edited",
        replace(CHARGE_CALL, status=ToolCallStatus.SUCCEEDED, output="charged 5 EUR",
                arguments='{"amount":5,"currency":"EUR"}',
                approval=ToolCallApproval(approved=True, approver="ana@ops", reason="5 € max",
                                          resolved_at="2026-11-30T18:29:01.500Z",
                                          original_arguments='{"amount":50,"currency":"EUR"}')),
        record_type(AgentToolCall),
    ),
    _case(
        "agent_tool_call.settled",
        replace(UNKNOWN_CALL, status=ToolCallStatus.SUCCEEDED, output="refund rf_881 found", error=None,
                unknown_error=UNKNOWN_CALL.error,
                settlement=ToolCallSettlement(settled_by="reconcile", settled_at="2026-11-30T18:31:00.000Z",
                                              unknown_error=UNKNOWN_CALL.error)),
        record_type(AgentToolCall),
    ),
    _case(
        "agent_tool_call.canceled",
        replace(SEARCH_CALL, status=ToolCallStatus.CANCELED, output=None, error="cancelled by the user: wrong customer",
                cancellation=ToolCallCancellation(reason="wrong customer", canceled_at="2026-11-30T18:32:00.000Z",
                                                  scope="tool_call")),
        record_type(AgentToolCall),
    ),
    _case("tool_call_cancellation", ToolCallCancellation(reason="wrong customer", canceled_at="2026-11-30T18:32:00.000Z",
                                                         scope="turn"), record_type(ToolCallCancellation)),
    _case("turn_cancellation", TurnCancellation(turn_id="turn-2", reason="wrong customer",
                                                requested_at="2026-11-30T18:32:00.000Z"), record_type(TurnCancellation)),
    _case("agent_state.canceled", replace(STATE, canceled_turn_count=1), record_type(AgentState)),
    _case("cancel_turn_input", CancelTurnInput(turn_id="turn-2", reason="wrong customer"), record_type(CancelTurnInput)),
    _case("cancel_tool_call_input", CancelToolCallInput(tool_call_id="call_search_1", reason="too slow"),
          record_type(CancelToolCallInput)),
    _case(
        "agent_tool_call.sub_agent",
        replace(CHARGE_CALL, tool_name="ask_billing", arguments='{"task":"Refund order 17"}', status=ToolCallStatus.SUCCEEDED,
                requires_approval=False, interrupt_id=None, output="Refunded order 17 (rf_881).", sub_agent="billing",
                child_session_id="SubFlow:support-ana-AwaitSubAgent-1-0"),
        record_type(AgentToolCall),
    ),
    _case("tool_call_approval", ToolCallApproval(approved=False, approver="ana@ops", reason="no",
                                                 resolved_at="2026-11-30T18:29:01.500Z"), record_type(ToolCallApproval)),
    _case("tool_call_settlement", ToolCallSettlement(settled_by="operator", resolver="bo@ops", reason="bank statement",
                                                     settled_at="2026-11-30T19:00:00.000Z",
                                                     unknown_error="Worker lost"), record_type(ToolCallSettlement)),
    _case("agent_interrupt", INTERRUPT, record_type(AgentInterrupt)),
    _case("pending_interrupts", pvector([INTERRUPT, UNBOUNDED_INTERRUPT]), vector_type(AgentInterrupt)),
    _case(
        "agent_interrupt_resolution",
        AgentInterruptResolution(interrupt_id=INTERRUPT.interrupt_id, approved=False, rejection_message="Pas sans confirmation écrite."),
        record_type(AgentInterruptResolution),
    ),
    _case(
        "agent_interrupt_resolution.edited",
        AgentInterruptResolution(interrupt_id=INTERRUPT.interrupt_id, approved=True, rejection_message=None,
                                 edited_arguments='{"amount":5,"currency":"EUR"}', approver="ana@ops",
                                 reason="5 € max", resolved_at="2026-11-30T18:29:01.500Z", deadline=INTERRUPT.deadline),
        record_type(AgentInterruptResolution),
    ),
    _case("agent_user_message", AgentUserMessage(text="Thanks! \"quoted\" \\ and a tab\there"), record_type(AgentUserMessage)),
    _case("tool_call_completed", ToolCallCompleted(tool_call_id="call_search_1"), record_type(ToolCallCompleted)),
    *[_case(f"agent_event.{event_type}", event, record_type(AgentEvent)) for event_type, event in EVENTS.items()],
    _case("send_user_message_input", SendUserMessageInput(text="Thanks"), record_type(SendUserMessageInput)),
    _case(
        "send_user_message_once_input",
        SendUserMessageOnceInput(message_id="order-42-msg-7", text="Thanks \u00e9"),
        record_type(SendUserMessageOnceInput),
    ),
    _case(
        "invocation_record",
        InvocationRecord(now_ms=pvector([1767323045000, 1767323045250]), interrupt_deadline_ms=86_400_000,
                         max_model_calls_per_turn=50),
        record_type(InvocationRecord),
    ),
    _case(
        "invocation_record.compaction",
        InvocationRecord(now_ms=pvector([1767323045000]), interrupt_deadline_ms=None, max_model_calls_per_turn=50,
                         compaction=RecordedCompaction(reactive=True, trigger_tokens=None, keep_recent_turns=2)),
        record_type(InvocationRecord),
    ),
    _case(
        "user_message_receipt",
        UserMessageReceipt.of("order-42-msg-7", "Thanks \u00e9"),
        record_type(UserMessageReceipt),
    ),
    _case(
        "resolve_interrupt_input",
        ResolveInterruptInput(interrupt_id=INTERRUPT.interrupt_id, approved=True, rejection_message=None),
        record_type(ResolveInterruptInput),
    ),
    _case(
        "resolve_interrupt_input.edited",
        ResolveInterruptInput(interrupt_id=INTERRUPT.interrupt_id, approved=True, rejection_message=None,
                              edited_arguments='{"amount":5,"currency":"EUR"}',
                              arguments_sha256=INTERRUPT.arguments_sha256, approver="ana@ops", reason="5 € max"),
        record_type(ResolveInterruptInput),
    ),
    _case(
        "extend_interrupt_deadline_input",
        ExtendInterruptDeadlineInput(interrupt_id=INTERRUPT.interrupt_id, deadline_ms=3_600_000),
        record_type(ExtendInterruptDeadlineInput),
    ),
    _case(
        "resolve_tool_outcome_input",
        ResolveToolOutcomeInput(tool_call_id="call_refund_3", status="succeeded", output_or_message="Refunded 5 EUR",
                                resolver="bo@ops", reason="bank statement of 2026-11-30"),
        record_type(ResolveToolOutcomeInput),
    ),
    _case("list_agent_messages_input", ListAgentMessagesInput(before_sequence=41, limit=20), record_type(ListAgentMessagesInput)),
    _case("list_agent_messages_input.defaults", ListAgentMessagesInput(before_sequence=None, limit=None), record_type(ListAgentMessagesInput)),
    _case(
        "agent_snapshot",
        AgentSnapshot(
            state=STATE,
            messages=SNAPSHOT_MESSAGES,
            pending_interrupts=pvector([INTERRUPT]),
            tool_calls=pvector([SEARCH_CALL, CHARGE_CALL, UNKNOWN_CALL]),
            usage=SESSION_USAGE,
            queued_message_count=1,
        ),
        record_type(AgentSnapshot),
    ),
    _case(
        "agent_snapshot.not_started",
        AgentSnapshot(state=None, messages=pvector(), pending_interrupts=pvector(), tool_calls=pvector(), usage=AgentUsage(), queued_message_count=0),
        record_type(AgentSnapshot),
    ),
    _case("agent_message_page", AgentMessagePage(messages=PAGE_MESSAGES, next_before_sequence=3), record_type(AgentMessagePage)),
    _case("tool_policy", ToolPolicy(effect=ToolEffect.IDEMPOTENT_WRITE, requires_approval=None), record_type(ToolPolicy)),
    _case("reconciled_outcome", ReconciledOutcome.succeeded("refund rf_881 found"), record_type(ReconciledOutcome)),
    _case("resolved_tool_policy", ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False), record_type(ResolvedToolPolicy)),
    _case(
        "mcp_tool_annotations",
        McpToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=None, open_world_hint=None),
        record_type(McpToolAnnotations),
    ),
    _case(
        "deferred_tool_call",
        DeferredToolCall(
            tool_call_id="call_charge_2",
            tool_name="charge_card",
            arguments=CHARGE_CALL.arguments,
            policy=ResolvedToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=True),
        ),
        record_type(DeferredToolCall),
    ),
    _case("turn_completed", TurnCompleted(new_messages=pvector([TOOL_RESULT_MESSAGE, ANSWER_MESSAGE]), usage=CALL_USAGE), record_type(TurnCompleted)),
    _case(
        "tool_calls_requested",
        ToolCallsRequested(
            framework_run_state='{"v":1,"items":["…"]}',
            tool_calls=pvector(
                [
                    DeferredToolCall(
                        tool_call_id="call_search_1",
                        tool_name="search_orders",
                        arguments='{"order_id":42}',
                        policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False),
                    )
                ]
            ),
            usage=CALL_USAGE,
        ),
        record_type(ToolCallsRequested),
    ),
]


def write_golden_files() -> None:
    """Rewrite every golden file from ``GOLDEN_CASES`` (only after a deliberate wire change)."""
    GOLDEN_DIRECTORY.mkdir(exist_ok=True)
    for case in GOLDEN_CASES:
        case.path.write_bytes(case.encode().encode("ascii"))


if __name__ == "__main__":
    write_golden_files()
