"""Reducers of an operator's cancellations (ours): the RPCs ``cancel_turn`` and ``cancel_tool_call``,
and the Steps that finish them, ``CancelTurn`` and ``RecordToolCancellation``.

The RPC decides, in its own commit: it makes the records final with their audit
(``ToolCallCancellation``: reason, time, scope) and has Dex cancel the running Steps, so a Step that
finishes after the cancellation commits nothing (Dex discards its result) and one that finished
before it left a final record the RPC keeps. The Step it starts then writes what an RPC cannot (the
events, a note for the model) and moves the session on. A crash of a Worker between the two only
delays the Step: Dex delivers it again; the canceled Steps are never delivered again.

What an open record becomes:

=================================  ===========================================================
Record                             Becomes
=================================  ===========================================================
``awaiting_approval``              ``rejected`` with ``cancelled by the user: <reason>``
``pending`` ``read`` /             ``canceled`` (``cancelled by the user: <reason>``)
``idempotent_write``
``pending`` single-attempt write   ``outcome_unknown``: its Step may have started the write; it never
                                   runs again (``canceled_write_error``)
``pending`` with ``unknown_error`` ``outcome_unknown`` (``cancel_turn``: its reconcile is canceled);
                                   ``cancel_tool_call`` answers ``false``: it is not running
=================================  ===========================================================

* ``cancel_turn {turn_id, reason}``: ``false`` unless ``turn_id`` is the running turn and no
  cancellation of it is under way. Otherwise every open record is made final as above, the pending
  interrupts are dropped, ``AgentState.cancellation`` is set, Dex cancels every Step of the turn
  (``TURN_STEPS``) and ``CancelTurn`` starts (``true``). ``CancelTurn`` writes ``interrupt_resolved``
  and ``tool_call_finished`` for those records, asks the runner for the note (``build_turn_cancel_note``,
  so the next model call reads that the user cancelled the turn and why), appends it as the turn's
  last message, ends the turn canceled (``canceled_turn_count``; ``dex_agents.turn_canceled``) and
  moves to ``AwaitUserMessage``: queued messages are kept and the next turn starts from them (a
  sub-agent's child session instead completes its Flow, its result ``canceled``). A sub-agent's call
  (``AwaitSubAgent``) is a turn Step too: Dex ends its wait; its child session is the client's to
  cancel (``SessionClient.cancel_turn`` cancels the running children's turns after the parent's).
* ``cancel_tool_call {tool_call_id, reason}``: ``false`` unless the record is open in the running turn
  (and no turn cancellation is under way). An ``awaiting_approval`` call is rejected through its
  ``InterruptResolutions`` instance (``AwaitToolApproval`` records it). A ``pending`` call is made final
  as above and Dex cancels its Step type; ``RecordToolCancellation`` writes ``tool_call_finished`` and
  publishes its ``ToolCallCompleted``, so the turn goes on and the model reads the result. Dex cancels
  by Step type, so every other pending ``read`` / ``idempotent_write`` call of the turn is started
  again under its idempotency key (its effect allows another run); a single-attempt write, or a
  sub-agent's call, is refused while another of its Step type runs beside it (it cannot run again):
  cancel the turn instead.
* Text that cannot be encoded, or a blank reason, is refused (``RefuseRpc``); nothing changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from pyrsistent import pvector

from dex_agents.pure.flow.step_options import move_to
from dex_agents.pure.machine import events
from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import (
    BuildUserMessage,
    PublishToChannelInstance,
    StepEffect,
    Write,
    WriteEvent,
)
from dex_agents.pure.machine.policies import call_step_type, tool_step_type
from dex_agents.pure.machine.reducers.common import (
    NO_RUNNING_TURN,
    NOT_STARTED,
    append_messages,
    clear_turn,
    finalize_record,
    kept_unknown,
    record_writes,
    set_agent_state,
    set_pending_interrupts,
    user_message_problem,
)
from dex_agents.pure.machine.reducers.subagents import CANCELED, turn_end
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    CancelToolCallCalled,
    CancelTurnCalled,
    Invocation,
    ToolCancellationStarted,
    TurnCancelNote,
    TurnCancelStarted,
)
from dex_agents.pure.machine.texts import build_turn_cancel_note, canceled_by_user, canceled_write_error
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, answer, refuse, reject, step
from dex_agents.pure.machine.validation import lone_surrogate_problem
from dex_agents.pure.values.persistence import INTERRUPT_RESOLUTIONS, StepType
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentState,
    AgentStatus,
    AgentToolCall,
    FrameworkMessage,
    ToolCallCancellation,
    ToolCallStatus,
    TurnCancellation,
)

TURN_STEPS: Final = (
    StepType.RUN_MODEL,
    StepType.COMPACT_HISTORY,
    StepType.AWAIT_TOOL_APPROVAL,
    StepType.CALL_TOOL,
    StepType.CALL_SINGLE_ATTEMPT_TOOL,
    StepType.RECORD_TOOL_FAILURE,
    StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
    StepType.RECONCILE_TOOL_OUTCOME,
    StepType.RECORD_TOOL_CANCELLATION,
    StepType.RESUME_TURN,
    StepType.RECORD_TURN_FAILURE,
    StepType.AWAIT_SUB_AGENT,
)
"""The Step types a running turn may have active; ``cancel_turn`` cancels them all (never
``StartAgentSession``, ``AwaitUserMessage`` or ``CancelTurn``)."""

TURN_SCOPE: Final = "turn"
TOOL_CALL_SCOPE: Final = "tool_call"
NO_CANCELLATION: Final = "no cancellation of the running turn was requested"


def _reason_problem(reason: str, text_fields: tuple[tuple[str, str], ...]) -> str | None:
    for value, name in text_fields:
        problem = lone_surrogate_problem(value, name)
        if problem is not None:
            return problem
    return "reason must not be blank" if not reason.strip() else None


def canceled_record(record: AgentToolCall, cancellation: ToolCallCancellation) -> AgentToolCall:
    """``record`` (open) made final by an operator's cancellation (see the module table)."""
    reason = cancellation.reason
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        return replace(record, status=ToolCallStatus.REJECTED, rejection_message=canceled_by_user(reason),
                       cancellation=cancellation)
    if record.unknown_error is not None:
        return replace(record, status=ToolCallStatus.OUTCOME_UNKNOWN, error=record.unknown_error,
                       cancellation=cancellation)
    if tool_step_type(record.effect) is StepType.CALL_SINGLE_ATTEMPT_TOOL:
        return replace(record, status=ToolCallStatus.OUTCOME_UNKNOWN, error=canceled_write_error(reason),
                       cancellation=cancellation)
    return replace(record, status=ToolCallStatus.CANCELED, error=canceled_by_user(reason), cancellation=cancellation)


