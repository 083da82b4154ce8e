"""Reducers of ``CancelTurn`` (ours), the Step ``cancel_turn`` starts (see ``reducers.cancel`` for the
request, what each open record becomes, and why the Step decides from a fresh read).

Invariants:
    * The turn the request named ends canceled with its note (two inputs of one attempt: the started
      one asks the runner for the note, its follow-up commits it); the request is deleted in the same
      commit, so a second ``CancelTurn`` finds nothing to do.
    * No turn running (it ended as the request came): only the request is deleted.
    * A newer turn running (it began as the request came; Dex stopped its Steps) carries on from its
      records; it ends canceled only when an open call of it cannot run again.
"""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pmap, pvector

from dex_agents.pure.flow.step_options import StepMovement, move_to
from dex_agents.pure.machine import events
from dex_agents.pure.machine.effects import (
    DeleteAttribute,
    DeleteMapInstance,
    StepEffect,
    Write,
    WriteEvent,
)
from dex_agents.pure.machine.endings import BuildUserMessage, DeadEnd, GoToSteps
from dex_agents.pure.machine.policies import call_step_type
from dex_agents.pure.machine.reducers.cancel import NO_CANCELLATION, TURN_SCOPE, TURN_STEPS, canceled_record
from dex_agents.pure.machine.reducers.common import (
    NO_RUNNING_TURN,
    NOT_STARTED,
    append_messages,
    clear_turn,
    go_to,
    kept_unknown,
    set_agent_state,
    unknown_outcome_writes,
    user_message_problem,
)
from dex_agents.pure.machine.reducers.subagents import CANCELED, turn_end
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import Invocation, TurnCancelNote, TurnCancelStarted
from dex_agents.pure.machine.texts import build_turn_cancel_note, canceled_by_user
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.values.persistence import TOOL_CALL_CANCELLATIONS, TURN_CANCELLATION, StepType
from dex_agents.pure.values.session import (
    AgentState,
    AgentStatus,
    AgentToolCall,
    FrameworkMessage,
    ToolCallCancellation,
    ToolCallStatus,
    TurnCancellation,
)


def _canceled_turn_records(state: SessionState, cancellation: TurnCancellation) -> list[AgentToolCall]:
    """The running turn's open records, made final by the turn's cancellation (deferral order)."""
    audit = ToolCallCancellation(reason=cancellation.reason, canceled_at=cancellation.requested_at, scope=TURN_SCOPE)
    return [canceled_record(record, audit) for record in state.records_in_deferral_order() if not record.status.is_final]


def _without_requests(state: SessionState) -> tuple[SessionState, list[Write]]:
    """``state`` without the cancellation requests (the Attribute and every loaded instance), and the
    deletes of them."""
    writes: list[Write] = [DeleteAttribute.of(TURN_CANCELLATION)]
    writes.extend(DeleteMapInstance.of(TOOL_CALL_CANCELLATIONS, key) for key in sorted(state.tool_call_cancellations))
    return replace(state, turn_cancellation=None, tool_call_cancellations=pmap()), writes


def reduce_turn_cancel_started(state: SessionState, started: TurnCancelStarted) -> StepTransition:
    """``CancelTurn``: with no turn running, delete the request; else write what the cancellation makes
    of the open records, then ask for the note."""
    cancellation, agent_state = state.turn_cancellation, state.agent_state
    if cancellation is None:
        return reject(state, NO_CANCELLATION)
    if agent_state is None:
        return reject(state, NOT_STARTED)
    turn_id = agent_state.current_turn_id
    if turn_id is None:
        cleared, deletes = _without_requests(state)
        return step(cleared, deletes, DeadEnd())
    if turn_id != cancellation.turn_id:
        carried_on = _carry_on(state, agent_state, turn_id)
        if carried_on is not None:
            return carried_on
    effects: list[StepEffect] = []
    finals = _canceled_turn_records(state, cancellation)
    for record in finals:
        if record.status is ToolCallStatus.REJECTED and record.interrupt_id is not None:
            effects.append(WriteEvent(event=events.interrupt_resolved(
                turn_id, started.invocation, record.interrupt_id, False, record.rejection_message)))
        effects.append(WriteEvent(event=events.tool_call_finished(started.invocation, record)))
    records = state.tool_calls
    for record in finals:
        records = records.set(record.tool_call_id, record)
    note = build_turn_cancel_note(cancellation.reason, records.values())
    return step(state, effects, BuildUserMessage(text=note, purpose=TurnCancelNote()))


