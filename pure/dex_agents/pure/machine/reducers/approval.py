"""``AwaitToolApproval``: what its wait waits on, and the reducer of the wait's end.

Reads: the call's own ``tool_calls`` instance and ``pending_interrupts`` (which the Step locks in
Execute, so ``resolve_interrupt`` cannot change it underneath).

* ``ApprovalWaitStarted`` (``wait_for``): wait for the call's resolution and, when the interrupt is
  still pending with a deadline, its deadline Timer (``WaitForResolution``); a call that no longer
  awaits approval skips the wait (``SkipWait``).
* ``ApprovalWaitEnded`` carries both endings of the wait, and a consumed resolution wins (it was
  accepted before the deadline, and nothing else will ever deliver it): approved -> record
  ``pending``, ``interrupt_resolved``, -> the call's tool Step; rejected -> record ``rejected`` with the
  rejection message, ``interrupt_resolved``, ``tool_call_finished``, one ``ToolCallCompleted``, dead end.
  The record keeps the resolution's audit (``approval``: approver, reason, time). An approval with
  edited arguments first asks the runner to validate them (``ValidateToolArguments``): valid, the
  record's ``arguments`` become the edit (the model's kept as ``approval.original_arguments``);
  invalid, the approval is refused: the interrupt is put back in ``PendingInterrupts`` as it was,
  ``dex_agents.approval_refused`` carries the validation error, and the Step waits again. The
  resolution was consumed by this wait: a retry of the attempt re-validates the same resolution, and
  once committed it is never honoured again.
* The deadline Timer alone: when the interrupt is still pending and its deadline has come, reject with
  ``"approval deadline passed"`` as above; a stored deadline that cannot be read counts as passed
  (rejected with ``"approval deadline unreadable: <value>"``), so a corrupt value never approves a
  call and never fails the Step forever. When ``resolve_interrupt`` already removed the interrupt
  (its resolution is queued), or the Timer fired before the deadline, wait again: move to
  ``AwaitToolApproval`` for the same call, whose wait consumes the resolution or re-arms the Timer.
* Neither (a skipped wait): wait again.
* A call that no longer awaits approval (missing or already decided) ends without effects.
"""

from __future__ import annotations

from dataclasses import replace

from dex_agents.pure.machine import events
from dex_agents.pure.machine.deadlines import is_late, timer_seconds
from dex_agents.pure.machine.effects import SetMapInstance, StepEffect, WriteEvent
from dex_agents.pure.machine.endings import ApprovalWait, SkipWait, ValidateToolArguments, WaitForResolution
from dex_agents.pure.values.persistence import AGENT_TOOL_CALLS, StepType
from dex_agents.pure.machine.policies import call_step_type
from dex_agents.pure.machine.reducers.common import (
    dead_end,
    finalize_record,
    go_to,
    interrupt_deadline,
    set_pending_interrupts,
)
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import ApprovalWaitEnded, ApprovalWaitStarted, Invocation, ToolArgumentsValidated
from dex_agents.pure.machine.texts import approval_deadline_passed_message, approval_deadline_unreadable_message
from dex_agents.pure.machine.transition import StepTransition, WaitTransition, reject, step, wait
from dex_agents.pure.values.session import (
    AgentInterrupt,
    AgentInterruptResolution,
    AgentToolCall,
    ToolCallApproval,
    ToolCallStatus,
    text_sha256,
)


def _awaiting_record(state: SessionState, tool_call_id: str) -> AgentToolCall | None:
    record = state.tool_calls.get(tool_call_id)
    if record is None or record.status is not ToolCallStatus.AWAITING_APPROVAL or record.interrupt_id is None:
        return None
    return record


def reduce_approval_wait_started(state: SessionState, started: ApprovalWaitStarted) -> WaitTransition:
    """``AwaitToolApproval``'s ``wait_for``: what to wait on (``approval_wait`` at the invocation's time)."""
    return wait(state, approval_wait(state, started.tool_call_id, started.invocation.now_ms))


def approval_wait(state: SessionState, tool_call_id: str, now_ms: int) -> ApprovalWait:
    """The wait of ``AwaitToolApproval(tool_call_id)`` at ``now_ms``.

    No Timer when the interrupt has no deadline or was already resolved (its resolution is queued);
    a deadline that cannot be read arms a zero Timer, so execute reports it at once.
    """
    record = _awaiting_record(state, tool_call_id)
    if record is None or record.interrupt_id is None:
        return SkipWait()
    interrupt = state.pending_interrupt(record.interrupt_id)
    if interrupt is None:
        return WaitForResolution(interrupt_id=record.interrupt_id, timer_seconds=None)
    try:
        deadline = interrupt_deadline(interrupt)
    except ValueError:
        return WaitForResolution(interrupt_id=record.interrupt_id, timer_seconds=0)
    seconds = None if deadline is None else timer_seconds(now_ms, deadline)
    return WaitForResolution(interrupt_id=record.interrupt_id, timer_seconds=seconds)


def _wait_again(state: SessionState, tool_call_id: str) -> StepTransition:
    return step(state, [], go_to(StepType.AWAIT_TOOL_APPROVAL, tool_call_id))


def _audit(resolution: AgentInterruptResolution | None, original_arguments: str | None = None) -> ToolCallApproval | None:
    """The record's audit of a resolution (``None`` for a deadline, which no one decided)."""
    if resolution is None:
        return None
    return ToolCallApproval(approved=resolution.approved, approver=resolution.approver, reason=resolution.reason,
                            resolved_at=resolution.resolved_at, original_arguments=original_arguments)


