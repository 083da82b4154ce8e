"""The console's JSON shapes of sessions, messages, tool calls, approvals and events (pure functions).

Invariants:
    * Field names are the wire names of ``dex_agents.pure.values`` (snake_case); enums are their wire strings.
    * A tool call's facts come from its record when the snapshot has one (the active turn), else from
      the retained events (``tool_call_deferred``/``started``/``finished``); the idempotency key is
      computed (``idempotency_key``), so every tool call shows one.
    * An approval's ``seconds_left`` is relative to ``now`` (never negative); ``arguments_sha256``
      is the SHA-256 of its arguments' UTF-8 text, what an edit-approve will have to match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any, Final

from pyrsistent import thaw

from dex_agents.console.backend import SessionSummary
from dex_agents.pure.machine import events as kinds
from dex_agents.pure.machine.keys import idempotency_key
from dex_agents.pure.values.time_travel import RewoundToolCall
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterrupt,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    ToolCallSettlement,
    ToolCallStatus,
    text_sha256,
)

__all__ = [
    "Json",
    "event_json",
    "interrupt_json",
    "open_calls_json",
    "rewound_calls_json",
    "settlement_json",
    "state_json",
    "summary_json",
    "tool_facts",
    "transcript_json",
    "turn_usage",
    "usage_json",
]

Json = dict[str, Any]
EventRow = tuple[str, AgentEvent, str]
"""(cursor, event, created_at ISO-8601) of one retained event."""


def usage_json(usage: AgentUsage | None) -> Json:
    return asdict(usage if usage is not None else AgentUsage())


def state_json(state: AgentState | None) -> Json | None:
    return None if state is None else {**asdict(state), "status": state.status.value}


def _seconds_left(deadline: str | None, now: datetime) -> float | None:
    if deadline is None:
        return None
    instant = datetime.fromisoformat(deadline.replace("Z", "+00:00"))
    return max(0.0, round((instant - now).total_seconds(), 3))


def interrupt_json(interrupt: AgentInterrupt, now: datetime) -> Json:
    return {**asdict(interrupt), "effect": interrupt.effect.value,
            "arguments_sha256": text_sha256(interrupt.arguments),
            "seconds_left": _seconds_left(interrupt.deadline, now)}


SETTLEMENT_FIELDS: Final = ("status", "settled_by", "resolver", "reason")
"""A settlement's JSON fields (the ``dex_agents.tool_outcome_settled`` event's, and the record's)."""


def settlement_json(status: ToolCallStatus, settlement: ToolCallSettlement) -> Json:
    """How an unknown outcome was settled, as ``tool_facts`` reads it from the event."""
    return {"status": status.value, "settled_by": settlement.settled_by, "resolver": settlement.resolver,
            "reason": settlement.reason}


def rewound_calls_json(calls: Iterable[RewoundToolCall]) -> list[Json]:
    """The tool calls a rewind removes (or removed) that may have had an effect."""
    return [{"tool_call_id": call.tool_call_id, "turn_id": call.turn_id, "tool_name": call.tool_name,
             "effect": call.effect.value, "status": call.status.value, "idempotency_key": call.idempotency_key}
            for call in calls]


def open_calls_json(records: Iterable[AgentToolCall]) -> list[Json]:
    """The running turn's tool calls that are still open (pending or awaiting approval), in the
    model's order: what ``cancel_tool_call`` can still cancel."""
    return [{"tool_call_id": record.tool_call_id, "turn_id": record.turn_id, "tool_name": record.tool_name,
             "arguments": record.arguments, "effect": record.effect.value, "status": record.status.value,
             "idempotency_key": record.idempotency_key}
            for record in sorted(records, key=lambda record: record.deferral_order) if not record.status.is_final]


def summary_json(summary: SessionSummary, now: datetime, *, last_activity: bool) -> Json:
    """One row of the list; with ``last_activity`` (its latest event was read) that too: the latest
    event's time, or the start's when it has none."""
    entry = summary.entry
    deadlines = sorted(interrupt.deadline for interrupt in summary.pending if interrupt.deadline is not None)
    usage = usage_json(summary.usage)
    return {
        "session_id": entry.flow_id, "flow_type": entry.flow_type, "run_status": entry.status.name.lower(),
        "started_at": entry.started_at.isoformat(),
        "closed_at": None if entry.closed_at is None else entry.closed_at.isoformat(),
        "status": None if summary.state is None else summary.state.status.value,
        "turns": 0 if summary.state is None else summary.state.turn_count,
        "messages": 0 if summary.state is None else summary.state.message_count,
        "tokens": usage["input_tokens"] + usage["output_tokens"], "usage": usage,
        "pending_approvals": len(summary.pending),
        "next_deadline": deadlines[0] if deadlines else None,
        "seconds_left": _seconds_left(deadlines[0], now) if deadlines else None,
    } | ({"last_activity": summary.last_event_at or entry.started_at.isoformat()} if last_activity else {})


