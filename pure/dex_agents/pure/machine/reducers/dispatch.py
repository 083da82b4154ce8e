"""``reduce``: the one entry point of the session state machine.

``reduce(state, config, session_input)`` sends every Step input, ``wait_for`` input and RPC call to its
reducer and returns the transition of its kind (``StepTransition``, ``WaitTransition``,
``RpcTransition``). It is total: any (state, input) pair gives a transition, and an input that does
not fit the state (or a runner defect) gives a rejection (``is_rejection``: state unchanged, no effects,
``FailAttempt`` or ``RefuseRpc``), never an exception. Step inputs first pass ``preconditions``
(usable invocation, tool call ID and counts, a consistent ``AgentState``). Inputs are never mutated
(everything is immutable).

The invocation record is decided here, after the reducer, never in one: a Step transition that decides
(``GoToSteps``, ``DeadEnd``) carries ``RecordInvocation`` with the clock of every input its invocation
reduced (``reduce_step`` for the started input, ``reduce_follow_up`` for each request's answer, which
extends the previous transition's ``clocks``); a ``wait_for`` transition always carries one; an RPC
transition when it writes and its call read a clock. A failed attempt, a request and a read-only or
refused call carry none (an attempt that fails commits nothing, so it records nothing).

| Input | Step / RPC | Reducer |
| --- | --- | --- |
| ``SessionStarted`` | ``StartAgentSession`` | ``session.reduce_session_started`` |
| ``UserMessageArrived`` | ``AwaitUserMessage`` | ``session.reduce_user_message_arrived`` |
| ``UserMessageBuilt`` (``InitialMessage``) | ``StartAgentSession`` | ``session.reduce_initial_message_built`` |
| ``UserMessageBuilt`` (``QueuedMessage``) | ``AwaitUserMessage`` | ``session.reduce_queued_message_built`` |
| ``UserMessageBuilt`` (``TurnFailureNote``) | ``RunModel`` / ``RecordTurnFailure`` | ``turn.reduce_turn_failure_note_built`` |
| ``UserMessageBuilt`` (``TurnCancelNote``) | ``CancelTurn`` | ``cancel.reduce_turn_cancel_note_built`` |
| ``TurnCancelStarted`` | ``CancelTurn`` | ``cancel.reduce_turn_cancel_started`` |
| ``ToolCancellationStarted`` | ``RecordToolCancellation`` | ``cancel.reduce_tool_cancellation_started`` |
| ``CancelTurnCalled`` | ``cancel_turn`` | ``cancel.reduce_cancel_turn`` |
| ``CancelToolCallCalled`` | ``cancel_tool_call`` | ``cancel.reduce_cancel_tool_call`` |
| ``ModelStepStarted`` | ``RunModel`` | ``model.reduce_model_step_started`` |
| ``ModelCallFinished`` | ``RunModel`` | ``model.reduce_model_call_finished`` |
| ``ModelCallFailed`` | ``RunModel`` | ``model.reduce_model_call_failed`` |
| ``ApprovalWaitStarted`` | ``AwaitToolApproval`` (``wait_for``) | ``approval.reduce_approval_wait_started`` |
| ``ApprovalWaitEnded`` | ``AwaitToolApproval`` | ``approval.reduce_approval_wait_ended`` |
| ``ToolStepStarted`` | ``CallTool`` / ``CallSingleAttemptTool`` | ``tools.reduce_tool_step_started`` |
| ``HeartbeatSent`` | ``CallSingleAttemptTool`` | ``tools.reduce_heartbeat_sent`` |
| ``ToolCallSucceeded`` | ``CallTool`` / ``CallSingleAttemptTool`` | ``tools.reduce_tool_call_succeeded`` |
| ``ToolExecutionFailed`` | ``CallTool`` / ``CallSingleAttemptTool`` | ``tools.reduce_tool_execution_failed`` |
| ``ToolAttemptsExhausted`` | ``RecordToolFailure`` | ``tools.reduce_tool_attempts_exhausted`` |
| ``SingleAttemptToolFailed`` | ``RecordToolOutcomeUnknown`` | ``tools.reduce_single_attempt_tool_failed`` |
| ``ToolResultsArrived`` | ``ResumeTurn`` | ``turn.reduce_tool_results_arrived`` |
| ``ModelAttemptsExhausted`` | ``RecordTurnFailure`` | ``turn.reduce_model_attempts_exhausted`` |
| ``CompactionStarted`` | ``CompactHistory`` | ``compaction.reduce_compaction_started`` |
| ``HistorySummarized`` | ``CompactHistory`` | ``compaction.reduce_history_summarized`` |
| ``SummarizationFailed`` | ``CompactHistory`` | ``compaction.reduce_summarization_failed`` |
| ``SendUserMessageCalled`` | ``send_user_message`` | ``rpcs.reduce_send_user_message`` |
| ``ResolveInterruptCalled`` | ``resolve_interrupt`` | ``rpcs.reduce_resolve_interrupt`` |
| ``AgentSnapshotRequested`` | ``get_agent_snapshot`` | ``rpcs.reduce_agent_snapshot_requested`` |
| ``AgentMessagesListed`` | ``list_agent_messages`` | ``rpcs.reduce_agent_messages_listed`` |
| ``SendUserMessageOnceCalled`` | ``send_user_message_once`` | ``rpcs.reduce_send_user_message_once`` |
| ``CompactHistoryCalled`` | ``compact_history`` | ``compaction.reduce_compact_history_called`` |
| ``ToolArgumentsValidated`` | ``AwaitToolApproval`` | ``approval.reduce_tool_arguments_validated`` |
| ``ReconcileStarted`` | ``ReconcileToolOutcome`` | ``tools.reduce_reconcile_started`` |
| ``ToolOutcomeReconciled`` | ``ReconcileToolOutcome`` | ``tools.reduce_tool_outcome_reconciled`` |
| ``ExtendInterruptDeadlineCalled`` | ``extend_interrupt_deadline`` | ``rpcs.reduce_extend_interrupt_deadline`` |
| ``SessionRewindRecorded`` | ``record_session_rewind`` | ``time_travel.reduce_session_rewind_recorded`` |
| ``ResolveToolOutcomeCalled`` | ``resolve_tool_outcome`` | ``outcomes.reduce_resolve_tool_outcome`` |
| ``SubAgentWaitStarted`` | ``AwaitSubAgent`` (``wait_for``) | ``subagents.reduce_sub_agent_wait_started`` |
| ``SubAgentEnded`` | ``AwaitSubAgent`` | ``subagents.reduce_sub_agent_ended`` |
"""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never, overload

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.machine.effects import RecordInvocation
from dex_agents.pure.machine.endings import CompleteSession, DeadEnd, GoToSteps
from dex_agents.pure.machine.invocation_record import clock_of, invocation_record

