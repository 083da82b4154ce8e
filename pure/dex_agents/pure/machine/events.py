"""Builders of the ``AgentEvents`` Stream events the session itself writes, with the spec's exact
types and payload keys. Every event carries ``turn_id``, the Step ``attempt`` and ``step_execution_id``.

| type | payload |
| --- | --- |
| ``turn_started`` | ``{"sequence"}`` of the user message |
| ``turn_completed`` | ``{"message_count"}`` appended by the turn's final model call |
| ``turn_failed`` | ``{"error"}`` |
| ``tool_call_deferred`` | ``{"tool_call_id","tool_name","effect","requires_approval"}`` |
| ``tool_call_started`` | ``{"tool_call_id","tool_name"}`` |
| ``tool_call_finished`` | ``{"tool_call_id","tool_name","status"}`` |
| ``interrupt_raised`` | ``{"interrupt_id","tool_call_id","tool_name","deadline"}`` |
| ``interrupt_resolved`` | ``{"interrupt_id","approved","rejection_message"}``, and ours: ``"approver","reason","resolved_at","original_arguments","edited_arguments"`` |
| ``usage_recorded`` | ``{"recorded","session"}``, each an ``AgentUsage`` object |
| ``dex_agents.model_call_failed`` | ``{"error","retrying"}`` |
| ``dex_agents.history_compacted`` | ``{"through_sequence","summarized_messages","summary_chars","trigger"}`` |
| ``dex_agents.approval_refused`` | ``{"interrupt_id","tool_call_id","error","approver","edited_arguments"}`` |
| ``dex_agents.tool_outcome_settled`` | ``{"tool_call_id","tool_name","status","settled_by","resolver","reason"}`` |
| ``dex_agents.turn_canceled`` | ``{"reason","requested_at"}``: the turn ended canceled (``cancel_turn``) |
| ``dex_agents.session_rewound`` | ``{"to_turn","reason","previous_run_id","run_id","removed_turn_count","rewound_at","tool_calls"}`` (the client writes it, outside any Step) |
| ``dex_agents.sub_agent_ended`` | ``{"tool_call_id","tool_name","child_session_id","child_status","usage"}`` |

``dex_agents.model_call_failed`` is ours (the spec's table has no such event, so it carries a prefix):
``RunModel`` writes it when ``run_model_step`` raised, before the attempt fails, so a UI sees the
failure before the next attempt starts; ``retrying`` says whether another attempt follows.

``text_delta`` and ``reasoning_delta`` come from the runner's event writer (see ``coalescing``), which
also writes ``tool_call_started`` and ``tool_call_finished`` for a runner, with the payloads built here.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyrsistent import pmap, pvector

from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.machine.step_inputs import Invocation
from dex_agents.pure.values.time_travel import SessionRewind
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentToolCall,
    AgentUsage,
    HistorySummary,
    ToolCallApproval,
    ToolCallStatus,
)

TURN_STARTED = "turn_started"
TURN_COMPLETED = "turn_completed"
TURN_FAILED = "turn_failed"
TEXT_DELTA = "text_delta"
REASONING_DELTA = "reasoning_delta"
TOOL_CALL_DEFERRED = "tool_call_deferred"
TOOL_CALL_STARTED = "tool_call_started"
TOOL_CALL_FINISHED = "tool_call_finished"
INTERRUPT_RAISED = "interrupt_raised"
INTERRUPT_RESOLVED = "interrupt_resolved"
USAGE_RECORDED = "usage_recorded"
MODEL_CALL_FAILED = "dex_agents.model_call_failed"
HISTORY_COMPACTED = "dex_agents.history_compacted"
APPROVAL_REFUSED = "dex_agents.approval_refused"
TOOL_OUTCOME_SETTLED = "dex_agents.tool_outcome_settled"
TURN_CANCELED = "dex_agents.turn_canceled"
SUB_AGENT_ENDED = "dex_agents.sub_agent_ended"


def _event(event_type: str, turn_id: str, invocation: Invocation, payload: Mapping[str, JsonValue]) -> AgentEvent:
    return AgentEvent(
        type=event_type,
        turn_id=turn_id,
        attempt=invocation.attempt,
        step_execution_id=invocation.step_execution_id,
        payload=pmap(payload),
    )


def usage_json(usage: AgentUsage) -> JsonObject:
    """An ``AgentUsage`` as a JSON object (its wire form)."""
    return pmap(
        {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        }
    )


def turn_started(turn_id: str, invocation: Invocation, sequence: int) -> AgentEvent:
    """``turn_started``: the turn's user message was stored with ``sequence``."""
    return _event(TURN_STARTED, turn_id, invocation, {"sequence": sequence})


def turn_completed(turn_id: str, invocation: Invocation, message_count: int) -> AgentEvent:
    """``turn_completed``: the final model call appended ``message_count`` messages."""
    return _event(TURN_COMPLETED, turn_id, invocation, {"message_count": message_count})