def event_json(row: EventRow) -> Json:
    cursor, event, created_at = row
    return {"cursor": cursor, "type": event.type, "turn_id": event.turn_id, "attempt": event.attempt,
            "step_execution_id": event.step_execution_id, "payload": thaw(event.payload), "created_at": created_at}


def tool_facts(rows: Iterable[EventRow]) -> dict[tuple[str | None, str], Json]:
    """What the events tell of each tool call, by (turn ID, tool call ID): effect, approval, attempts,
    status, how its approval was answered (``answer``: approved, approver, reason, edited arguments)
    and how an unknown outcome was settled (``settlement``: status, settled_by, resolver, reason)."""
    facts: dict[tuple[str | None, str], Json] = {}
    raised: dict[str, tuple[str | None, str]] = {}
    for _, event, _ in rows:
        payload = event.payload
        if event.type == kinds.INTERRUPT_RESOLVED and (key := raised.get(str(payload.get("interrupt_id")))):
            facts.setdefault(key, {"attempts": 0, "status": "pending"})["answer"] = {
                name: payload.get(name) for name in ("approved", "approver", "reason", "edited_arguments")}
            continue
        call_id = payload.get("tool_call_id")
        if not isinstance(call_id, str):
            continue
        if event.type == kinds.INTERRUPT_RAISED:
            raised[str(payload.get("interrupt_id"))] = (event.turn_id, call_id)
            continue
        if event.type == kinds.TOOL_OUTCOME_SETTLED:
            fact = facts.setdefault((event.turn_id, call_id), {"attempts": 0, "status": "pending"})
            fact["status"] = payload.get("status")
            fact["settlement"] = {name: payload.get(name) for name in SETTLEMENT_FIELDS}
            continue
        if event.type not in (kinds.TOOL_CALL_DEFERRED, kinds.TOOL_CALL_STARTED, kinds.TOOL_CALL_FINISHED):
            continue
        fact = facts.setdefault((event.turn_id, call_id), {"attempts": 0, "status": "pending"})
        if event.type == kinds.TOOL_CALL_DEFERRED:
            fact["effect"] = payload.get("effect")
            fact["requires_approval"] = payload.get("requires_approval")
        elif event.type == kinds.TOOL_CALL_STARTED:
            fact["attempts"] = max(int(fact["attempts"]), event.attempt)
        else:
            fact["status"] = payload.get("status")
    return facts


def turn_usage(rows: Iterable[EventRow]) -> dict[str, Json]:
    """Model usage per turn, summed over its ``usage_recorded`` events."""
    totals: dict[str, Json] = {}
    for _, event, _ in rows:
        recorded = event.payload.get("recorded")
        if event.type != kinds.USAGE_RECORDED or event.turn_id is None or not isinstance(recorded, Mapping):
            continue
        total = totals.setdefault(event.turn_id, usage_json(None))
        for name, value in recorded.items():
            if name in total and isinstance(value, int):
                total[name] += value
    return totals


def _tool_json(session_id: str, message: AgentMessage, facts: Mapping[tuple[str | None, str], Json],
               records: Mapping[str, AgentToolCall]) -> Json:
    call_id = message.tool_call_id or ""
    record = records.get(call_id)
    fact = facts.get((message.turn_id, call_id), {})
    return {
        "tool_call_id": call_id, "tool_name": message.tool_name,
        "effect": record.effect.value if record is not None else fact.get("effect"),
        "status": record.status.value if record is not None else fact.get("status"),
        "attempts": fact.get("attempts", 0),
        "idempotency_key": idempotency_key(session_id, message.turn_id, call_id) if call_id else None,
        "interrupt_id": record.interrupt_id if record is not None else None,
        "approval": fact.get("answer"),
        "settlement": fact.get("settlement"),
    }


def transcript_json(session_id: str, messages: Sequence[AgentMessage], rows: Sequence[EventRow],
                    records: Sequence[AgentToolCall]) -> list[Json]:
    """The messages, oldest first, each tool-call message with its tool call's facts under ``tool``."""
    facts = tool_facts(rows)
    by_id = {record.tool_call_id: record for record in records}
    return [{"sequence": message.sequence, "turn_id": message.turn_id, "role": message.role.value,
             "text": message.text, "tool_call_id": message.tool_call_id, "tool_name": message.tool_name,
             "tool_arguments": message.tool_arguments, "tool_output": message.tool_output,
             "tool": _tool_json(session_id, message, facts, by_id) if message.tool_call_id else None}
            for message in messages]