from dex_agents.pure.machine.reducers.cancel import (
    reduce_cancel_tool_call,
    reduce_cancel_turn,
    reduce_tool_cancellation_started,
)
from dex_agents.pure.machine.reducers.cancel_turn import reduce_turn_cancel_note_built, reduce_turn_cancel_started
from dex_agents.pure.machine.reducers.compaction import (
    reduce_compact_history_called,
    reduce_compaction_started,
    reduce_history_summarized,
    reduce_summarization_failed,
)
from dex_agents.pure.machine.reducers.approval import (
    reduce_approval_wait_ended,
    reduce_approval_wait_started,
    reduce_tool_arguments_validated,
)
from dex_agents.pure.machine.reducers.model import (
    reduce_model_call_failed,
    reduce_model_call_finished,
    reduce_model_step_started,
)
from dex_agents.pure.machine.reducers.preconditions import state_problem, step_input_problem
from dex_agents.pure.machine.reducers.outcomes import reduce_resolve_tool_outcome
from dex_agents.pure.machine.reducers.rpcs import (
    reduce_agent_messages_listed,
    reduce_agent_snapshot_requested,
    reduce_extend_interrupt_deadline,
    reduce_resolve_interrupt,
    reduce_send_user_message,
    reduce_send_user_message_once,
)
from dex_agents.pure.machine.reducers.session import (
    reduce_initial_message_built,
    reduce_queued_message_built,
    reduce_session_started,
    reduce_user_message_arrived,
)
from dex_agents.pure.machine.reducers.time_travel import reduce_session_rewind_recorded
from dex_agents.pure.machine.reducers.tools import (
    reduce_heartbeat_sent,
    reduce_reconcile_started,
    reduce_single_attempt_tool_failed,
    reduce_tool_attempts_exhausted,
    reduce_tool_call_succeeded,
    reduce_tool_execution_failed,
    reduce_tool_outcome_reconciled,
    reduce_tool_step_started,
)
from dex_agents.pure.machine.reducers.subagents import reduce_sub_agent_ended, reduce_sub_agent_wait_started
from dex_agents.pure.machine.reducers.turn import (
    reduce_model_attempts_exhausted,
    reduce_tool_results_arrived,
    reduce_turn_failure_note_built,
)
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    CancelToolCallCalled,
    CancelTurnCalled,
    CompactHistoryCalled,
    ExtendInterruptDeadlineCalled,
    ResolveInterruptCalled,
    ResolveToolOutcomeCalled,
    RpcCall,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
    SessionRewindRecorded,
)
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelNote,
    TurnCancelStarted,
    CompactionStarted,
    HistorySummarized,
    SummarizationFailed,
    ApprovalWaitEnded,
    ApprovalWaitStarted,
    HeartbeatSent,
    InitialMessage,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    QueuedMessage,
    ReconcileStarted,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    SubAgentEnded,
    SubAgentWaitStarted,
    ToolArgumentsValidated,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolOutcomeReconciled,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailureNote,
    UserMessageArrived,
    UserMessageBuilt,
    WaitInput,
)
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, Transition, WaitTransition, reject


