"""The Steps of a turn: ``StartAgentSession``, ``AwaitUserMessage``, ``RunModel``, ``ResumeTurn`` and
``RecordTurnFailure``. Each reports what its invocation saw as its started input and hands it to
``drive_step``; the core asks for the user message, the model call or the turn failure note."""

from __future__ import annotations

from dex import AsyncContext, StepDecision, Wait

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    CompactionStarted,
    Invocation,
    ModelAttemptsExhausted,
    ModelStepStarted,
    SessionStarted,
    ToolResultsArrived,
    UserMessageArrived,
)
from dex_agents.pure.values.session import AgentSessionStartInput
from dex_agents.shell.dex_options import dex_wait
from dex_agents.shell.driver import drive_step
from dex_agents.shell.gather import consumed_messages, recovery_error_of
from dex_agents.shell.step_base import SessionStep


class StartAgentSession(SessionStep[AgentSessionStartInput]):
    """Initializes the session; starts ``turn-1`` when the start input has a non-blank message."""

    step_type = StepType.START_AGENT_SESSION

    async def execute(self, context: AsyncContext, input: AgentSessionStartInput) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> SessionStarted:
            return SessionStarted(invocation=invocation, start_input=input)

        return await drive_step(self.runtime, context, self.step_type, None, started)


class AwaitUserMessage(SessionStep[None]):
    """Waits for one queued user message and starts the next turn with it."""

    step_type = StepType.AWAIT_USER_MESSAGE

    async def wait_for(self, context: AsyncContext, input: None) -> Wait:  # type: ignore[override]
        return dex_wait(self.step_type)

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> UserMessageArrived:
            return UserMessageArrived(invocation=invocation, consumed=consumed_messages(context))

        return await drive_step(self.runtime, context, self.step_type, None, started)


class RunModel(SessionStep[None]):
    """One model call of the running turn through ``runner.run_model_step``."""

    step_type = StepType.RUN_MODEL

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> ModelStepStarted:
            return ModelStepStarted(invocation=invocation)

        return await drive_step(self.runtime, context, self.step_type, None, started)


class ResumeTurn(SessionStep[int]):
    """Waits for ``input`` ``ToolCallCompleted`` messages, then resumes the turn (or waits again)."""

    step_type = StepType.RESUME_TURN

    async def wait_for(self, context: AsyncContext, input: int) -> Wait:  # type: ignore[override]
        return dex_wait(self.step_type, input)

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> ToolResultsArrived:
            return ToolResultsArrived(invocation=invocation, expected=input)

        return await drive_step(self.runtime, context, self.step_type, None, started)


class CompactHistory(SessionStep[str]):
    """Compacts the history in one summarization call (``runner.summarize_history``); ``input`` is the
    trigger (``reactive``, ``proactive``). Ours, not the spec's."""

    step_type = StepType.COMPACT_HISTORY

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> CompactionStarted:
            return CompactionStarted(invocation=invocation, trigger=input)

        return await drive_step(self.runtime, context, self.step_type, None, started)


class RecordTurnFailure(SessionStep[None]):
    """``RunModel``'s failure route: records the failed turn (with the turn failure note when due)."""

    step_type = StepType.RECORD_TURN_FAILURE

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> ModelAttemptsExhausted:
            return ModelAttemptsExhausted(invocation=invocation, recovery_error=recovery_error_of(context))

        return await drive_step(self.runtime, context, self.step_type, None, started)


__all__ = ["CompactHistory", "AwaitUserMessage", "RecordTurnFailure", "ResumeTurn", "RunModel", "StartAgentSession"]
