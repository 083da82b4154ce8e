"""Reducers of an operator's cancellations (ours): the RPCs ``cancel_turn`` and ``cancel_tool_call``,
and ``RecordToolCancellation``, the Step that finishes a cancelled call (``CancelTurn``, which finishes
a cancelled turn, is ``reducers.cancel_turn``).

An RPC's read may be stale by its commit (it locks nothing a Step writes), so the RPC writes no value a
Step writes: it commits the request with its audit (the ``TurnCancellation`` Attribute, a
``ToolCallCancellations`` instance, both written by nothing else), has Dex cancel the running Steps
and starts the Step that finishes the job. That Step runs after the cancellation took effect and reads
the records fresh: a Step that committed before the cancellation left a final record, which is kept;
one that finishes after it commits nothing (Dex discards its result). A Worker crash between the two
only delays the finishing Step (Dex delivers it again); canceled Steps are never delivered again.

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
  cancellation of it is under way; else it sets ``TurnCancellation``, Dex cancels every Step of the turn
  (``TURN_STEPS``) and ``CancelTurn`` starts (``true``). ``CancelTurn`` makes the open records final as
  above, writes their ``interrupt_resolved`` / ``tool_call_finished``, asks the runner for the note
  (``build_turn_cancel_note``: the next model call reads that the user cancelled and why), appends it as
  the turn's last message, ends the turn canceled (``canceled_turn_count``, ``dex_agents.turn_canceled``),
  deletes the request and moves to ``AwaitUserMessage``: queued messages are kept (a sub-agent's child
  session instead completes its Flow, its result ``canceled``). No turn running any more (it ended as
  the request came): it only deletes the request. A newer turn running (one that began as the request
  came, whose Steps the cancellation stopped) carries on: its model call, or each open call's Step
  (``AwaitToolApproval``, ``CallTool`` under its idempotency key, ``ReconcileToolOutcome``,
  ``RecordToolCancellation``) and the ``ResumeTurn`` that waits for them, start again; only when one
  of its open calls cannot run again (a pending single-attempt write or sub-agent's call) does that turn
  end canceled, as above. A sub-agent's call
  (``AwaitSubAgent``) is a turn Step too: Dex ends its wait; its child session is the client's to
  cancel (``SessionClient.cancel_turn`` cancels the running children's turns after the parent's).
* ``cancel_tool_call {tool_call_id, reason}``: ``false`` unless the record is open in the running turn,
  its cancellation was not asked already and no turn cancellation is under way (``true`` means the call
  was open when asked: if its own outcome commits first, that outcome stands). An ``awaiting_approval`` call is rejected through its
  ``InterruptResolutions`` instance (``AwaitToolApproval`` records it). A ``pending`` call gets its
  ``ToolCallCancellations`` instance, Dex cancels its Step type (and that type's failure route) and
  ``RecordToolCancellation`` makes it final as above (unless its own outcome was committed first, which
  stands), writes ``tool_call_finished`` and publishes its ``ToolCallCompleted``: the turn goes on. Dex
  cancels by Step type, so every other pending ``read`` / ``idempotent_write`` call of the turn is
  started again under its idempotency key (its effect allows another run; a final one ends without
  running); a single-attempt write, or a sub-agent's call, is refused while another of its Step type
  runs beside it (it cannot run again): cancel the turn instead.
* Text that cannot be encoded, or a blank reason, is refused (``RefuseRpc``); nothing changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final


from dex_agents.pure.flow.step_options import move_to
from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import DeleteMapInstance, PublishToChannelInstance, SetAttribute, SetMapInstance
from dex_agents.pure.machine.endings import DeadEnd
from dex_agents.pure.machine.policies import call_step_type, tool_step_type
from dex_agents.pure.machine.reducers.common import (
    dead_end,
    finalize_record,
    set_pending_interrupts,
)
from dex_agents.pure.machine.rpc_calls import CancelToolCallCalled, CancelTurnCalled
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import ToolCancellationStarted
from dex_agents.pure.machine.texts import canceled_by_user, canceled_write_error
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, answer, refuse, reject, step
from dex_agents.pure.machine.validation import first_lone_surrogate_problem
from dex_agents.pure.values.persistence import (
    INTERRUPT_RESOLUTIONS,
    TOOL_CALL_CANCELLATIONS,
    TURN_CANCELLATION,
    StepType,
)
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentToolCall,
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


def _request_problem(reason: str, target: tuple[str, str]) -> str | None:
    """Why a cancellation with ``reason`` of ``target`` (its ID and field name) is refused, or ``None``."""
    problem = first_lone_surrogate_problem(((reason, "reason"), target))
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


def _turn_is_being_canceled(state: SessionState) -> bool:
    cancellation, agent_state = state.turn_cancellation, state.agent_state
    return cancellation is not None and agent_state is not None and cancellation.turn_id == agent_state.current_turn_id


def reduce_cancel_turn(state: SessionState, called: CancelTurnCalled) -> RpcTransition:
    """``cancel_turn``: refuse bad text; ``false`` unless ``turn_id`` runs and is not being canceled;
    else record the request, cancel the turn's Steps and start ``CancelTurn`` (``true``)."""
    request = called.input
    problem = _request_problem(request.reason, (request.turn_id, "turn_id"))
    if problem is not None:
        return refuse(state, problem)
    agent_state = state.agent_state
    if agent_state is None or agent_state.current_turn_id != request.turn_id or _turn_is_being_canceled(state):
        return answer(state, False)
    cancellation = TurnCancellation(turn_id=request.turn_id, reason=request.reason,
                                    requested_at=format_instant(called.now_ms))
    return answer(replace(state, turn_cancellation=cancellation), True,
                  [SetAttribute.of(TURN_CANCELLATION, cancellation)],
                  cancel_steps=TURN_STEPS, next_steps=[move_to(StepType.CANCEL_TURN)])