def _user_message_built(state: SessionState, built: UserMessageBuilt) -> StepTransition:
    purpose = built.purpose
    match purpose:
        case InitialMessage():
            return reduce_initial_message_built(state, built.invocation, built.message, purpose)
        case QueuedMessage():
            return reduce_queued_message_built(state, built.invocation, built.message)
        case TurnFailureNote():
            return reduce_turn_failure_note_built(state, built.invocation, purpose, built.message)
        case TurnCancelNote():
            return reduce_turn_cancel_note_built(state, built.invocation, built.message)
        case _:
            assert_never(purpose)


def reduce_step(state: SessionState, config: SessionConfig, step_input: StepInput) -> StepTransition:
    """Reduce the first input of a Step's ``execute`` (see the module table); rejects unusable values
    first. A decision carries the invocation record of this one input."""
    return _recorded_step(config, _reduce_step(state, config, step_input), pvector([step_input.invocation.now_ms]))


def reduce_follow_up(config: SessionConfig, previous: StepTransition, follow_up: StepInput) -> StepTransition:
    """Reduce the follow-up input of ``previous``'s request, in the same invocation: from the state
    ``previous`` left; a decision carries the invocation record of every input reduced so far."""
    clocks = previous.clocks.append(follow_up.invocation.now_ms)
    return _recorded_step(config, _reduce_step(previous.state, config, follow_up), clocks)


def _recorded_step(config: SessionConfig, transition: StepTransition, clocks: PVector[int]) -> StepTransition:
    """``transition`` with the clocks of its invocation, and its record when it decides (an attempt
    that fails or asks for more commits nothing yet)."""
    decides = isinstance(transition.ending, GoToSteps | DeadEnd | CompleteSession)
    record = RecordInvocation(record=invocation_record(clocks, config)) if decides else None
    return replace(transition, clocks=clocks, record=record)


def _reduce_step(state: SessionState, config: SessionConfig, step_input: StepInput) -> StepTransition:
    problem = step_input_problem(step_input) or state_problem(state)
    if problem is not None:
        return reject(state, problem)
    match step_input:
        case SessionStarted():
            return reduce_session_started(state, step_input)
        case UserMessageArrived():
            return reduce_user_message_arrived(state, step_input)
        case UserMessageBuilt():
            return _user_message_built(state, step_input)
        case ModelStepStarted():
            return reduce_model_step_started(state, config, step_input)
        case ModelCallFinished():
            return reduce_model_call_finished(state, config, step_input)
        case ModelCallFailed():
            return reduce_model_call_failed(state, config, step_input)
        case ApprovalWaitEnded():
            return reduce_approval_wait_ended(state, step_input)
        case ToolStepStarted():
            return reduce_tool_step_started(state, step_input)
        case SubAgentEnded():
            return reduce_sub_agent_ended(state, step_input)
        case HeartbeatSent():
            return reduce_heartbeat_sent(state, step_input)
        case ToolCallSucceeded():
            return reduce_tool_call_succeeded(state, step_input)
        case ToolExecutionFailed():
            return reduce_tool_execution_failed(state, step_input)
        case ToolAttemptsExhausted():
            return reduce_tool_attempts_exhausted(state, step_input)
        case SingleAttemptToolFailed():
            return reduce_single_attempt_tool_failed(state, step_input)
        case ToolArgumentsValidated():
            return reduce_tool_arguments_validated(state, step_input)
        case ReconcileStarted():
            return reduce_reconcile_started(state, step_input)
        case ToolOutcomeReconciled():
            return reduce_tool_outcome_reconciled(state, step_input)
        case ToolResultsArrived():
            return reduce_tool_results_arrived(state, step_input)
        case ModelAttemptsExhausted():
            return reduce_model_attempts_exhausted(state, step_input)
        case CompactionStarted():
            return reduce_compaction_started(state, config, step_input)
        case HistorySummarized():
            return reduce_history_summarized(state, config, step_input)
        case SummarizationFailed():
            return reduce_summarization_failed(state, step_input)
        case TurnCancelStarted():
            return reduce_turn_cancel_started(state, step_input)
        case ToolCancellationStarted():
            return reduce_tool_cancellation_started(state, step_input)
        case _:
            assert_never(step_input)


