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
* Each final record: ``tool_call_finished``, one ``ToolCallCompleted``, dead end. A record that is
  already final is left alone (dead end), so a call is never recorded or published twice.
"""

from __future__ import annotations

from dataclasses import replace

from dex_agents.pure.machine import events
from dex_agents.pure.machine.effects import ExecuteDeferredToolCall, SendHeartbeat, WriteEvent
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.policies import crash_status, tool_step_type
from dex_agents.pure.machine.reducers.common import dead_end, finalize_record
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    HeartbeatSent,
    Invocation,
    SingleAttemptToolFailed,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolStepStarted,
)
from dex_agents.pure.machine.texts import recovery_error_text
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.values.session import AgentToolCall, ToolCallStatus


def _open_record(state: SessionState, tool_call_id: str) -> AgentToolCall | StepTransition:
    """The call's pending record; a dead end when it is missing or final; a rejection while it still
    awaits approval (running it would bypass the approval)."""
    record = state.tool_calls.get(tool_call_id)
    if record is None or record.status.is_final:
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
    found = _open_record(state, started.tool_call_id)
    if isinstance(found, StepTransition):
        return found
    expected = tool_step_type(found.effect)
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
    found = _open_record(state, sent.tool_call_id)
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


def reduce_tool_attempts_exhausted(state: SessionState, exhausted: ToolAttemptsExhausted) -> StepTransition:
    """``RecordToolFailure``: ``failed`` for a read, ``outcome_unknown`` for a write, with the recovery error."""
    error = recovery_error_text(exhausted.recovery_error)
    return _finish(state, exhausted.invocation, exhausted.tool_call_id, None, error=error)


def reduce_single_attempt_tool_failed(state: SessionState, failed: SingleAttemptToolFailed) -> StepTransition:
    """``RecordToolOutcomeUnknown``: ``outcome_unknown`` with the recovery error."""
    error = recovery_error_text(failed.recovery_error)
    return _finish(state, failed.invocation, failed.tool_call_id, ToolCallStatus.OUTCOME_UNKNOWN, error=error)


__all__ = [
    "reduce_heartbeat_sent",
    "reduce_single_attempt_tool_failed",
    "reduce_tool_attempts_exhausted",
    "reduce_tool_call_succeeded",
    "reduce_tool_execution_failed",
    "reduce_tool_step_started",
]
