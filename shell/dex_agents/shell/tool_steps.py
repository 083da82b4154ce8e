"""The Steps of one tool call: ``AwaitToolApproval``, ``CallTool``, ``CallSingleAttemptTool`` and the
failure routes ``RecordToolFailure`` and ``RecordToolOutcomeUnknown``. Each takes the tool call ID as
its input and loads only that call's ``AgentToolCalls`` instance."""

from __future__ import annotations

from datetime import timedelta
from typing import Final, assert_never

from dex import AsyncContext, StepDecision, Timer, Wait

from dex_agents.pure.persistence import StepType
from dex_agents.pure.reducers import SkipWait, WaitForResolution, approval_wait
from dex_agents.pure.state import SessionState
from dex_agents.pure.step_inputs import (
    ApprovalWaitEnded,
    ApprovalWaitOutcome,
    DeadlineTimerFired,
    ResolutionReceived,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolStepStarted,
    WaitSkipped,
)
from dex_agents.pure.step_options import step_options_for
from dex_agents.shell.definitions import INTERRUPT_RESOLUTIONS
from dex_agents.shell.driver import drive_step
from dex_agents.shell.gather import gather_state
from dex_agents.shell.session_step import SessionStep, recovery_error_text
from dex_agents.shell.step_run import StepRun

DEADLINE_CONDITION_ID: Final = "deadline"
"""Condition ID of the approval deadline Timer (``Client.skip_timer`` addresses it)."""


class AwaitToolApproval(SessionStep[str]):
    """Waits for the call's resolution or its deadline Timer, then approves, rejects or waits again."""

    step_type = StepType.AWAIT_TOOL_APPROVAL

    async def wait_for(self, context: AsyncContext, input: str) -> Wait:  # type: ignore[override]
        spec = step_options_for(self.step_type, input)
        state = gather_state(context, instances=spec.wait_for_load_attribute_map_instances)
        wait = approval_wait(state, input, self.runtime.timing.now_ms())
        match wait:
            case SkipWait():
                return Wait.skip_immediately()
            case WaitForResolution(interrupt_id=interrupt_id, timer_seconds=seconds):
                resolution = INTERRUPT_RESOLUTIONS.for_one(interrupt_id)
                if seconds is None:
                    return Wait.until(resolution)
                deadline = Timer.by_duration(timedelta(seconds=seconds), condition_id=DEADLINE_CONDITION_ID)
                return Wait.any_of(deadline, resolution)
            case _:
                assert_never(wait)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, state: SessionState) -> StepInput:
            return ApprovalWaitEnded(invocation=run.invocation, tool_call_id=input, outcome=_wait_outcome(context, state, input))

        return await drive_step(self.runtime, context, self.step_type, input, observe)


def _wait_outcome(context: AsyncContext, state: SessionState, tool_call_id: str) -> ApprovalWaitOutcome:
    """What ended the wait: the deadline Timer, a consumed resolution, or nothing (a skipped wait)."""
    if context.has_timer_fired():
        return DeadlineTimerFired()
    record = state.tool_calls.get(tool_call_id)
    interrupt_id = None if record is None else record.interrupt_id
    consumed = () if interrupt_id is None else INTERRUPT_RESOLUTIONS.results(context, interrupt_id)
    return ResolutionReceived(resolution=consumed[0]) if consumed else WaitSkipped()


class _ToolStep(SessionStep[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, _state: SessionState) -> StepInput:
            return ToolStepStarted(invocation=run.invocation, tool_call_id=input, step_type=self.step_type)

        return await drive_step(self.runtime, context, self.step_type, input, observe)


class CallTool(_ToolStep):
    """Runs one ``read`` or ``idempotent_write`` call (3 attempts, route ``RecordToolFailure``)."""

    step_type = StepType.CALL_TOOL


class CallSingleAttemptTool(_ToolStep):
    """Runs one ``non_idempotent_write`` or ``unclassified`` call (1 attempt, route ``RecordToolOutcomeUnknown``)."""

    step_type = StepType.CALL_SINGLE_ATTEMPT_TOOL


class _RecordingRoute(SessionStep[str]):
    """A tool Step's failure route: records the call's final status with the recovery error text."""

    fact: type[ToolAttemptsExhausted] | type[SingleAttemptToolFailed]

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, _state: SessionState) -> StepInput:
            return self.fact(invocation=run.invocation, tool_call_id=input, recovery_error=recovery_error_text(context))

        return await drive_step(self.runtime, context, self.step_type, input, observe)


class RecordToolFailure(_RecordingRoute):
    """``CallTool``'s failure route: ``failed`` for a read, ``outcome_unknown`` for a write."""

    step_type = StepType.RECORD_TOOL_FAILURE
    fact = ToolAttemptsExhausted


class RecordToolOutcomeUnknown(_RecordingRoute):
    """``CallSingleAttemptTool``'s failure route: ``outcome_unknown``."""

    step_type = StepType.RECORD_TOOL_OUTCOME_UNKNOWN
    fact = SingleAttemptToolFailed


__all__ = [
    "DEADLINE_CONDITION_ID",
    "AwaitToolApproval",
    "CallSingleAttemptTool",
    "CallTool",
    "RecordToolFailure",
    "RecordToolOutcomeUnknown",
]
