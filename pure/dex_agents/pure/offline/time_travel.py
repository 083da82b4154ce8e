"""Where a session's turns ended in its history, and what was there: the pure part of
``SessionClient.rewind`` and ``SessionClient.fork``.

A turn ends in the Step execution that moves the session to ``AwaitUserMessage`` (``RunModel``'s final
answer, ``RecordTurnFailure``, a failed ``CompactHistory``; ``StartAgentSession`` ends "turn 0"). Dex
schedules that ``AwaitUserMessage``'s ``wait_for`` in the same commit, so its pending history event
(an ``AwaitPoint``) marks the state right after the turn ended: a Dex time travel to that ``wait_for``
(``ResetFlow`` by Step execution ID, writes after it not reapplied) restarts the run exactly there.

* ``turn_ends(steps, awaits)``: the turn each ``AwaitPoint`` follows, from the ``AgentState`` committed
  at it (its ended turns), in history order.
* ``values_at(steps, event_id)``: the stored values committed at ``event_id`` (every write up to it).
* ``rewound_tool_calls(steps, after)``: the tool calls whose records were written after ``after`` and
  that may have had an effect (not a ``read``; not rejected or still awaiting approval), each with its
  last committed record, in the order their records were first written.
* ``fork_seed(session_id, at_turn, values)``: the ``AgentSessionFork`` those values hold.

Invariant: nothing here reads a clock or Dex; the shell reads the history and acts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import final

from pyrsistent import pvector
from pyrsistent.typing import PVector
from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from dex_agents.pure.offline.export_document import OUTCOME_COMPLETED, HistoryStep
from dex_agents.pure.offline.stored_values import StoredKey, apply_writes, decode_stored
from dex_agents.pure.values.persistence import AttributeName, MapName
from dex_agents.pure.values.session import (
    AgentMessage,
    AgentSessionFork,
    AgentState,
    AgentToolCall,
    AgentUsage,
    HistorySummary,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.pure.values.time_travel import RewoundToolCall
from dex_agents.pure.wire.json_value import JsonValue

_NO_EFFECT = frozenset({ToolCallStatus.REJECTED, ToolCallStatus.AWAITING_APPROVAL})


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AwaitPoint:
    """An ``AwaitUserMessage`` ``wait_for`` pending event of one run's history."""

    event_id: int
    step_execution_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnd:
    """Turn ``turn`` ended where ``AwaitUserMessage`` execution ``step_execution_id``'s ``wait_for`` was
    scheduled (history event ``event_id``)."""

    turn: int
    event_id: int
    step_execution_id: str


def _stored_writes(step: HistoryStep) -> dict[StoredKey, JsonValue]:
    return {(write.name, write.instance): write.value for write in step.writes} \
        if step.outcome == OUTCOME_COMPLETED else {}


def agent_state_of(value: JsonValue | None) -> AgentState | None:
    """The stored ``AgentState`` ``value`` decoded (``None``: absent or unreadable)."""
    if value is None:
        return None
    decoded = decode_stored(AttributeName.AGENT_STATE, value).value_or(None)
    return decoded if isinstance(decoded, AgentState) else None


def turn_ends(steps: Sequence[HistoryStep], awaits: Iterable[AwaitPoint]) -> list[TurnEnd]:
    """The turn each of ``awaits`` follows (one run's ``steps`` and await points), in history order;
    an await point with no ``AgentState`` committed before it (none in that run) is skipped."""
    ends: list[TurnEnd] = []
    pending = sorted(awaits, key=lambda point: point.event_id)
    latest: JsonValue | None = None
    index = 0
    for point in pending:
        while index < len(steps) and steps[index].event_id < point.event_id:
            written = _stored_writes(steps[index]).get((AttributeName.AGENT_STATE, None))
            if written is not None:
                latest = written
            index += 1
        state = agent_state_of(latest)
        if state is not None and state.current_turn_id is None:
            ends.append(TurnEnd(turn=state.ended_turn_count, event_id=point.event_id,
                                step_execution_id=point.step_execution_id))
    return ends


def values_at(steps: Iterable[HistoryStep], event_id: int) -> dict[StoredKey, JsonValue]:
    """The stored values committed at history event ``event_id``: every write of ``steps`` up to it."""
    values: dict[StoredKey, JsonValue] = {}
    for step in steps:
        if step.event_id > event_id:
            break
        values = apply_writes(values, _stored_writes(step))
    return values