def reduce_cancel_turn(state: SessionState, called: CancelTurnCalled) -> RpcTransition:
    """``cancel_turn``: refuse bad text; ``false`` unless ``turn_id`` runs and is not being canceled;
    else make the open records final, drop the pending interrupts, record the cancellation, cancel the
    turn's Steps and start ``CancelTurn`` (``true``)."""
    request = called.input
    problem = _reason_problem(request.reason, ((request.reason, "reason"), (request.turn_id, "turn_id")))
    if problem is not None:
        return refuse(state, problem)
    agent_state = state.agent_state
    if agent_state is None or agent_state.current_turn_id != request.turn_id or agent_state.cancellation is not None:
        return answer(state, False)
    at = format_instant(called.now_ms)
    audit = ToolCallCancellation(reason=request.reason, canceled_at=at, scope=TURN_SCOPE)
    cancellation = TurnCancellation(turn_id=request.turn_id, reason=request.reason, requested_at=at)
    canceling = replace(agent_state, cancellation=cancellation)
    canceled = replace(state, agent_state=canceling, pending_interrupts=pvector())
    writes: list[Write] = []
    for record in state.records_in_deferral_order():
        if not record.status.is_final:
            final = canceled_record(record, audit)
            canceled = kept_unknown(replace(canceled, tool_calls=canceled.tool_calls.set(record.tool_call_id, final)),
                                    final)
            writes.extend(record_writes(final))
    if state.pending_interrupts:
        writes.append(set_pending_interrupts(canceled))
    writes.append(set_agent_state(canceling))
    return answer(canceled, True, writes, cancel_steps=TURN_STEPS, next_steps=[move_to(StepType.CANCEL_TURN)])


def reduce_cancel_tool_call(state: SessionState, called: CancelToolCallCalled) -> RpcTransition:
    """``cancel_tool_call``: refuse bad text, or a single-attempt write beside another running one;
    ``false`` unless the call is open (and not reconciling) in a running turn not being canceled; else
    reject it (awaiting approval) or make it final and cancel its Step (``true``)."""
    request = called.input
    problem = _reason_problem(request.reason, ((request.reason, "reason"), (request.tool_call_id, "tool_call_id")))
    if problem is not None:
        return refuse(state, problem)
    agent_state = state.agent_state
    record = state.tool_calls.get(request.tool_call_id)
    if (agent_state is None or agent_state.current_turn_id is None or agent_state.cancellation is not None
            or record is None or record.turn_id != agent_state.current_turn_id or record.status.is_final
            or record.unknown_error is not None):
        return answer(state, False)
    at = format_instant(called.now_ms)
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        return _reject_pending_approval(state, record, request.reason, at)
    step_type = call_step_type(record)
    beside = [other for other in state.records_in_deferral_order()
              if other.tool_call_id != record.tool_call_id and other.status is ToolCallStatus.PENDING
              and other.unknown_error is None and call_step_type(other) is step_type]
    if beside and step_type in (StepType.CALL_SINGLE_ATTEMPT_TOOL, StepType.AWAIT_SUB_AGENT):
        others = ", ".join(repr(other.tool_call_id) for other in beside)
        return refuse(state, f"tool call {record.tool_call_id!r} is a single-attempt write or a sub-agent running "
                             f"beside {others}: Dex cancels Steps by type, and those cannot run again; cancel the "
                             "turn instead")
    final = canceled_record(record, ToolCallCancellation(reason=request.reason, canceled_at=at, scope=TOOL_CALL_SCOPE))
    canceled = kept_unknown(replace(state, tool_calls=state.tool_calls.set(record.tool_call_id, final)), final)
    restarts = [move_to(step_type, other.tool_call_id) for other in beside]
    return answer(canceled, True, record_writes(final),
                  cancel_steps=[step_type],
                  next_steps=[move_to(StepType.RECORD_TOOL_CANCELLATION, record.tool_call_id), *restarts])


