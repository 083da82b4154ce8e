"""Session inputs: past-tense facts the shell observed, one per Step outcome and per RPC call.

A Step input carries an ``Invocation`` (flow ID, Step execution ID, attempt, and the Worker clock in
epoch milliseconds) plus what the Step saw: a consumed Channel message, a runner result (already
turned into data), a recovery error. The core reads no clock and mints no id: everything it needs
arrives here, so folding recorded inputs (``replay``) reproduces a session exactly.

Which Step produces which input:
    * ``StartAgentSession``: ``SessionStarted``.
    * ``AwaitUserMessage``: ``UserMessageArrived``.
    * ``RunModel``: ``ModelCallFinished`` (``TurnCompleted`` or ``ToolCallsRequested``), or
      ``ModelCallFailed`` (``run_model_step`` raised); ``TurnFailed`` when it fails the turn itself
      after asking for the turn failure note (``BuildTurnFailureNote``).
    * ``AwaitToolApproval``: ``ApprovalWaitEnded`` (a resolution, the deadline Timer, or a skipped wait).
    * ``CallTool`` / ``CallSingleAttemptTool``: ``ToolStepStarted`` before the tool runs, then
      ``ToolCallSucceeded`` or ``ToolExecutionFailed`` (a ``ToolExecutionError``).
    * ``RecordToolFailure``: ``ToolAttemptsExhausted``; ``RecordToolOutcomeUnknown``:
      ``SingleAttemptToolFailed`` (both with the recovery error text).
    * ``ResumeTurn``: ``ToolResultsArrived``.
    * ``RecordTurnFailure``: ``TurnFailed``.
    * RPCs: ``SendUserMessageCalled``, ``ResolveInterruptCalled``, ``AgentSnapshotRequested``,
      ``AgentMessagesListed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

from dex_agents.pure.persistence import StepType
from dex_agents.pure.rpc_values import ListAgentMessagesInput, ResolveInterruptInput, SendUserMessageInput
from dex_agents.pure.runner_values import AgentTurnOutcome
from dex_agents.pure.values import AgentInterruptResolution, AgentSessionStartInput, AgentUserMessage, FrameworkMessage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """Facts of the running Step invocation.

    Attributes:
        flow_id: The session ID (non-empty).
        step_execution_id: Dex's ID of this Step execution (events carry it).
        attempt: One-based attempt number of this execution.
        now_ms: The Worker clock, epoch milliseconds, read once by the shell.
    """

    flow_id: str
    step_execution_id: str
    attempt: int
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStarted:
    """``StartAgentSession`` ran. ``initial_user_message`` is ``runner.build_user_message`` of a
    non-blank ``initial_message`` (``None`` otherwise)."""

    invocation: Invocation
    start_input: AgentSessionStartInput
    initial_user_message: FrameworkMessage | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageArrived:
    """``AwaitUserMessage`` consumed one queued message; ``user_message`` is ``runner.build_user_message(text)``."""

    invocation: Invocation
    message: AgentUserMessage
    user_message: FrameworkMessage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallFinished:
    """``runner.run_model_step`` returned (``ModelCallFailed`` when it raised)."""

    invocation: Invocation
    outcome: AgentTurnOutcome


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallFailed:
    """``runner.run_model_step`` raised.

    Attributes:
        error: The error's text (``str(error)``, or its type's name when that is empty).
        retryable: False for ``NonRetryableModelError`` (no attempt can succeed: the turn fails at
            once); True for any other exception (the attempt fails and Dex retries it).
    """

    invocation: Invocation
    error: str
    retryable: bool


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolutionReceived:
    """The wait consumed this resolution from the call's ``InterruptResolutions`` instance."""

    resolution: AgentInterruptResolution


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineTimerFired:
    """The deadline Timer won the wait (Dex ranks Timers first; a resolution may still be queued)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WaitSkipped:
    """The wait was skipped because the call needed no waiting (see ``approval_wait``)."""


ApprovalWaitOutcome: TypeAlias = ResolutionReceived | DeadlineTimerFired | WaitSkipped


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalWaitEnded:
    """``AwaitToolApproval(tool_call_id)`` finished waiting."""

    invocation: Invocation
    tool_call_id: str
    outcome: ApprovalWaitOutcome


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStepStarted:
    """``CallTool`` or ``CallSingleAttemptTool`` (``step_type``) began, before running anything."""

    invocation: Invocation
    tool_call_id: str
    step_type: StepType


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSucceeded:
    """The runner returned ``output`` for the call."""

    invocation: Invocation
    tool_call_id: str
    output: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionFailed:
    """The runner raised ``ToolExecutionError(error)``: a failure the model should see, not retried."""

    invocation: Invocation
    tool_call_id: str
    error: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAttemptsExhausted:
    """``RecordToolFailure`` runs: ``CallTool`` ran out of attempts (errors, crashes or timeouts)."""

    invocation: Invocation
    tool_call_id: str
    recovery_error: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SingleAttemptToolFailed:
    """``RecordToolOutcomeUnknown`` runs: ``CallSingleAttemptTool``'s one attempt failed or crashed."""

    invocation: Invocation
    tool_call_id: str
    recovery_error: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultsArrived:
    """``ResumeTurn(expected)`` consumed ``expected`` ``ToolCallCompleted`` messages."""

    invocation: Invocation
    expected: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailed:
    """``RecordTurnFailure`` runs: ``RunModel`` ran out of attempts with ``recovery_error``. Or
    ``RunModel`` fails the turn itself (a ``NonRetryableModelError``, the model call cap) and this is
    the follow-up of its ``BuildTurnFailureNote``.

    ``failure_note_message`` is ``runner.build_user_message(note)`` where ``note`` is
    ``turn_failure_note(state)``; it is ``None`` exactly when that note is ``None``.
    """

    invocation: Invocation
    recovery_error: str
    failure_note_message: FrameworkMessage | None


