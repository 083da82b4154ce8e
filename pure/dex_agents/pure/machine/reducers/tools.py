"""Reducers of the tool Steps (``CallTool``, ``CallSingleAttemptTool``) and their failure routes
(``RecordToolFailure``, ``RecordToolOutcomeUnknown``).

Reads: the call's own ``tool_calls`` instance only (each of these Steps loads just that instance), and
``framework_run_state`` (a singleton Attribute every invocation receives), which ``ToolStepStarted``
hands the runner with the call.

* ``ToolStepStarted``: a record that is missing or already final ends without running (dead end,
  nothing published: its one ``ToolCallCompleted`` already went out). Otherwise write
  ``tool_call_started`` and run the tool (``ExecuteDeferredToolCall``); a single-attempt call first
  asks for a heartbeat proven sent (``SendHeartbeat``), and runs on its ``HeartbeatSent``.
* ``ToolCallSucceeded`` -> ``succeeded`` with the output; ``ToolExecutionFailed`` (a
  ``ToolExecutionError``) -> ``failed`` with its message, not retried.
* ``ToolAttemptsExhausted`` (``RecordToolFailure``): ``failed`` for a ``read``, ``outcome_unknown`` for
  a write, with the recovery error text. ``SingleAttemptToolFailed`` (``RecordToolOutcomeUnknown``):
  ``outcome_unknown`` with the recovery error text.
* Ours: a write whose outcome became unknown (either failure route) and whose tool policy has a
  ``reconcile`` is not final yet: the record stays ``pending`` with ``unknown_error`` (a tool Step
  never runs such a record again) and moves to ``ReconcileToolOutcome``, whose ``ReconcileStarted``
  asks the reconcile (``ReconcileToolCall``) and whose ``ToolOutcomeReconciled`` records
  ``succeeded``/``failed`` (with ``settlement`` and ``dex_agents.tool_outcome_settled``) or
  ``outcome_unknown``. When the reconcile Step runs out of attempts its failure route
  (``RecordToolOutcomeUnknown``) records ``outcome_unknown``.
* Each final record: ``tool_call_finished``, one ``ToolCallCompleted``, dead end. A record that is
  already final is left alone (dead end), so a call is never recorded or published twice.
"""

from __future__ import annotations

from dataclasses import replace

from dex_agents.pure.machine import events
from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import SetMapInstance, WriteEvent
from dex_agents.pure.machine.endings import ExecuteDeferredToolCall, ReconcileToolCall, SendHeartbeat
from dex_agents.pure.values.persistence import AGENT_TOOL_CALLS, StepType
from dex_agents.pure.machine.policies import call_step_type, crash_status
from dex_agents.pure.machine.reducers.common import dead_end, finalize_record, go_to
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    HeartbeatSent,
    Invocation,
    ReconcileStarted,
    SingleAttemptToolFailed,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolOutcomeReconciled,
    ToolStepStarted,
)
from dex_agents.pure.machine.texts import NO_ERROR_TEXT, recovery_error_text
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.values.session import AgentToolCall, ToolCallSettlement, ToolCallStatus


def _open_record(state: SessionState, tool_call_id: str, to_run: bool = False) -> AgentToolCall | StepTransition:
    """The call's pending record; a dead end when it is missing or final (or, ``to_run``, when its
    outcome became unknown: it is being reconciled and never runs again); a rejection while it still
    awaits approval (running it would bypass the approval)."""
    record = state.tool_calls.get(tool_call_id)
    if record is None or record.status.is_final or (to_run and record.unknown_error is not None):
        return dead_end(state)
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        return reject(state, f"tool call {tool_call_id!r} still awaits approval; it must not run")
    return record


def _execute(state: SessionState, record: AgentToolCall) -> ExecuteDeferredToolCall:
    return ExecuteDeferredToolCall(
        tool_call=record, idempotency_key=record.idempotency_key, framework_run_state=state.framework_run_state
    )


