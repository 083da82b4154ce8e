"""Preconditions ``reduce`` checks before any Step reducer runs, so that the reducers (and the key
helpers they call) only ever see usable values: a rejected input is a clear error, never an exception.

* The invocation: a non-empty flow ID and a one-based attempt.
* The tool call ID of a tool input: non-empty, without ``/`` (a Step input and a map key).
* ``ResumeTurn``'s expected result count: at least 1.
* ``AgentState``: non-negative counts, ``message_count`` within 12-digit sequence keys, and a running
  turn's ID equal to ``turn-<turn_count>``; ``TurnModelCallCount`` non-negative.
"""

from __future__ import annotations

from typing import assert_never

from dex_agents.pure.machine.keys import MAX_MESSAGE_SEQUENCE
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelStarted,
    ReconcileStarted,
    ToolArgumentsValidated,
    ToolOutcomeReconciled,
    CompactionStarted,
    HistorySummarized,
    SummarizationFailed,
    ApprovalWaitEnded,
    HeartbeatSent,
    Invocation,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    SubAgentEnded,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    UserMessageArrived,
    UserMessageBuilt,
)


def invocation_problem(invocation: Invocation) -> str | None:
    """``None`` for a usable invocation, else what is wrong with it."""
    if invocation.flow_id == "":
        return "the invocation has an empty flow ID"
    if invocation.attempt < 1:
        return f"attempts are one-based, got {invocation.attempt}"
    return None


def tool_call_id_problem(tool_call_id: str) -> str | None:
    """``None`` for a usable tool call ID (non-empty, no ``/``), else what is wrong with it."""
    if tool_call_id == "" or "/" in tool_call_id:
        return f"tool call ID {tool_call_id!r} is empty or contains '/'"
    return None


def step_input_problem(step_input: StepInput) -> str | None:
    """``None`` when the input's own values are usable, else what is wrong with them."""
    problem = invocation_problem(step_input.invocation)
    if problem is not None:
        return problem
    match step_input:
        case (
            ApprovalWaitEnded()
            | ToolStepStarted()
            | HeartbeatSent()
            | ToolCallSucceeded()
            | ToolExecutionFailed()
            | ToolAttemptsExhausted()
            | SingleAttemptToolFailed()
            | ToolArgumentsValidated()
            | ReconcileStarted()
            | ToolOutcomeReconciled()
            | ToolCancellationStarted()
            | SubAgentEnded()
        ):
            return tool_call_id_problem(step_input.tool_call_id)
        case ToolResultsArrived():
            return None if step_input.expected >= 1 else f"ResumeTurn expects at least 1 result, got {step_input.expected}"
        case (
            SessionStarted()
            | UserMessageArrived()
            | UserMessageBuilt()
            | ModelStepStarted()
            | ModelCallFinished()
            | ModelCallFailed()
            | ModelAttemptsExhausted()
            | CompactionStarted()
            | HistorySummarized()
            | SummarizationFailed()
            | TurnCancelStarted()
        ):
            return None
        case _:
            assert_never(step_input)


def state_problem(state: SessionState) -> str | None:
    """``None`` when the loaded ``AgentState`` (and model call count) is consistent, else what is wrong."""
    if state.turn_model_call_count < 0:
        return f"TurnModelCallCount is negative: {state.turn_model_call_count}"
    agent_state = state.agent_state
    if agent_state is None:
        return None
    counts = (
        agent_state.turn_count,
        agent_state.message_count,
        agent_state.completed_turn_count,
        agent_state.failed_turn_count,
    )
    if min(counts) < 0:
        return f"AgentState has a negative count: {agent_state!r}"
    if agent_state.message_count > MAX_MESSAGE_SEQUENCE:
        return f"AgentState.message_count {agent_state.message_count} is past the last sequence key"
    running = agent_state.current_turn_id
    if running is not None and running != f"turn-{agent_state.turn_count}":
        return f"the running turn {running!r} is not turn-{agent_state.turn_count}"
    return None


__all__ = ["invocation_problem", "state_problem", "step_input_problem", "tool_call_id_problem"]