def _decide(
    state: SessionState,
    invocation: Invocation,
    record: AgentToolCall,
    interrupt_id: str,
    approved: bool,
    rejection_message: str | None,
    resolution: AgentInterruptResolution | None = None,
) -> StepTransition:
    """Apply one decision: remove the interrupt if still pending, then approve or reject the record.
    An approval with edited arguments stores them as the call's ``arguments`` (the model's are kept in
    ``approval.original_arguments``): the tool Step runs them, under the same idempotency key."""
    before: list[StepEffect] = []
    if state.pending_interrupt(interrupt_id) is not None:
        state = replace(state, pending_interrupts=state.without_interrupt(interrupt_id))
        before.append(set_pending_interrupts(state))
    shown_message = None if approved else rejection_message
    edited = None if resolution is None or not approved else resolution.edited_arguments
    approval = _audit(resolution, None if edited is None else record.arguments)
    arguments = record.arguments if edited is None else edited
    before.append(WriteEvent(event=events.interrupt_resolved(
        record.turn_id, invocation, interrupt_id, approved, shown_message, approval, arguments)))
    if not approved:
        rejected = replace(record, status=ToolCallStatus.REJECTED, rejection_message=rejection_message,
                           approval=approval)
        return finalize_record(state, invocation, rejected, before)
    approved_record = replace(record, status=ToolCallStatus.PENDING, arguments=arguments, approval=approval)
    return step(
        replace(state, tool_calls=state.tool_calls.set(record.tool_call_id, approved_record)),
        [SetMapInstance.of(AGENT_TOOL_CALLS, record.tool_call_id, approved_record), *before],
        go_to(call_step_type(record), record.tool_call_id),
    )


def _resolve(state: SessionState, waited: ApprovalWaitEnded, record: AgentToolCall, interrupt_id: str,
             resolution: AgentInterruptResolution) -> StepTransition:
    """A consumed resolution decides; an edited approval first asks the runner to validate the edit."""
    if resolution.approved and resolution.edited_arguments is not None:
        return step(state, [], ValidateToolArguments(tool_call_id=record.tool_call_id, tool_name=record.tool_name,
                                                      arguments=resolution.edited_arguments, resolution=resolution))
    return _decide(state, waited.invocation, record, interrupt_id, resolution.approved, resolution.rejection_message,
                   resolution)


def reduce_tool_arguments_validated(state: SessionState, validated: ToolArgumentsValidated) -> StepTransition:
    """The edit of an approval was checked: valid -> approve with it (as ``_decide``); invalid -> the
    approval is refused: the interrupt is pending again (as it was: the resolution carries its
    deadline), ``dex_agents.approval_refused`` says why, and the Step waits again for a resolution."""
    record = _awaiting_record(state, validated.tool_call_id)
    resolution = validated.resolution
    if record is None or record.interrupt_id is None:
        return dead_end(state)
    if resolution.interrupt_id != record.interrupt_id:
        return reject(state, f"resolution for {resolution.interrupt_id!r} reached the wait of {record.interrupt_id!r}")
    if validated.problem is None:
        return _decide(state, validated.invocation, record, record.interrupt_id, True, None, resolution)
    effects: list[StepEffect] = []
    if state.pending_interrupt(record.interrupt_id) is None:
        restored = AgentInterrupt(interrupt_id=record.interrupt_id, turn_id=record.turn_id,
                                  tool_call_id=record.tool_call_id, tool_name=record.tool_name,
                                  arguments=record.arguments, effect=record.effect, deadline=resolution.deadline,
                                  arguments_sha256=text_sha256(record.arguments))
        state = replace(state, pending_interrupts=state.pending_interrupts.append(restored))
        effects.append(set_pending_interrupts(state))
    effects.append(WriteEvent(event=events.approval_refused(record.turn_id, validated.invocation, resolution,
                                                            record.tool_call_id, validated.problem)))
    return step(state, effects, go_to(StepType.AWAIT_TOOL_APPROVAL, record.tool_call_id))


def reduce_approval_wait_ended(state: SessionState, waited: ApprovalWaitEnded) -> StepTransition:
    """``AwaitToolApproval(tool_call_id)`` finished waiting (see the module docstring): a consumed
    resolution decides, else a fired Timer, else the Step waits again.

    Rejects a resolution for another interrupt.
    """
    record = _awaiting_record(state, waited.tool_call_id)
    if record is None or record.interrupt_id is None:
        return dead_end(state)
    interrupt_id = record.interrupt_id
    if waited.resolutions:
        resolution = waited.resolutions[0]
        if resolution.interrupt_id != interrupt_id:
            return reject(state, f"resolution for {resolution.interrupt_id!r} reached the wait of {interrupt_id!r}")
        return _resolve(state, waited, record, interrupt_id, resolution)
    if not waited.timer_fired:
        return _wait_again(state, waited.tool_call_id)
    interrupt = state.pending_interrupt(interrupt_id)
    if interrupt is None:
        return _wait_again(state, waited.tool_call_id)
    try:
        deadline = interrupt_deadline(interrupt)
    except ValueError:
        message = approval_deadline_unreadable_message(interrupt.deadline)
        return _decide(state, waited.invocation, record, interrupt_id, False, message)
    if not is_late(waited.invocation.now_ms, deadline):
        return _wait_again(state, waited.tool_call_id)
    return _decide(state, waited.invocation, record, interrupt_id, False, approval_deadline_passed_message)


__all__ = ["approval_wait", "reduce_approval_wait_ended", "reduce_approval_wait_started", "reduce_tool_arguments_validated"]
