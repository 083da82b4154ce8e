"""The Steps of a turn: ``StartAgentSession``, ``AwaitUserMessage``, ``RunModel``, ``ResumeTurn`` and
``RecordTurnFailure``. Each builds its fact and hands it to ``drive_step``.

``RunModel`` observes a model call that raised as ``ModelCallFailed``; when the core then fails the
attempt, the runner's exception is chained as the cause, so Dex records the runner's traceback."""

from __future__ import annotations

from dex import AsyncContext, StepDecision, Wait

from dex_agents.pure.persistence import StepType
from dex_agents.pure.reducers import turn_failure_note
from dex_agents.pure.reducers.session import initial_message_text
from dex_agents.pure.state import SessionState
from dex_agents.pure.step_inputs import (
    SessionStarted,
    StepInput,
    ToolResultsArrived,
    TurnFailed,
    UserMessageArrived,
)
from dex_agents.pure.values import AgentSessionStartInput
from dex_agents.shell.definitions import QUEUED_USER_MESSAGES, TOOL_CALL_RESULTS
from dex_agents.shell.driver import drive_step
from dex_agents.shell.runner import AgentTurnContext
from dex_agents.shell.perform import AttemptRejectedError
from dex_agents.shell.runner_calls import ModelCallObserved, RunnerDefectError, build_user_message, run_model_step
from dex_agents.shell.session_step import SessionStep, recovery_error_text
from dex_agents.shell.step_run import StepRun


class StartAgentSession(SessionStep[AgentSessionStartInput]):
    """Initializes the session; starts ``turn-1`` when the start input has a non-blank message."""

    step_type = StepType.START_AGENT_SESSION

    async def execute(self, context: AsyncContext, input: AgentSessionStartInput) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, _state: SessionState) -> StepInput:
            text = initial_message_text(input)
            message = None if text is None else build_user_message(self.runtime.runner, text)
            return SessionStarted(invocation=run.invocation, start_input=input, initial_user_message=message)

        return await drive_step(self.runtime, context, self.step_type, None, observe)


class AwaitUserMessage(SessionStep[None]):
    """Waits for one queued user message and starts the next turn with it."""

    step_type = StepType.AWAIT_USER_MESSAGE

    async def wait_for(self, context: AsyncContext, input: None) -> Wait:  # type: ignore[override]
        return Wait.until(QUEUED_USER_MESSAGES.for_one())

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, _state: SessionState) -> StepInput:
            consumed = QUEUED_USER_MESSAGES.results(context)
            if len(consumed) != 1:
                raise RuntimeError(f"AwaitUserMessage consumed {len(consumed)} messages, expected 1")
            text = consumed[0].text
            return UserMessageArrived(
                invocation=run.invocation, message=consumed[0], user_message=build_user_message(self.runtime.runner, text)
            )

        return await drive_step(self.runtime, context, self.step_type, None, observe)


class RunModel(SessionStep[None]):
    """One model call of the running turn through ``runner.run_model_step``."""

    step_type = StepType.RUN_MODEL

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        observed: list[ModelCallObserved] = []

        async def observe(run: StepRun, state: SessionState) -> StepInput:
            turn_id = state.current_turn_id
            if turn_id is None:
                raise RunnerDefectError("RunModel runs outside a turn (no current turn in AgentState)")
            turn = AgentTurnContext(
                flow_id=context.flow_id,
                turn_id=turn_id,
                attempt=context.attempt,
                messages=tuple(state.messages),
                framework_run_state=state.framework_run_state,
                tool_calls=state.records_in_deferral_order(),
                events=run.writer,
                deadline=run.deadline,
                resolve_tool_policy=self.runtime.config.resolve_tool_policy,
                is_cancellation_requested=context.is_cancellation_requested,
                heartbeat=context.heartbeat,
            )
            seen = await run_model_step(
                self.runtime.runner, turn, context, self.runtime.timing.heartbeat_interval_seconds, run.now
            )
            observed.append(seen)
            return seen.fact

        try:
            return await drive_step(self.runtime, context, self.step_type, None, observe)
        except AttemptRejectedError as rejected:
            cause = observed[0].raised if observed else None
            if cause is None:
                raise
            raise rejected from cause


class ResumeTurn(SessionStep[int]):
    """Waits for ``input`` ``ToolCallCompleted`` messages, then resumes the turn (or waits again)."""

    step_type = StepType.RESUME_TURN

    async def wait_for(self, context: AsyncContext, input: int) -> Wait:  # type: ignore[override]
        return Wait.until(TOOL_CALL_RESULTS.for_n(input))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, _state: SessionState) -> StepInput:
            return ToolResultsArrived(invocation=run.invocation, expected=input)

        return await drive_step(self.runtime, context, self.step_type, None, observe)


class RecordTurnFailure(SessionStep[None]):
    """``RunModel``'s failure route: records the failed turn (with the turn failure note when due)."""

    step_type = StepType.RECORD_TURN_FAILURE

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        async def observe(run: StepRun, state: SessionState) -> StepInput:
            note = turn_failure_note(state)
            note_message = None if note is None else build_user_message(self.runtime.runner, note)
            return TurnFailed(
                invocation=run.invocation, recovery_error=recovery_error_text(context), failure_note_message=note_message
            )

        return await drive_step(self.runtime, context, self.step_type, None, observe)


__all__ = ["AwaitUserMessage", "RecordTurnFailure", "ResumeTurn", "RunModel", "StartAgentSession"]
