"""``reduce``: the one entry point of the session state machine.

``reduce(state, config, session_input) -> Transition`` sends every Step fact and RPC call to its
reducer. It is total: any (state, input) pair gives a transition, and an input that does not fit
the state (or a runner defect) gives a rejection (``Transition.is_rejection``: state unchanged, one
``FailAttempt``), never an exception. Step inputs first pass ``preconditions`` (usable invocation,
tool call ID and counts, a consistent ``AgentState``). Inputs are never mutated (everything is
immutable).

| Input | Step / RPC | Reducer |
| --- | --- | --- |
| ``SessionStarted`` | ``StartAgentSession`` | ``session.reduce_session_started`` |
| ``UserMessageArrived`` | ``AwaitUserMessage`` | ``session.reduce_user_message_arrived`` |
| ``ModelCallFinished`` | ``RunModel`` | ``model.reduce_model_call_finished`` |
| ``ModelCallFailed`` | ``RunModel`` | ``model.reduce_model_call_failed`` |
| ``ApprovalWaitEnded`` | ``AwaitToolApproval`` | ``approval.reduce_approval_wait_ended`` |
| ``ToolStepStarted`` | ``CallTool`` / ``CallSingleAttemptTool`` | ``tools.reduce_tool_step_started`` |
| ``ToolCallSucceeded`` | ``CallTool`` / ``CallSingleAttemptTool`` | ``tools.reduce_tool_call_succeeded`` |
| ``ToolExecutionFailed`` | ``CallTool`` / ``CallSingleAttemptTool`` | ``tools.reduce_tool_execution_failed`` |
| ``ToolAttemptsExhausted`` | ``RecordToolFailure`` | ``tools.reduce_tool_attempts_exhausted`` |
| ``SingleAttemptToolFailed`` | ``RecordToolOutcomeUnknown`` | ``tools.reduce_single_attempt_tool_failed`` |
| ``ToolResultsArrived`` | ``ResumeTurn`` | ``turn.reduce_tool_results_arrived`` |
| ``TurnFailed`` | ``RecordTurnFailure`` (``RunModel``) | ``turn.reduce_turn_failed`` |
| ``SendUserMessageCalled`` | ``send_user_message`` | ``rpcs.reduce_send_user_message`` |
| ``ResolveInterruptCalled`` | ``resolve_interrupt`` | ``rpcs.reduce_resolve_interrupt`` |
| ``AgentSnapshotRequested`` | ``get_agent_snapshot`` | ``rpcs.reduce_agent_snapshot_requested`` |
| ``AgentMessagesListed`` | ``list_agent_messages`` | ``rpcs.reduce_agent_messages_listed`` |
"""

from __future__ import annotations

from typing import assert_never

from dex_agents.pure.reducers.approval import reduce_approval_wait_ended
from dex_agents.pure.reducers.model import reduce_model_call_failed, reduce_model_call_finished
from dex_agents.pure.reducers.preconditions import state_problem, step_input_problem
from dex_agents.pure.reducers.rpcs import (
    reduce_agent_messages_listed,
    reduce_agent_snapshot_requested,
    reduce_resolve_interrupt,
    reduce_send_user_message,
)
from dex_agents.pure.reducers.session import reduce_session_started, reduce_user_message_arrived
from dex_agents.pure.reducers.tools import (
    reduce_single_attempt_tool_failed,
    reduce_tool_attempts_exhausted,
    reduce_tool_call_succeeded,
    reduce_tool_execution_failed,
    reduce_tool_step_started,
)
from dex_agents.pure.reducers.turn import reduce_tool_results_arrived, reduce_turn_failed
from dex_agents.pure.state import SessionConfig, SessionState
from dex_agents.pure.step_inputs import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ApprovalWaitEnded,
    ModelCallFailed,
    ModelCallFinished,
    ResolveInterruptCalled,
    SendUserMessageCalled,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailed,
    UserMessageArrived,
)
from dex_agents.pure.transition import Transition, reject


def reduce_step(state: SessionState, config: SessionConfig, step_input: StepInput) -> Transition:
    """Reduce one Step fact (see the module table); rejects unusable values first (``preconditions``)."""
    problem = step_input_problem(step_input) or state_problem(state)
    if problem is not None:
        return reject(state, problem)
    match step_input:
        case SessionStarted():
            return reduce_session_started(state, step_input)
        case UserMessageArrived():
            return reduce_user_message_arrived(state, step_input)
        case ModelCallFinished():
            return reduce_model_call_finished(state, config, step_input)
        case ModelCallFailed():
            return reduce_model_call_failed(state, step_input)
        case ApprovalWaitEnded():
            return reduce_approval_wait_ended(state, step_input)
        case ToolStepStarted():
            return reduce_tool_step_started(state, step_input)
        case ToolCallSucceeded():
            return reduce_tool_call_succeeded(state, step_input)
        case ToolExecutionFailed():
            return reduce_tool_execution_failed(state, step_input)
        case ToolAttemptsExhausted():
            return reduce_tool_attempts_exhausted(state, step_input)
        case SingleAttemptToolFailed():
            return reduce_single_attempt_tool_failed(state, step_input)
        case ToolResultsArrived():
            return reduce_tool_results_arrived(state, step_input)
        case TurnFailed():
            return reduce_turn_failed(state, step_input)
        case _:
            assert_never(step_input)


def reduce(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
    """Reduce one Step fact or RPC call: the session state machine's single entry point.

    >>> from dex_agents.pure.rpc_values import SendUserMessageInput
    >>> t = reduce(SessionState.initial(), SessionConfig(), SendUserMessageCalled(input=SendUserMessageInput(text=" ")))
    >>> t.effects[-1].output
    False
    """
    match session_input:
        case SendUserMessageCalled():
            return reduce_send_user_message(state, session_input)
        case ResolveInterruptCalled():
            return reduce_resolve_interrupt(state, session_input)
        case AgentSnapshotRequested():
            return reduce_agent_snapshot_requested(state, session_input)
        case AgentMessagesListed():
            return reduce_agent_messages_listed(state, session_input)
        case _:
            return reduce_step(state, config, session_input)


__all__ = ["reduce", "reduce_step"]
