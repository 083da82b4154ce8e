"""Realistic values for the golden files: one session in its second turn (a search that succeeded, a
card charge awaiting approval, a refund whose outcome is unknown), its messages, and one event per type."""

from __future__ import annotations

from pyrsistent import pmap, pvector

from dex_agents.pure.machine.events import session_rewound_event
from dex_agents.pure.values.time_travel import RewoundToolCall, SessionRewind
from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.values.session import (
    text_sha256,
    AgentEvent,
    AgentInterrupt,
    AgentMessage,
    AgentState,
    AgentStatus,
    AgentToolCall,
    AgentUsage,
    FrameworkMessage,
    MessageRole,
    ToolCallStatus,
    ToolEffect,
)

FLOW_ID = "session-42"
TURN = "turn-2"
SESSION_USAGE = AgentUsage(requests=3, input_tokens=5120, output_tokens=733, cache_read_tokens=4096, cache_write_tokens=0)
CALL_USAGE = AgentUsage(requests=1, input_tokens=1804, output_tokens=96, cache_read_tokens=1536, cache_write_tokens=0)

USER_ITEM = '{"role":"user","content":[{"type":"input_text","text":"Où est la commande 42 ? 📦"}]}'
USER_MESSAGE = FrameworkMessage(
    role=MessageRole.USER,
    text="Où est la commande 42 ? 📦",
    tool_call_id=None,
    tool_name=None,
    tool_arguments=None,
    tool_output=None,
    framework_item=USER_ITEM,
)
TOOL_RESULT_MESSAGE = FrameworkMessage(
    role=MessageRole.TOOL,
    text=None,
    tool_call_id="call_search_1",
    tool_name="search_orders",
    tool_arguments='{"order_id":42}',
    tool_output='{"status":"shipped","carrier":"DHL"}',
    framework_item='{"type":"function_call_output","call_id":"call_search_1","output":"{\\"status\\":\\"shipped\\"}"}',
)
ANSWER_MESSAGE = FrameworkMessage(
    role=MessageRole.ASSISTANT,
    text="Order 42 has shipped with DHL.\nTracking: «JD014600003»",
    tool_call_id=None,
    tool_name=None,
    tool_arguments=None,
    tool_output=None,
    framework_item='{"role":"assistant","content":[{"type":"output_text","text":"Order 42 has shipped with DHL."}]}',
)


def stored_message(sequence: int, message: FrameworkMessage, turn_id: str = TURN) -> AgentMessage:
    """``message`` as ``AgentMessages`` holds it, with its sequence and turn."""
    return AgentMessage(
        sequence=sequence,
        turn_id=turn_id,
        role=message.role,
        text=message.text,
        tool_call_id=message.tool_call_id,
        tool_name=message.tool_name,
        tool_arguments=message.tool_arguments,
        tool_output=message.tool_output,
        framework_item=message.framework_item,
    )


FIRST_QUESTION = FrameworkMessage(
    role=MessageRole.USER,
    text="Hi",
    tool_call_id=None,
    tool_name=None,
    tool_arguments=None,
    tool_output=None,
    framework_item='{"role":"user","content":"Hi"}',
)
FIRST_ANSWER = FrameworkMessage(
    role=MessageRole.ASSISTANT,
    text="Hello! How can I help?",
    tool_call_id=None,
    tool_name=None,
    tool_arguments=None,
    tool_output=None,
    framework_item='{"role":"assistant","content":"Hello! How can I help?"}',
)
SNAPSHOT_MESSAGES = pvector([stored_message(1, FIRST_QUESTION, "turn-1"), stored_message(2, FIRST_ANSWER, "turn-1"), stored_message(3, USER_MESSAGE)])
"""The stored history while turn-2 runs: turn-1's question and answer, then turn-2's user message."""

PAGE_MESSAGES = pvector([stored_message(3, USER_MESSAGE), stored_message(4, TOOL_RESULT_MESSAGE), stored_message(5, ANSWER_MESSAGE)])
"""Turn-2's messages once it completed: the page before sequence 6 with limit 3."""