def rewound_tool_calls(steps: Iterable[HistoryStep], after: int) -> PVector[RewoundToolCall]:
    """The tool calls recorded after history event ``after`` that may have had an effect (see the
    module docstring)."""
    records: dict[str, AgentToolCall] = {}
    for step in steps:
        if step.event_id <= after:
            continue
        for (name, instance), value in _stored_writes(step).items():
            if name != MapName.AGENT_TOOL_CALLS or instance is None or value is None:
                continue
            record = decode_stored(name, value).value_or(None)
            if isinstance(record, AgentToolCall):
                records[instance] = record
    return pvector(
        RewoundToolCall(tool_call_id=record.tool_call_id, turn_id=record.turn_id, tool_name=record.tool_name,
                        effect=record.effect, status=record.status, idempotency_key=record.idempotency_key)
        for record in records.values()
        if record.effect is not ToolEffect.READ and record.status not in _NO_EFFECT)


def _decoded(values: Mapping[StoredKey, JsonValue], name: str, instance: str | None = None) -> object:
    value = values.get((name, instance))
    if value is None:
        return None
    decoded = decode_stored(name, value)
    return decoded.unwrap() if is_successful(decoded) else None


def turn_not_ended(state: AgentState | None, turn: int) -> str | None:
    """Why ``turn`` is no point to go back to in a session whose latest state is ``state``: it has not
    ended (``None``: it has)."""
    ended = 0 if state is None else state.ended_turn_count
    if turn <= ended:
        return None
    running = None if state is None else state.current_turn_id
    now = f"; {running} is running" if running is not None else ""
    return f"turn {turn} has not ended: the session has ended {ended} turns{now}"


def rewind_end(state: AgentState | None, ends: Sequence[TurnEnd], to_turn: int) -> Result[TurnEnd, str]:
    """Where a rewind of the current run (latest state ``state``, turn ends ``ends``) to ``to_turn``
    restarts it: the last point ``to_turn`` ended in that run; or why there is none (it has not ended,
    the session is right after it already, or it ended in an earlier run, before a continue-as-new)."""
    not_ended = turn_not_ended(state, to_turn)
    if not_ended is not None:
        return Failure(not_ended)
    ended = 0 if state is None else state.ended_turn_count
    if to_turn == ended and (state is None or state.current_turn_id is None):
        return Failure(f"the session is right after turn {to_turn} already: nothing to rewind")
    end = next((end for end in reversed(ends) if end.turn == to_turn), None)
    if end is None:
        first = min((e.turn for e in ends), default=ended)
        return Failure(f"turn {to_turn} ended in an earlier run of the session (it continued as new since); a "
                       f"rewind reaches back to turn {first} at the earliest (fork the session at turn {to_turn} "
                       "instead)")
    return Success(end)


def fork_seed(session_id: str, at_turn: int, values: Mapping[StoredKey, JsonValue]) -> Result[AgentSessionFork, str]:
    """The seed of a fork of ``session_id`` after turn ``at_turn``, from the ``values`` committed right
    after it ended, or why they hold none."""
    state = _decoded(values, AttributeName.AGENT_STATE)
    if not isinstance(state, AgentState) or state.current_turn_id is not None or state.ended_turn_count != at_turn:
        return Failure(f"the stored state right after turn {at_turn} cannot be read")
    messages = sorted((m for (name, instance), _ in values.items() if name == MapName.AGENT_MESSAGES
                       for m in [_decoded(values, name, instance)] if isinstance(m, AgentMessage)),
                      key=lambda message: message.sequence)
    usage = _decoded(values, AttributeName.AGENT_USAGE)
    summary = _decoded(values, AttributeName.HISTORY_SUMMARY)
    if len(messages) != state.message_count:
        return Failure(f"turn {at_turn}'s {state.message_count} messages are not all in the history")
    return Success(AgentSessionFork(
        source_session_id=session_id, at_turn=at_turn, state=state, messages=pvector(messages),
        usage=usage if isinstance(usage, AgentUsage) else AgentUsage(),
        history_summary=summary if isinstance(summary, HistorySummary) else None))


__all__ = [
    "AwaitPoint",
    "TurnEnd",
    "agent_state_of",
    "fork_seed",
    "rewind_end",
    "rewound_tool_calls",
    "turn_ends",
    "turn_not_ended",
    "values_at",
]