def turn_failed(turn_id: str, invocation: Invocation, error: str) -> AgentEvent:
    """``turn_failed`` with the recovery error text."""
    return _event(TURN_FAILED, turn_id, invocation, {"error": error})


def turn_canceled(turn_id: str, invocation: Invocation, reason: str, requested_at: str) -> AgentEvent:
    """``dex_agents.turn_canceled`` (ours): the turn ended canceled, a terminal turn status beside
    ``turn_completed`` and ``turn_failed``."""
    return _event(TURN_CANCELED, turn_id, invocation, {"reason": reason, "requested_at": requested_at})


def tool_call_deferred(invocation: Invocation, record: AgentToolCall) -> AgentEvent:
    """``tool_call_deferred``: the model asked for the call, which runs in its own Step."""
    payload: dict[str, JsonValue] = {
        "tool_call_id": record.tool_call_id,
        "tool_name": record.tool_name,
        "effect": record.effect.value,
        "requires_approval": record.requires_approval,
    }
    return _event(TOOL_CALL_DEFERRED, record.turn_id, invocation, payload)


def tool_call_started_payload(tool_call_id: str, tool_name: str) -> JsonObject:
    """The payload of ``tool_call_started``."""
    return pmap({"tool_call_id": tool_call_id, "tool_name": tool_name})


def tool_call_finished_payload(tool_call_id: str, tool_name: str, status: ToolCallStatus) -> JsonObject:
    """The payload of ``tool_call_finished``."""
    return pmap({"tool_call_id": tool_call_id, "tool_name": tool_name, "status": status.value})


def tool_call_started(invocation: Invocation, record: AgentToolCall) -> AgentEvent:
    """``tool_call_started``: the tool Step is about to run the tool."""
    return _event(TOOL_CALL_STARTED, record.turn_id, invocation,
                  tool_call_started_payload(record.tool_call_id, record.tool_name))


def tool_call_finished(invocation: Invocation, record: AgentToolCall) -> AgentEvent:
    """``tool_call_finished``: the record became final (including a rejection)."""
    return _event(TOOL_CALL_FINISHED, record.turn_id, invocation,
                  tool_call_finished_payload(record.tool_call_id, record.tool_name, record.status))


def interrupt_raised(invocation: Invocation, interrupt: AgentInterrupt) -> AgentEvent:
    """``interrupt_raised``: the call waits for approval until ``deadline`` (``null`` for none)."""
    payload: dict[str, JsonValue] = {
        "interrupt_id": interrupt.interrupt_id,
        "tool_call_id": interrupt.tool_call_id,
        "tool_name": interrupt.tool_name,
        "deadline": interrupt.deadline,
    }
    return _event(INTERRUPT_RAISED, interrupt.turn_id, invocation, payload)


def interrupt_resolved(
    turn_id: str,
    invocation: Invocation,
    interrupt_id: str,
    approved: bool,
    rejection_message: str | None,
    approval: ToolCallApproval | None = None,
    arguments: str | None = None,
) -> AgentEvent:
    """``interrupt_resolved``, written by ``AwaitToolApproval`` (RPCs cannot write Streams). Ours too:
    the audit of a resolution (``approver``, ``reason``, ``resolved_at``; ``null`` for a deadline) and,
    when the approver edited the call, ``original_arguments`` and ``edited_arguments`` (else ``null``)."""
    edited = approval is not None and approval.original_arguments is not None
    payload: dict[str, JsonValue] = {
        "interrupt_id": interrupt_id,
        "approved": approved,
        "rejection_message": rejection_message,
        "approver": None if approval is None else approval.approver,
        "reason": None if approval is None else approval.reason,
        "resolved_at": None if approval is None else approval.resolved_at,
        "original_arguments": approval.original_arguments if edited and approval is not None else None,
        "edited_arguments": arguments if edited else None,
    }
    return _event(INTERRUPT_RESOLVED, turn_id, invocation, payload)


def approval_refused(turn_id: str, invocation: Invocation, resolution: AgentInterruptResolution, tool_call_id: str,
                     error: str) -> AgentEvent:
    """``dex_agents.approval_refused`` (ours): ``AwaitToolApproval`` refused an edited approval
    (``error``: the tool's schema's validation error); the interrupt is pending again."""
    payload: dict[str, JsonValue] = {
        "interrupt_id": resolution.interrupt_id,
        "tool_call_id": tool_call_id,
        "error": error,
        "approver": resolution.approver,
        "edited_arguments": resolution.edited_arguments,
    }
    return _event(APPROVAL_REFUSED, turn_id, invocation, payload)


