"""The Steps of one tool call: ``AwaitToolApproval``, ``CallTool``, ``CallSingleAttemptTool`` and the
failure routes ``RecordToolFailure`` and ``RecordToolOutcomeUnknown``, and ours, ``ReconcileToolOutcome`` and
``AwaitSubAgent`` (a sub-agent's call, run as a child session). Each takes the tool call ID as
its input and loads only that call's ``AgentToolCalls`` instance; each reports what its invocation
saw as its started input, and the core decides (``AwaitToolApproval``'s wait included)."""

from __future__ import annotations

from dex import AsyncContext, StepDecision, Wait

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    ApprovalWaitEnded,
    ApprovalWaitStarted,
    Invocation,
    ReconcileStarted,
    SingleAttemptToolFailed,
    SubAgentEnded,
    SubAgentWaitStarted,
    ToolAttemptsExhausted,
    ToolStepStarted,
)
from dex_agents.shell.driver import drive_step, drive_wait
from dex_agents.shell.gather import child_outcome, consumed_resolutions, recovery_error_of
from dex_agents.shell.step_base import SessionStep


class AwaitToolApproval(SessionStep[str]):
    """Waits for the call's resolution or its deadline Timer, then approves, rejects or waits again."""

    step_type = StepType.AWAIT_TOOL_APPROVAL

    async def wait_for(self, context: AsyncContext, input: str) -> Wait:  # type: ignore[override]
        def started(invocation: Invocation) -> ApprovalWaitStarted:
            return ApprovalWaitStarted(invocation=invocation, tool_call_id=input)

        return drive_wait(self.runtime, context, self.step_type, input, started)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, state: SessionState) -> ApprovalWaitEnded:
            return ApprovalWaitEnded(
                invocation=invocation,
                tool_call_id=input,
                timer_fired=context.has_timer_fired(),
                resolutions=consumed_resolutions(context, state),
            )

        return await drive_step(self.runtime, context, self.step_type, input, started)


class _ToolStep(SessionStep[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> ToolStepStarted:
            return ToolStepStarted(invocation=invocation, tool_call_id=input, step_type=self.step_type)

        return await drive_step(self.runtime, context, self.step_type, input, started)


class CallTool(_ToolStep):
    """Runs one ``read`` or ``idempotent_write`` call (3 attempts, route ``RecordToolFailure``)."""

    step_type = StepType.CALL_TOOL


class CallSingleAttemptTool(_ToolStep):
    """Runs one ``non_idempotent_write`` or ``unclassified`` call (1 attempt, route ``RecordToolOutcomeUnknown``)."""

    step_type = StepType.CALL_SINGLE_ATTEMPT_TOOL


class _RecordingRoute(SessionStep[str]):
    """A tool Step's failure route: records the call's final status with the recovery error."""

    exhausted: type[ToolAttemptsExhausted] | type[SingleAttemptToolFailed]

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, state: SessionState) -> ToolAttemptsExhausted | SingleAttemptToolFailed:
            record = state.tool_calls.get(input)
            reconcile = record is not None and self.runtime.config.reconciles(record.tool_name)
            return self.exhausted(invocation=invocation, tool_call_id=input, recovery_error=recovery_error_of(context),
                                  reconcile=reconcile)

        return await drive_step(self.runtime, context, self.step_type, input, started)


class RecordToolFailure(_RecordingRoute):
    """``CallTool``'s failure route: ``failed`` for a read, ``outcome_unknown`` for a write."""

    step_type = StepType.RECORD_TOOL_FAILURE
    exhausted = ToolAttemptsExhausted


class RecordToolOutcomeUnknown(_RecordingRoute):
    """``CallSingleAttemptTool``'s failure route: ``outcome_unknown``."""

    step_type = StepType.RECORD_TOOL_OUTCOME_UNKNOWN
    exhausted = SingleAttemptToolFailed


class AwaitSubAgent(SessionStep[str]):
    """Runs a sub-agent's call (ours): ``wait_for`` starts (or finds again) its child session, a Dex
    SubFlow, and waits for it to close; ``execute`` reports how it closed (``child_outcome``)."""

    step_type = StepType.AWAIT_SUB_AGENT

    async def wait_for(self, context: AsyncContext, input: str) -> Wait:  # type: ignore[override]
        def started(invocation: Invocation) -> SubAgentWaitStarted:
            return SubAgentWaitStarted(invocation=invocation, tool_call_id=input)

        return drive_wait(self.runtime, context, self.step_type, input, started)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> SubAgentEnded:
            return child_outcome(context, invocation, input)

        return await drive_step(self.runtime, context, self.step_type, input, started)


class ReconcileToolOutcome(SessionStep[str]):
    """Asks the tool policy's ``reconcile`` what became of a write whose outcome is unknown (3
    attempts, route ``RecordToolOutcomeUnknown``); the tool itself never runs again."""

    step_type = StepType.RECONCILE_TOOL_OUTCOME

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> ReconcileStarted:
            return ReconcileStarted(invocation=invocation, tool_call_id=input)

        return await drive_step(self.runtime, context, self.step_type, input, started)


__all__ = [
    "AwaitSubAgent",
    "ReconcileToolOutcome",
    "AwaitToolApproval",
    "CallSingleAttemptTool",
    "CallTool",
    "RecordToolFailure",
    "RecordToolOutcomeUnknown",
]