STATE = AgentState(
    status=AgentStatus.RUNNING_TOOLS,
    turn_count=2,
    current_turn_id=TURN,
    current_turn_sequence=3,
    message_count=3,
    completed_turn_count=1,
    failed_turn_count=0,
    last_turn_error=None,
)
SEARCH_CALL = AgentToolCall(
    tool_call_id="call_search_1",
    turn_id=TURN,
    tool_name="search_orders",
    arguments='{"order_id":42}',
    effect=ToolEffect.READ,
    requires_approval=False,
    deferral_order=0,
    idempotency_key=f"{FLOW_ID}/{TURN}/call_search_1",
    status=ToolCallStatus.SUCCEEDED,
    interrupt_id=None,
    output='{"status":"shipped","carrier":"DHL"}',
    error=None,
    rejection_message=None,
)
CHARGE_CALL = AgentToolCall(
    tool_call_id="call_charge_2",
    turn_id=TURN,
    tool_name="charge_card",
    arguments='{"amount":5,"currency":"EUR","memo":"Frais de port — 5 €"}',
    effect=ToolEffect.NON_IDEMPOTENT_WRITE,
    requires_approval=True,
    deferral_order=1,
    idempotency_key=f"{FLOW_ID}/{TURN}/call_charge_2",
    status=ToolCallStatus.AWAITING_APPROVAL,
    interrupt_id=f"{TURN}:call_charge_2",
    output=None,
    error=None,
    rejection_message=None,
)
UNKNOWN_CALL = AgentToolCall(
    tool_call_id="call_refund_3",
    turn_id=TURN,
    tool_name="refund",
    arguments='{"amount":5}',
    effect=ToolEffect.UNCLASSIFIED,
    requires_approval=False,
    deferral_order=2,
    idempotency_key=f"{FLOW_ID}/{TURN}/call_refund_3",
    status=ToolCallStatus.OUTCOME_UNKNOWN,
    interrupt_id=None,
    output=None,
    error="Worker lost during CallSingleAttemptTool (attempt 1)",
    rejection_message=None,
)
INTERRUPT = AgentInterrupt(
    interrupt_id=f"{TURN}:call_charge_2",
    turn_id=TURN,
    tool_call_id="call_charge_2",
    tool_name="charge_card",
    arguments=CHARGE_CALL.arguments,
    effect=ToolEffect.NON_IDEMPOTENT_WRITE,
    deadline="2026-11-30T18:30:00.250Z",
    arguments_sha256=text_sha256(CHARGE_CALL.arguments),
)
UNBOUNDED_INTERRUPT = AgentInterrupt(
    interrupt_id="turn-2:call_wire_4",
    turn_id=TURN,
    tool_call_id="call_wire_4",
    tool_name="wire_transfer",
    arguments='{"iban":"DE00 1234","amount":120.5}',
    effect=ToolEffect.UNCLASSIFIED,
    deadline=None,
    arguments_sha256=text_sha256('{"iban":"DE00 1234","amount":120.5}'),
)


def _event(event_type: str, step_execution_id: str, payload: dict[str, JsonValue], attempt: int = 1) -> AgentEvent:
    turn_payload: JsonObject = pmap(payload)
    return AgentEvent(type=event_type, turn_id=TURN, attempt=attempt, step_execution_id=step_execution_id, payload=turn_payload)


def usage_object(usage: AgentUsage) -> JsonValue:
    """``usage`` as its JSON object, written out field by field (independent of ``events.usage_json``)."""
    return pmap(
        {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        }
    )


REWOUND_CHARGE = RewoundToolCall(tool_call_id="call_charge_2", turn_id=TURN, tool_name="charge_card",
                                 effect=ToolEffect.NON_IDEMPOTENT_WRITE, status=ToolCallStatus.SUCCEEDED,
                                 idempotency_key=f"{FLOW_ID}/{TURN}/call_charge_2")
SESSION_REWIND = SessionRewind(to_turn=1, reason="the charge was a mistake — refund it by hand",
                               previous_run_id="3d668783-8885-4ba4-aba6-94be206f6577", removed_turn_count=1,
                               tool_calls=pvector([REWOUND_CHARGE]), rewound_at="2026-11-30T18:31:02.125Z")
"""The audit of a rewind to turn 1 that removed turn-2, whose charge had run."""

SPEC_EVENT_PAYLOAD_KEYS: dict[str, frozenset[str]] = {
    "turn_started": frozenset({"sequence"}),
    "turn_completed": frozenset({"message_count"}),
    "turn_failed": frozenset({"error"}),
    "text_delta": frozenset({"text"}),
    "reasoning_delta": frozenset({"text"}),
    "tool_call_deferred": frozenset({"tool_call_id", "tool_name", "effect", "requires_approval"}),
    "tool_call_started": frozenset({"tool_call_id", "tool_name"}),
    "tool_call_finished": frozenset({"tool_call_id", "tool_name", "status"}),
    "interrupt_raised": frozenset({"interrupt_id", "tool_call_id", "tool_name", "deadline"}),
    "interrupt_resolved": frozenset({"interrupt_id", "approved", "rejection_message"}),
    "usage_recorded": frozenset({"recorded", "session"}),
}
"""The spec's events table: event type to payload keys."""