StepInput: TypeAlias = (
    SessionStarted
    | UserMessageArrived
    | ModelCallFinished
    | ModelCallFailed
    | ApprovalWaitEnded
    | ToolStepStarted
    | ToolCallSucceeded
    | ToolExecutionFailed
    | ToolAttemptsExhausted
    | SingleAttemptToolFailed
    | ToolResultsArrived
    | TurnFailed
)
"""Every Step fact."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SendUserMessageCalled:
    """``send_user_message`` was called."""

    input: SendUserMessageInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolveInterruptCalled:
    """``resolve_interrupt`` was called at ``now_ms`` (epoch milliseconds, the Worker clock)."""

    input: ResolveInterruptInput
    now_ms: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSnapshotRequested:
    """``get_agent_snapshot`` was called."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentMessagesListed:
    """``list_agent_messages`` was called."""

    input: ListAgentMessagesInput


RpcCall: TypeAlias = SendUserMessageCalled | ResolveInterruptCalled | AgentSnapshotRequested | AgentMessagesListed
"""Every RPC fact."""

SessionInput: TypeAlias = StepInput | RpcCall
"""Everything ``reduce`` accepts, and what ``replay`` folds."""

__all__ = [
    "AgentMessagesListed",
    "AgentSnapshotRequested",
    "ApprovalWaitEnded",
    "ApprovalWaitOutcome",
    "DeadlineTimerFired",
    "Invocation",
    "ModelCallFailed",
    "ModelCallFinished",
    "ResolutionReceived",
    "ResolveInterruptCalled",
    "RpcCall",
    "SendUserMessageCalled",
    "SessionInput",
    "SessionStarted",
    "SingleAttemptToolFailed",
    "StepInput",
    "ToolAttemptsExhausted",
    "ToolCallSucceeded",
    "ToolExecutionFailed",
    "ToolResultsArrived",
    "ToolStepStarted",
    "TurnFailed",
    "UserMessageArrived",
    "WaitSkipped",
]