def reduce_wait(state: SessionState, config: SessionConfig, wait_input: WaitInput) -> WaitTransition:
    """Reduce one input of a Step's ``wait_for``: what the wait waits on (never a rejection), with the
    invocation record of its one input."""
    record = RecordInvocation(record=invocation_record([wait_input.invocation.now_ms], config))
    match wait_input:
        case ApprovalWaitStarted():
            return replace(reduce_approval_wait_started(state, wait_input), record=record)
        case SubAgentWaitStarted():
            return replace(reduce_sub_agent_wait_started(state, wait_input), record=record)
        case _:
            assert_never(wait_input)


def reduce_rpc(state: SessionState, config: SessionConfig, call: RpcCall) -> RpcTransition:
    """Reduce one RPC call (see the module table). A call that writes and read a clock
    (``resolve_interrupt``, ``extend_interrupt_deadline``, ``resolve_tool_outcome``) carries the invocation record of that clock; no other call reads one."""
    transition = _reduce_rpc(state, config, call)
    clock = clock_of(call)
    if not transition.effects or clock is None:
        return transition
    return replace(transition, record=RecordInvocation(record=invocation_record([clock], config)))


def _reduce_rpc(state: SessionState, config: SessionConfig, call: RpcCall) -> RpcTransition:
    match call:
        case SendUserMessageCalled():
            return reduce_send_user_message(state, call)
        case ResolveInterruptCalled():
            return reduce_resolve_interrupt(state, call)
        case AgentSnapshotRequested():
            return reduce_agent_snapshot_requested(state, call)
        case AgentMessagesListed():
            return reduce_agent_messages_listed(state, call)
        case SendUserMessageOnceCalled():
            return reduce_send_user_message_once(state, call)
        case CompactHistoryCalled():
            return reduce_compact_history_called(state, config, call)
        case ExtendInterruptDeadlineCalled():
            return reduce_extend_interrupt_deadline(state, call)
        case SessionRewindRecorded():
            return reduce_session_rewind_recorded(state, call)
        case CancelTurnCalled():
            return reduce_cancel_turn(state, call)
        case CancelToolCallCalled():
            return reduce_cancel_tool_call(state, call)
        case ResolveToolOutcomeCalled():
            return reduce_resolve_tool_outcome(state, call)
        case _:
            assert_never(call)


@overload
def reduce(state: SessionState, config: SessionConfig, session_input: StepInput) -> StepTransition: ...
@overload
def reduce(state: SessionState, config: SessionConfig, session_input: WaitInput) -> WaitTransition: ...
@overload
def reduce(state: SessionState, config: SessionConfig, session_input: RpcCall) -> RpcTransition: ...
@overload
def reduce(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition: ...
def reduce(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
    """Reduce one input: the session state machine's single entry point.

    >>> from dex_agents.pure.values.rpc import SendUserMessageInput
    >>> t = reduce(SessionState.initial(), SessionConfig(), SendUserMessageCalled(input=SendUserMessageInput(text=" ")))
    >>> t.ending.output
    False
    """
    match session_input:
        case (
            SendUserMessageCalled()
            | ResolveInterruptCalled()
            | AgentSnapshotRequested()
            | AgentMessagesListed()
            | SendUserMessageOnceCalled()
            | CompactHistoryCalled()
            | ExtendInterruptDeadlineCalled()
            | SessionRewindRecorded()
            | CancelTurnCalled()
            | CancelToolCallCalled()
            | ResolveToolOutcomeCalled()
        ):
            return reduce_rpc(state, config, session_input)
        case ApprovalWaitStarted() | SubAgentWaitStarted():
            return reduce_wait(state, config, session_input)
        case _:
            return reduce_step(state, config, session_input)


__all__ = ["reduce", "reduce_follow_up", "reduce_rpc", "reduce_step", "reduce_wait"]