SESSION_EVENT_PAYLOAD_KEYS: dict[str, frozenset[str]] = {
    **SPEC_EVENT_PAYLOAD_KEYS,
    "dex_agents.model_call_failed": frozenset({"error", "retrying"}),
    "dex_agents.history_compacted": frozenset({"through_sequence", "summarized_messages", "summary_chars", "trigger"}),
    "interrupt_resolved": SPEC_EVENT_PAYLOAD_KEYS["interrupt_resolved"]
    | {"approver", "reason", "resolved_at", "original_arguments", "edited_arguments"},
    "dex_agents.approval_refused": frozenset({"interrupt_id", "tool_call_id", "error", "approver", "edited_arguments"}),
    "dex_agents.tool_outcome_settled": frozenset({"tool_call_id", "tool_name", "status", "settled_by", "resolver",
                                                  "reason"}),
    "dex_agents.session_rewound": frozenset({"to_turn", "reason", "previous_run_id", "run_id", "removed_turn_count",
                                             "rewound_at", "tool_calls"}),
    "dex_agents.turn_canceled": frozenset({"reason", "requested_at"}),
}
"""Every event the session itself writes: the spec's, plus ours (prefixed ``dex_agents.``, docs/wire.md)."""

EVENTS: dict[str, AgentEvent] = {
    "turn_started": _event("turn_started", "se-await-7", {"sequence": 3}),
    "turn_completed": _event("turn_completed", "se-model-9", {"message_count": 3}),
    "turn_failed": _event("turn_failed", "se-fail-10", {"error": "RunModel failed after 3 attempts: 429 Too Many Requests"}),
    "text_delta": _event("text_delta", "se-model-9", {"text": "Order 42 has shipped — "}, attempt=2),
    "reasoning_delta": _event("reasoning_delta", "se-model-8", {"text": "The user asks about order 42; search first."}),
    "tool_call_deferred": _event(
        "tool_call_deferred",
        "se-model-8",
        {"tool_call_id": "call_charge_2", "tool_name": "charge_card", "effect": "non_idempotent_write", "requires_approval": True},
    ),
    "tool_call_started": _event("tool_call_started", "se-tool-11", {"tool_call_id": "call_search_1", "tool_name": "search_orders"}),
    "tool_call_finished": _event(
        "tool_call_finished",
        "se-tool-11",
        {"tool_call_id": "call_search_1", "tool_name": "search_orders", "status": "succeeded"},
    ),
    "interrupt_raised": _event(
        "interrupt_raised",
        "se-model-8",
        {
            "interrupt_id": "turn-2:call_charge_2",
            "tool_call_id": "call_charge_2",
            "tool_name": "charge_card",
            "deadline": "2026-11-30T18:30:00.250Z",
        },
    ),
    "interrupt_resolved": _event(
        "interrupt_resolved",
        "se-approval-12",
        {"interrupt_id": "turn-2:call_charge_2", "approved": True, "rejection_message": None, "approver": "ana@ops",
         "reason": "5 € max", "resolved_at": "2026-11-30T18:29:01.500Z",
         "original_arguments": '{"amount":50,"currency":"EUR"}', "edited_arguments": '{"amount":5,"currency":"EUR"}'},
    ),
    "dex_agents.approval_refused": _event(
        "dex_agents.approval_refused",
        "se-approval-12",
        {"interrupt_id": "turn-2:call_charge_2", "tool_call_id": "call_charge_2", "approver": "ana@ops",
         "error": "Invalid arguments for tool 'charge_card': amount: Input should be a valid integer",
         "edited_arguments": '{"amount":"five"}'},
    ),
    "dex_agents.tool_outcome_settled": _event(
        "dex_agents.tool_outcome_settled",
        "se-reconcile-14",
        {"tool_call_id": "call_refund_3", "tool_name": "refund", "status": "succeeded", "settled_by": "reconcile",
         "resolver": None, "reason": None},
    ),
    "dex_agents.session_rewound": session_rewound_event(SESSION_REWIND, "0b7e5c1e-2f7a-4c35-9b1d-5d3f2a1c9e04"),
    "dex_agents.turn_canceled": _event(
        "dex_agents.turn_canceled",
        "se-cancel-15",
        {"reason": "wrong customer", "requested_at": "2026-11-30T18:32:00.000Z"},
    ),
    "usage_recorded": _event("usage_recorded", "se-model-8", {"recorded": usage_object(CALL_USAGE), "session": usage_object(SESSION_USAGE)}),
    "dex_agents.model_call_failed": _event(
        "dex_agents.model_call_failed", "se-model-9", {"error": "429 Too Many Requests: retry after 20 s", "retrying": True}
    ),
    "dex_agents.history_compacted": _event(
        "dex_agents.history_compacted",
        "se-compact-5",
        {"through_sequence": 14, "summarized_messages": 14, "summary_chars": 1382, "trigger": "reactive"},
    ),
    "vercel_ai.step_finished": _event(
        "vercel_ai.step_finished",
        "se-model-8",
        {"finish_reason": "tool-calls", "warnings": pvector([]), "latency_ms": 812.5, "raw": pmap({"id": "resp_1", "n": -1})},
    ),
}
"""One event per type the session writes (the spec's events table and ours), plus one adapter-specific
(prefixed) event."""