def reduce_cancel_tool_call(state: SessionState, called: CancelToolCallCalled) -> RpcTransition:
    """``cancel_tool_call``: refuse bad text, or a single-attempt write beside another running one;
    ``false`` unless the call is open (not reconciling, not asked already) in a running turn not being
    canceled; else
    reject it (awaiting approval) or record the request, cancel its Step and start
    ``RecordToolCancellation`` (``true``)."""
    request = called.input
    problem = _request_problem(request.reason, (request.tool_call_id, "tool_call_id"))
    if problem is not None:
        return refuse(state, problem)
    agent_state = state.agent_state
    record = state.tool_calls.get(request.tool_call_id)
    if (agent_state is None or agent_state.current_turn_id is None or _turn_is_being_canceled(state)
            or record is None or record.turn_id != agent_state.current_turn_id or record.status.is_final
            or record.unknown_error is not None or request.tool_call_id in state.tool_call_cancellations):
        return answer(state, False)
    at = format_instant(called.now_ms)
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        return _reject_pending_approval(state, record, request.reason, at)
    step_type = call_step_type(record)
    open_records = [other for other in state.records_in_deferral_order()
                    if other.tool_call_id != record.tool_call_id and not other.status.is_final]
    beside = [other for other in open_records if other.status is ToolCallStatus.PENDING
              and other.unknown_error is None and call_step_type(other) is step_type]
    if beside and step_type in (StepType.CALL_SINGLE_ATTEMPT_TOOL, StepType.AWAIT_SUB_AGENT):
        others = ", ".join(repr(other.tool_call_id) for other in beside)
        return refuse(state, f"tool call {record.tool_call_id!r} is a single-attempt write or a sub-agent running "
                             f"beside {others}: Dex cancels Steps by type, and those cannot run again; cancel the "
                             "turn instead")
    audit = ToolCallCancellation(reason=request.reason, canceled_at=at, scope=TOOL_CALL_SCOPE)
    requested = replace(state, tool_call_cancellations=state.tool_call_cancellations.set(record.tool_call_id, audit))
    restarts = [move_to(step_type, other.tool_call_id) for other in beside]
    return answer(requested, True, [SetMapInstance.of(TOOL_CALL_CANCELLATIONS, record.tool_call_id, audit)],
                  cancel_steps=_steps_of_a_call(step_type, reconciling=any(o.unknown_error for o in open_records)),
                  next_steps=[move_to(StepType.RECORD_TOOL_CANCELLATION, record.tool_call_id), *restarts])


def _steps_of_a_call(step_type: StepType, *, reconciling: bool) -> list[StepType]:
    """The Step types a running call of ``step_type`` may be in: its tool Step and that Step's failure
    route (whose other executions are restarted, or cannot exist: see ``reduce_cancel_tool_call``), except
    ``RecordToolOutcomeUnknown`` while another call's reconcile may route there."""
    if step_type is StepType.CALL_TOOL:
        return [StepType.CALL_TOOL, StepType.RECORD_TOOL_FAILURE]
    if step_type is StepType.CALL_SINGLE_ATTEMPT_TOOL and not reconciling:
        return [step_type, StepType.RECORD_TOOL_OUTCOME_UNKNOWN]
    return [step_type]


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


def reduce_tool_cancellation_started(state: SessionState, started: ToolCancellationStarted) -> StepTransition:
    """``RecordToolCancellation``: the call's outcome committed first stands (the request is deleted);
    else the record becomes final as the table says, with ``tool_call_finished`` and its
    ``ToolCallCompleted`` (the turn goes on)."""
    tool_call_id = started.tool_call_id
    audit = state.tool_call_cancellations.get(tool_call_id)
    if audit is None:  # a second request's Step, after the first one finished the job
        return dead_end(state)
    forget = DeleteMapInstance.of(TOOL_CALL_CANCELLATIONS, tool_call_id)
    record = state.tool_calls.get(tool_call_id)
    remaining = replace(state, tool_call_cancellations=state.tool_call_cancellations.discard(tool_call_id))
    if record is None or record.status.is_final or record.unknown_error is not None:
        return step(remaining, [forget], DeadEnd())
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        return reject(state, f"tool call {tool_call_id!r} awaits approval; cancel_tool_call rejects it instead")
    return finalize_record(remaining, started.invocation, canceled_record(record, audit), before=[forget])


__all__ = [
    "NO_CANCELLATION",
    "TOOL_CALL_SCOPE",
    "TURN_SCOPE",
    "TURN_STEPS",
    "canceled_record",
    "reduce_cancel_tool_call",
    "reduce_cancel_turn",
    "reduce_tool_cancellation_started",
]