def reduce_tool_step_started(state: SessionState, started: ToolStepStarted) -> StepTransition:
    """A tool Step began: end without running, or announce the call and run it.

    Only a single-attempt call first proves a heartbeat sent (which ends Dex's re-delivery of the
    attempt, so a crash records ``outcome_unknown`` instead of running the tool again); a retried
    call's re-delivery is one more run, which its effect allows, so it runs at once.

    Rejects a Step type other than the one the call's effect selects (which would break the
    single-attempt guarantee of a write).
    """
    found = _open_record(state, started.tool_call_id, to_run=True)
    if isinstance(found, StepTransition):
        return found
    expected = call_step_type(found)
    if started.step_type is not expected:
        return reject(
            state,
            f"tool call {found.tool_call_id!r} ({found.effect.value}) runs in {expected.value}, not {started.step_type}",
        )
    announce = WriteEvent(event=events.tool_call_started(started.invocation, found))
    if expected is StepType.CALL_SINGLE_ATTEMPT_TOOL:
        return step(state, [announce], SendHeartbeat(tool_call_id=found.tool_call_id))
    return step(state, [announce], _execute(state, found))


def reduce_heartbeat_sent(state: SessionState, sent: HeartbeatSent) -> StepTransition:
    """The heartbeat before a single-attempt call is out: run the call (a record that became final
    meanwhile, or went missing, ends without running)."""
    found = _open_record(state, sent.tool_call_id, to_run=True)
    if isinstance(found, StepTransition):
        return found
    return step(state, [], _execute(state, found))


def _finish(
    state: SessionState,
    invocation: Invocation,
    tool_call_id: str,
    status: ToolCallStatus | None,
    output: str | None = None,
    error: str | None = None,
) -> StepTransition:
    """Finalize an open record with ``status`` (``None``: the effect's crash status)."""
    found = _open_record(state, tool_call_id)
    if isinstance(found, StepTransition):
        return found
    final_status = crash_status(found.effect) if status is None else status
    return finalize_record(state, invocation, replace(found, status=final_status, output=output, error=error))


def reduce_tool_call_succeeded(state: SessionState, succeeded: ToolCallSucceeded) -> StepTransition:
    """The tool returned: record ``succeeded`` with its output."""
    return _finish(state, succeeded.invocation, succeeded.tool_call_id, ToolCallStatus.SUCCEEDED, output=succeeded.output)


def reduce_tool_execution_failed(state: SessionState, failed: ToolExecutionFailed) -> StepTransition:
    """The tool raised ``ToolExecutionError``: record ``failed`` with its message (not retried)."""
    return _finish(state, failed.invocation, failed.tool_call_id, ToolCallStatus.FAILED, error=failed.error)


def _unknown(state: SessionState, reconcile: bool, invocation: Invocation, tool_call_id: str,
             status: ToolCallStatus | None, error: str) -> StepTransition:
    """A failure route's record: ``outcome_unknown`` (or ``failed`` for a read) with ``error``; but a
    write whose tool policy reconciles is first reconciled: the record stays ``pending`` with
    ``unknown_error`` and the call moves to ``ReconcileToolOutcome``. A record already being
    reconciled (its reconcile Step ran out of attempts) is recorded ``outcome_unknown``."""
    found = _open_record(state, tool_call_id)
    if isinstance(found, StepTransition):
        return found
    final_status = crash_status(found.effect) if status is None else status
    if found.unknown_error is not None:
        failed = f"{found.unknown_error} (its reconcile check failed too: {error})"
        return finalize_record(state, invocation, replace(found, status=ToolCallStatus.OUTCOME_UNKNOWN, error=failed))
    if final_status is ToolCallStatus.OUTCOME_UNKNOWN and reconcile:
        reconciling = replace(found, unknown_error=error)
        return step(replace(state, tool_calls=state.tool_calls.set(tool_call_id, reconciling)),
                    [SetMapInstance.of(AGENT_TOOL_CALLS, tool_call_id, reconciling)],
                    go_to(StepType.RECONCILE_TOOL_OUTCOME, tool_call_id))
    return finalize_record(state, invocation, replace(found, status=final_status, error=error))