def _carry_on(state: SessionState, agent_state: AgentState, turn_id: str) -> StepTransition | None:
    """A newer turn began as the request to cancel the older one committed, so Dex cancelled the newer
    turn's Steps: start them again from its records (its model call, or each open call's Step and the
    ``ResumeTurn`` that waits for them) and delete the request. ``None`` when an open call cannot run
    again (a single-attempt write or a sub-agent's call whose Step was running): that turn ends canceled."""
    open_records = [record for record in state.records_in_deferral_order()
                    if record.turn_id == turn_id and not record.status.is_final]
    movements = [_restart_of(state, record) for record in open_records]
    restarts = [movement for movement in movements if movement is not None]
    if len(restarts) < len(movements):
        return None
    forget = DeleteAttribute.of(TURN_CANCELLATION)
    kept = replace(state, turn_cancellation=None)
    if restarts:
        return step(kept, [forget], GoToSteps(movements=pvector([*restarts,
                                                                 move_to(StepType.RESUME_TURN, len(restarts))])))
    if agent_state.status is AgentStatus.RUNNING_TOOLS:  # its ResumeTurn was about to call the model
        agent_state = replace(agent_state, status=AgentStatus.RUNNING_MODEL)
        kept = replace(kept, agent_state=agent_state)
        return step(kept, [forget, set_agent_state(agent_state)], go_to(StepType.RUN_MODEL))
    return step(kept, [forget], go_to(StepType.RUN_MODEL))


def _restart_of(state: SessionState, record: AgentToolCall) -> StepMovement | None:
    """The Step that carries ``record`` (open) on, or ``None`` when its Step cannot run again."""
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        return move_to(StepType.AWAIT_TOOL_APPROVAL, record.tool_call_id)
    if record.unknown_error is not None:
        return move_to(StepType.RECONCILE_TOOL_OUTCOME, record.tool_call_id)
    if record.tool_call_id in state.tool_call_cancellations:
        return move_to(StepType.RECORD_TOOL_CANCELLATION, record.tool_call_id)
    step_type = call_step_type(record)
    return move_to(step_type, record.tool_call_id) if step_type is StepType.CALL_TOOL else None


def reduce_turn_cancel_note_built(state: SessionState, invocation: Invocation,
                                  note_message: FrameworkMessage) -> StepTransition:
    """The cancel note was built: the records' final values (an unknown outcome kept for
    ``resolve_tool_outcome``), the note, the turn ended canceled and cleared, the request deleted ->
    ``AwaitUserMessage``; Dex cancels whatever Step of the turn still runs."""
    cancellation, agent_state = state.turn_cancellation, state.agent_state
    if cancellation is None:
        return reject(state, NO_CANCELLATION)
    if agent_state is None:
        return reject(state, NOT_STARTED)
    turn_id = agent_state.current_turn_id
    if turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    problem = user_message_problem(agent_state, note_message)
    if problem is not None:
        return reject(state, problem)
    writes: list[Write] = []
    kept = state
    for record in _canceled_turn_records(state, cancellation):  # their AgentToolCalls go with the turn
        kept = kept_unknown(kept, record)
        writes.extend(unknown_outcome_writes(record))
    noted, agent_state, note_writes = append_messages(kept, agent_state, turn_id, [note_message])
    cleared, clear_writes = clear_turn(noted, turn_id)
    ended = replace(agent_state, status=AgentStatus.WAITING_FOR_USER_MESSAGE, current_turn_id=None,
                    current_turn_sequence=None, canceled_turn_count=agent_state.canceled_turn_count + 1,
                    last_turn_error=None)
    unrequested, deletes = _without_requests(cleared)
    done = replace(unrequested, agent_state=ended)
    event = events.turn_canceled(turn_id, invocation, cancellation.reason, cancellation.requested_at)
    ending = turn_end(ended, CANCELED, canceled_by_user(cancellation.reason), cleared.usage)
    if isinstance(ending, GoToSteps):  # Dex cancels whatever Step of the turn still runs
        ending = replace(ending, cancel_steps=pvector(TURN_STEPS))
    return step(done, [*writes, *note_writes, *clear_writes, *deletes, set_agent_state(ended),
                       WriteEvent(event=event)], ending)


__all__ = ["reduce_turn_cancel_note_built", "reduce_turn_cancel_started"]