def _reject_pending_approval(state: SessionState, record: AgentToolCall, reason: str, at: str) -> RpcTransition:
    """Reject an approval an operator cancelled: as ``resolve_interrupt`` would, with the reason."""
    interrupt_id = record.interrupt_id
    interrupt = None if interrupt_id is None else state.pending_interrupt(interrupt_id)
    if interrupt_id is None or interrupt is None:
        return answer(state, False)
    resolution = AgentInterruptResolution(interrupt_id=interrupt_id, approved=False,
                                          rejection_message=canceled_by_user(reason), reason=reason,
                                          resolved_at=at, deadline=interrupt.deadline)
    resolved = replace(state, pending_interrupts=state.without_interrupt(interrupt_id))
    return answer(resolved, True, [set_pending_interrupts(resolved),
                                   PublishToChannelInstance.of(INTERRUPT_RESOLUTIONS, interrupt_id, resolution)])


def _canceling_turn(state: SessionState) -> tuple[AgentState, str, TurnCancellation] | StepTransition:
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    turn_id = agent_state.current_turn_id
    if turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    cancellation = agent_state.cancellation
    if cancellation is None or cancellation.turn_id != turn_id:
        return reject(state, NO_CANCELLATION)
    return agent_state, turn_id, cancellation


def reduce_turn_cancel_started(state: SessionState, started: TurnCancelStarted) -> StepTransition:
    """``CancelTurn``: write what the cancellation did to the records, then ask for the note."""
    found = _canceling_turn(state)
    if isinstance(found, StepTransition):
        return found
    _agent_state, turn_id, cancellation = found
    effects: list[StepEffect] = []
    for record in state.records_in_deferral_order():
        audit = record.cancellation
        if audit is None or audit.scope != TURN_SCOPE:
            continue
        if record.status is ToolCallStatus.REJECTED and record.interrupt_id is not None:
            effects.append(WriteEvent(event=events.interrupt_resolved(
                turn_id, started.invocation, record.interrupt_id, False, record.rejection_message)))
        effects.append(WriteEvent(event=events.tool_call_finished(started.invocation, record)))
    note = build_turn_cancel_note(cancellation.reason, state.tool_calls.values())
    return step(state, effects, BuildUserMessage(text=note, purpose=TurnCancelNote()))


def reduce_turn_cancel_note_built(state: SessionState, invocation: Invocation,
                                  note_message: FrameworkMessage) -> StepTransition:
    """The cancel note was built: append it, end the turn canceled, clear it -> ``AwaitUserMessage``."""
    found = _canceling_turn(state)
    if isinstance(found, StepTransition):
        return found
    agent_state, turn_id, cancellation = found
    problem = user_message_problem(agent_state, note_message)
    if problem is not None:
        return reject(state, problem)
    noted, agent_state, note_writes = append_messages(state, agent_state, turn_id, [note_message])
    cleared, clear_writes = clear_turn(noted, turn_id)
    ended = replace(agent_state, status=AgentStatus.WAITING_FOR_USER_MESSAGE, current_turn_id=None,
                    current_turn_sequence=None, canceled_turn_count=agent_state.canceled_turn_count + 1,
                    last_turn_error=None, cancellation=None)
    return step(
        replace(cleared, agent_state=ended),
        [*note_writes, *clear_writes, set_agent_state(ended),
         WriteEvent(event=events.turn_canceled(turn_id, invocation, cancellation.reason, cancellation.requested_at))],
        turn_end(ended, CANCELED, canceled_by_user(cancellation.reason), cleared.usage),
    )


def reduce_tool_cancellation_started(state: SessionState, started: ToolCancellationStarted) -> StepTransition:
    """``RecordToolCancellation``: the record ``cancel_tool_call`` made final gets its
    ``tool_call_finished`` and its ``ToolCallCompleted`` (the turn goes on); rejects a record that is
    not final or was not cancelled alone."""
    record = state.tool_calls.get(started.tool_call_id)
    if record is None:
        return reject(state, f"no record of tool call {started.tool_call_id!r}")
    if record.cancellation is None or record.cancellation.scope != TOOL_CALL_SCOPE or not record.status.is_final:
        return reject(state, f"tool call {started.tool_call_id!r} was not cancelled by cancel_tool_call")
    return finalize_record(state, started.invocation, record)


__all__ = [
    "NO_CANCELLATION",
    "TOOL_CALL_SCOPE",
    "TURN_SCOPE",
    "TURN_STEPS",
    "canceled_record",
    "reduce_cancel_tool_call",
    "reduce_cancel_turn",
    "reduce_tool_cancellation_started",
    "reduce_turn_cancel_note_built",
    "reduce_turn_cancel_started",
]