def reduce_tool_attempts_exhausted(state: SessionState, exhausted: ToolAttemptsExhausted) -> StepTransition:
    """``RecordToolFailure``: ``failed`` for a read, ``outcome_unknown`` for a write (reconciled first
    when its policy can: ``_unknown``), with the recovery error."""
    error = recovery_error_text(exhausted.recovery_error)
    return _unknown(state, exhausted.reconcile, exhausted.invocation, exhausted.tool_call_id, None, error)


def reduce_single_attempt_tool_failed(state: SessionState, failed: SingleAttemptToolFailed) -> StepTransition:
    """``RecordToolOutcomeUnknown``: ``outcome_unknown`` with the recovery error (reconciled first when
    the tool's policy can: ``_unknown``)."""
    error = recovery_error_text(failed.recovery_error)
    return _unknown(state, failed.reconcile, failed.invocation, failed.tool_call_id, ToolCallStatus.OUTCOME_UNKNOWN,
                    error)


def _reconciling_record(state: SessionState, tool_call_id: str) -> AgentToolCall | StepTransition:
    found = _open_record(state, tool_call_id)
    if isinstance(found, StepTransition):
        return found
    if found.unknown_error is None:
        return reject(state, f"tool call {tool_call_id!r}'s outcome is not unknown; there is nothing to reconcile")
    return found


def reduce_reconcile_started(state: SessionState, started: ReconcileStarted) -> StepTransition:
    """``ReconcileToolOutcome`` began: ask the tool policy's ``reconcile`` (a record already final ends)."""
    found = _reconciling_record(state, started.tool_call_id)
    if isinstance(found, StepTransition):
        return found
    return step(state, [], ReconcileToolCall(tool_call=found, idempotency_key=found.idempotency_key,
                                             error=found.unknown_error or ""))


def reduce_tool_outcome_reconciled(state: SessionState, reconciled: ToolOutcomeReconciled) -> StepTransition:
    """``reconcile`` answered: ``succeeded`` (its output) or ``failed`` (its message) replace the unknown
    outcome, with ``settlement`` and ``dex_agents.tool_outcome_settled``; ``unknown`` records
    ``outcome_unknown`` with the error that made it unknown. Either way the record is final."""
    found = _reconciling_record(state, reconciled.tool_call_id)
    if isinstance(found, StepTransition):
        return found
    invocation = reconciled.invocation
    settlement = ToolCallSettlement(settled_by="reconcile", settled_at=format_instant(invocation.now_ms),
                                    unknown_error=found.unknown_error)
    match reconciled.status:
        case "succeeded":
            final = replace(found, status=ToolCallStatus.SUCCEEDED, output=reconciled.text or "", settlement=settlement)
        case "failed":
            final = replace(found, status=ToolCallStatus.FAILED, error=reconciled.text or NO_ERROR_TEXT,
                            settlement=settlement)
        case "unknown":
            final = replace(found, status=ToolCallStatus.OUTCOME_UNKNOWN, error=found.unknown_error)
            return finalize_record(state, invocation, final)
        case other:
            return reject(state, f"reconcile answered {other!r}; expected 'succeeded', 'failed' or 'unknown'")
    return finalize_record(state, invocation, final,
                           [WriteEvent(event=events.tool_outcome_settled(invocation, final))])


__all__ = [
    "reduce_reconcile_started",
    "reduce_tool_outcome_reconciled",
    "reduce_heartbeat_sent",
    "reduce_single_attempt_tool_failed",
    "reduce_tool_attempts_exhausted",
    "reduce_tool_call_succeeded",
    "reduce_tool_execution_failed",
    "reduce_tool_step_started",
]