def tool_outcome_settled(invocation: Invocation, record: AgentToolCall) -> AgentEvent:
    """``dex_agents.tool_outcome_settled`` (ours): an unknown outcome was settled (``settled_by``
    ``"reconcile"`` or ``"operator"``) as ``status``."""
    settlement = record.settlement
    payload: dict[str, JsonValue] = {
        "tool_call_id": record.tool_call_id,
        "tool_name": record.tool_name,
        "status": record.status.value,
        "settled_by": None if settlement is None else settlement.settled_by,
        "resolver": None if settlement is None else settlement.resolver,
        "reason": None if settlement is None else settlement.reason,
    }
    return _event(TOOL_OUTCOME_SETTLED, record.turn_id, invocation, payload)


def usage_recorded(turn_id: str, invocation: Invocation, recorded: AgentUsage, session: AgentUsage) -> AgentEvent:
    """``usage_recorded``: this model call's usage and the session's new total."""
    payload: dict[str, JsonValue] = {"recorded": usage_json(recorded), "session": usage_json(session)}
    return _event(USAGE_RECORDED, turn_id, invocation, payload)


def sub_agent_ended(invocation: Invocation, record: AgentToolCall, child_status: str,
                    usage: AgentUsage) -> AgentEvent:
    """``dex_agents.sub_agent_ended``: the call's child session closed with ``child_status`` (Dex's
    Flow status) after using ``usage``, which the session's usage now includes (ours)."""
    payload: dict[str, JsonValue] = {
        "tool_call_id": record.tool_call_id, "tool_name": record.tool_name,
        "child_session_id": record.child_session_id, "child_status": child_status, "usage": usage_json(usage),
    }
    return _event(SUB_AGENT_ENDED, record.turn_id, invocation, payload)


def model_call_failed(turn_id: str, invocation: Invocation, error: str, retrying: bool) -> AgentEvent:
    """``dex_agents.model_call_failed``: the model call raised ``error``; ``retrying``: another attempt follows."""
    return _event(MODEL_CALL_FAILED, turn_id, invocation, {"error": error, "retrying": retrying})


def history_compacted(turn_id: str | None, invocation: Invocation, summary: HistorySummary) -> AgentEvent:
    """``dex_agents.history_compacted``: the model now sees ``summary`` in place of the messages
    through its boundary (ours: a compaction, ``CompactHistory``)."""
    payload: dict[str, JsonValue] = {
        "through_sequence": summary.through_sequence,
        "summarized_messages": summary.summarized_messages,
        "summary_chars": len(summary.text),
        "trigger": summary.trigger,
    }
    return AgentEvent(type=HISTORY_COMPACTED, turn_id=turn_id, attempt=invocation.attempt,
                      step_execution_id=invocation.step_execution_id, payload=pmap(payload))



SESSION_REWOUND = "dex_agents.session_rewound"
"""The event ``SessionClient.rewind`` writes once the session recorded the rewind (ours)."""


def session_rewound_event(audit: SessionRewind, run_id: str) -> AgentEvent:
    """The ``dex_agents.session_rewound`` event of ``audit``, whose rewind started the run ``run_id``
    (outside any turn and Step: ``turn_id`` null, ``attempt`` 0, ``step_execution_id`` empty)."""
    calls: list[JsonValue] = [pmap({
        "tool_call_id": call.tool_call_id, "turn_id": call.turn_id, "tool_name": call.tool_name,
        "effect": call.effect.value, "status": call.status.value, "idempotency_key": call.idempotency_key,
    }) for call in audit.tool_calls]
    fields: dict[str, JsonValue] = {
        "to_turn": audit.to_turn,
        "reason": audit.reason,
        "previous_run_id": audit.previous_run_id,
        "run_id": run_id,
        "removed_turn_count": audit.removed_turn_count,
        "rewound_at": audit.rewound_at,
        "tool_calls": pvector(calls),
    }
    payload: JsonObject = pmap(fields)
    return AgentEvent(type=SESSION_REWOUND, turn_id=None, attempt=0, step_execution_id="", payload=payload)

__all__ = [
    "SESSION_REWOUND",
    "session_rewound_event",
    "APPROVAL_REFUSED",
    "TOOL_OUTCOME_SETTLED",
    "approval_refused",
    "tool_outcome_settled",
    "HISTORY_COMPACTED",
    "history_compacted",
    "INTERRUPT_RAISED",
    "INTERRUPT_RESOLVED",
    "MODEL_CALL_FAILED",
    "REASONING_DELTA",
    "SUB_AGENT_ENDED",
    "sub_agent_ended",
    "TEXT_DELTA",
    "TOOL_CALL_DEFERRED",
    "TOOL_CALL_FINISHED",
    "TOOL_CALL_STARTED",
    "TURN_CANCELED",
    "TURN_COMPLETED",
    "TURN_FAILED",
    "TURN_STARTED",
    "USAGE_RECORDED",
    "interrupt_raised",
    "interrupt_resolved",
    "model_call_failed",
    "tool_call_deferred",
    "tool_call_finished",
    "tool_call_finished_payload",
    "tool_call_started",
    "tool_call_started_payload",
    "turn_canceled",
    "turn_completed",
    "turn_failed",
    "turn_started",
    "usage_json",
    "usage_recorded",
]
