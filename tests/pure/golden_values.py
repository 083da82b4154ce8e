"""The values behind the golden files in ``tests/pure/golden/``: one realistic value per wire type, plus one
``AgentEvent`` per event type of the spec's events table.

Each golden file holds exactly ``encode_as(value, wire_type)`` (no trailing newline). Regenerate them after
a deliberate wire change with ``python -m tests.pure.golden_values`` and review the diff: a changed golden
file is a wire format change that other-language readers must follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import TypeVar, final

from dex import JsonCodec, Value
from pyrsistent import pmap, pvector
from returns.result import Result

from dex_agents.pure.json_value import JsonObject, JsonValue
from dex_agents.pure.rpc_values import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.runner_values import (
    DeferredToolCall,
    McpToolAnnotations,
    ResolvedToolPolicy,
    ToolCallsRequested,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.pure.values import (
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentSessionStartInput,
    AgentState,
    AgentStatus,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    FrameworkMessage,
    MessageRole,
    ToolCallCompleted,
    ToolCallStatus,
    ToolEffect,
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


def _stored(sequence: int, message: FrameworkMessage, turn_id: str = TURN) -> AgentMessage:
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
SNAPSHOT_MESSAGES = pvector([_stored(1, FIRST_QUESTION, "turn-1"), _stored(2, FIRST_ANSWER, "turn-1"), _stored(3, USER_MESSAGE)])
"""The stored history while turn-2 runs: turn-1's question and answer, then turn-2's user message."""

PAGE_MESSAGES = pvector([_stored(3, USER_MESSAGE), _stored(4, TOOL_RESULT_MESSAGE), _stored(5, ANSWER_MESSAGE)])
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
)
UNBOUNDED_INTERRUPT = AgentInterrupt(
    interrupt_id="turn-2:call_wire_4",
    turn_id=TURN,
    tool_call_id="call_wire_4",
    tool_name="wire_transfer",
    arguments='{"iban":"DE00 1234","amount":120.5}',
    effect=ToolEffect.UNCLASSIFIED,
    deadline=None,
)


def _event(event_type: str, step_execution_id: str, payload: dict[str, JsonValue], attempt: int = 1) -> AgentEvent:
    turn_payload: JsonObject = pmap(payload)
    return AgentEvent(type=event_type, turn_id=TURN, attempt=attempt, step_execution_id=step_execution_id, payload=turn_payload)


def _usage_object(usage: AgentUsage) -> JsonValue:
    return pmap(
        {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        }
    )


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
        {"interrupt_id": "turn-2:call_charge_2", "approved": False, "rejection_message": None},
    ),
    "usage_recorded": _event("usage_recorded", "se-model-8", {"recorded": _usage_object(CALL_USAGE), "session": _usage_object(SESSION_USAGE)}),
    "vercel_ai.step_finished": _event(
        "vercel_ai.step_finished",
        "se-model-8",
        {"finish_reason": "tool-calls", "warnings": pvector([]), "latency_ms": 812.5, "raw": pmap({"id": "resp_1", "n": -1})},
    ),
}
"""One event per type of the spec's events table, plus one adapter-specific (prefixed) event."""

GOLDEN_CASES: list[GoldenCase] = [
    _case("agent_session_start_input", AgentSessionStartInput(initial_message="Où est la commande 42 ? 📦"), record_type(AgentSessionStartInput)),
    _case("agent_session_start_input.empty", AgentSessionStartInput(initial_message=None), record_type(AgentSessionStartInput)),
    _case("agent_usage", SESSION_USAGE, record_type(AgentUsage)),
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
    _case("agent_message", _stored(3, USER_MESSAGE), record_type(AgentMessage)),
    _case("agent_tool_call", CHARGE_CALL, record_type(AgentToolCall)),
    _case("agent_tool_call.outcome_unknown", UNKNOWN_CALL, record_type(AgentToolCall)),
    _case("agent_interrupt", INTERRUPT, record_type(AgentInterrupt)),
    _case("pending_interrupts", pvector([INTERRUPT, UNBOUNDED_INTERRUPT]), vector_type(AgentInterrupt)),
    _case(
        "agent_interrupt_resolution",
        AgentInterruptResolution(interrupt_id=INTERRUPT.interrupt_id, approved=False, rejection_message="Pas sans confirmation écrite."),
        record_type(AgentInterruptResolution),
    ),
    _case("agent_user_message", AgentUserMessage(text="Thanks! \"quoted\" \\ and a tab\there"), record_type(AgentUserMessage)),
    _case("tool_call_completed", ToolCallCompleted(tool_call_id="call_search_1"), record_type(ToolCallCompleted)),
    *[_case(f"agent_event.{event_type}", event, record_type(AgentEvent)) for event_type, event in EVENTS.items()],
    _case("send_user_message_input", SendUserMessageInput(text="Thanks"), record_type(SendUserMessageInput)),
    _case(
        "resolve_interrupt_input",
        ResolveInterruptInput(interrupt_id=INTERRUPT.interrupt_id, approved=True, rejection_message=None),
        record_type(ResolveInterruptInput),
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
