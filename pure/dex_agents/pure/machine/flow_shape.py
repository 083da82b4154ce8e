"""Which Step (or RPC) produces each session input, and so which Steps its transition may move to,
read from the flow table (``flow.table.STEP_TABLE``). Tests check every transition against it.
"""

from __future__ import annotations

from typing import Final, assert_never

from dex_agents.pure.flow.table import STEP_TABLE
from dex_agents.pure.values.persistence import RpcName, StepType
from dex_agents.pure.machine.policies import tool_step_type
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
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelNote,
    TurnCancelStarted,
    ReconcileStarted,
    ToolArgumentsValidated,
    ToolOutcomeReconciled,
    CompactionStarted,
    HistorySummarized,
    SummarizationFailed,
    ApprovalWaitEnded,
    HeartbeatSent,
    InitialMessage,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    QueuedMessage,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    SubAgentEnded,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailureNote,
    UserMessageArrived,
    UserMessageBuilt,
    UserMessagePurpose,
)
from dex_agents.pure.values.session import ToolEffect

_TOOL_STEPS: Final = frozenset(tool_step_type(effect) for effect in ToolEffect)
"""The Steps that run a tool call (the Effects table's "Step" column)."""


def _building(purpose: UserMessagePurpose) -> frozenset[StepType]:
    """The Steps that ask for a user message with ``purpose``."""
    match purpose:
        case InitialMessage():
            return frozenset({StepType.START_AGENT_SESSION})
        case QueuedMessage():
            return frozenset({StepType.AWAIT_USER_MESSAGE})
        case TurnFailureNote():
            return frozenset({StepType.RECORD_TURN_FAILURE, StepType.RUN_MODEL})
        case TurnCancelNote():
            return frozenset({StepType.CANCEL_TURN})
        case _:
            assert_never(purpose)


def steps_producing(step_input: StepInput) -> frozenset[StepType]:
    """The Step (or, for a tool outcome, the two tool Steps) whose invocation produces ``step_input``
    (a turn failure note's ``UserMessageBuilt``: ``RecordTurnFailure``, or ``RunModel`` failing its turn
    itself)."""
    match step_input:
        case SessionStarted():
            return frozenset({StepType.START_AGENT_SESSION})
        case UserMessageArrived():
            return frozenset({StepType.AWAIT_USER_MESSAGE})
        case UserMessageBuilt(purpose=purpose):
            return _building(purpose)
        case ModelStepStarted() | ModelCallFinished() | ModelCallFailed():
            return frozenset({StepType.RUN_MODEL})
        case ApprovalWaitEnded() | ToolArgumentsValidated():
            return frozenset({StepType.AWAIT_TOOL_APPROVAL})
        case SubAgentEnded():
            return frozenset({StepType.AWAIT_SUB_AGENT})
        case ReconcileStarted() | ToolOutcomeReconciled():
            return frozenset({StepType.RECONCILE_TOOL_OUTCOME})
        case ToolStepStarted():
            return frozenset({step_input.step_type}) & _TOOL_STEPS
        case HeartbeatSent():
            return frozenset({StepType.CALL_SINGLE_ATTEMPT_TOOL})
        case ToolCallSucceeded() | ToolExecutionFailed():
            return _TOOL_STEPS
        case ToolAttemptsExhausted():
            return frozenset({StepType.RECORD_TOOL_FAILURE})
        case SingleAttemptToolFailed():
            return frozenset({StepType.RECORD_TOOL_OUTCOME_UNKNOWN})
        case ToolResultsArrived():
            return frozenset({StepType.RESUME_TURN})
        case ModelAttemptsExhausted():
            return frozenset({StepType.RECORD_TURN_FAILURE})
        case CompactionStarted() | HistorySummarized() | SummarizationFailed():
            return frozenset({StepType.COMPACT_HISTORY})
        case TurnCancelStarted():
            return frozenset({StepType.CANCEL_TURN})
        case ToolCancellationStarted():
            return frozenset({StepType.RECORD_TOOL_CANCELLATION})
        case _:
            assert_never(step_input)


def allowed_next_steps(step_input: StepInput) -> frozenset[StepType]:
    """Every Step a transition of ``step_input`` may move to."""
    allowed: frozenset[StepType] = frozenset()
    for step_type in steps_producing(step_input):
        allowed |= STEP_TABLE[step_type].next_steps
    return allowed


def rpc_of(call: RpcCall) -> RpcName:
    """The RPC whose handler produces ``call``."""
    match call:
        case SendUserMessageCalled():
            return RpcName.SEND_USER_MESSAGE
        case ResolveInterruptCalled():
            return RpcName.RESOLVE_INTERRUPT
        case AgentSnapshotRequested():
            return RpcName.GET_AGENT_SNAPSHOT
        case AgentMessagesListed():
            return RpcName.LIST_AGENT_MESSAGES
        case SendUserMessageOnceCalled():
            return RpcName.SEND_USER_MESSAGE_ONCE
        case CompactHistoryCalled():
            return RpcName.COMPACT_HISTORY
        case ExtendInterruptDeadlineCalled():
            return RpcName.EXTEND_INTERRUPT_DEADLINE
        case SessionRewindRecorded():
            return RpcName.RECORD_SESSION_REWIND
        case CancelTurnCalled():
            return RpcName.CANCEL_TURN
        case CancelToolCallCalled():
            return RpcName.CANCEL_TOOL_CALL
        case ResolveToolOutcomeCalled():
            return RpcName.RESOLVE_TOOL_OUTCOME
        case _:
            assert_never(call)


def rpc_instance_key(call: RpcCall) -> str | None:
    """The key of the map instances ``call``'s RPC loads (its row's ``message_instances``): the
    message ID of ``send_user_message_once``, the tool call ID of ``resolve_tool_outcome``, else ``None``."""
    if isinstance(call, ResolveToolOutcomeCalled):
        return call.input.tool_call_id
    return call.input.message_id if isinstance(call, SendUserMessageOnceCalled) else None


__all__ = ["allowed_next_steps", "rpc_instance_key", "rpc_of", "steps_producing"]
