"""Session inputs: what ``reduce`` takes (``SessionInput``), one per Step start, per request's result
(here) and per RPC call (``rpc_calls``); nothing else reaches the core. Each is a past-tense fact the
shell observed, named for what happened (``SessionStarted``, ``ModelCallFinished``); "input" is the
one word for them in the code (the Flow option ``fact_observer`` sees every one).

A Step input carries an ``Invocation`` (flow ID, Step execution ID, attempt, and the Worker clock in
epoch milliseconds) plus what the Step saw: a consumed Channel message, a request's result (already
turned into data), a recovery error. The core reads no clock and mints no id: everything it needs
arrives here, so folding recorded inputs (``replay``) reproduces a session exactly.

Every Step runs one protocol: the shell reduces the Step's *started* input; the core answers with
effects that may end in a request (``endings.Request``); the shell performs it and reduces its
*follow-up* input from the state the request left, until a decision ends the attempt.

| Step | Started input | Follow-ups (request -> input) |
| --- | --- | --- |
| ``StartAgentSession`` | ``SessionStarted`` | ``BuildUserMessage`` -> ``UserMessageBuilt`` |
| ``AwaitUserMessage`` | ``UserMessageArrived`` | ``BuildUserMessage`` -> ``UserMessageBuilt`` |
| ``RunModel`` | ``ModelStepStarted`` | ``CallModel`` -> ``ModelCallFinished`` / ``ModelCallFailed``; then maybe ``BuildUserMessage`` -> ``UserMessageBuilt`` (the turn failure note) |
| ``AwaitToolApproval`` | ``ApprovalWaitStarted`` (``wait_for``), ``ApprovalWaitEnded`` (``execute``) | ``ValidateToolArguments`` -> ``ToolArgumentsValidated`` (an edited approval) |
| ``ReconcileToolOutcome`` | ``ReconcileStarted`` | ``ReconcileToolCall`` -> ``ToolOutcomeReconciled`` |
| ``CallTool`` / ``CallSingleAttemptTool`` | ``ToolStepStarted`` | ``SendHeartbeat`` -> ``HeartbeatSent``; ``ExecuteDeferredToolCall`` -> ``ToolCallSucceeded`` / ``ToolExecutionFailed`` |
| ``RecordToolFailure`` | ``ToolAttemptsExhausted`` | |
| ``RecordToolOutcomeUnknown`` | ``SingleAttemptToolFailed`` | |
| ``ResumeTurn`` | ``ToolResultsArrived`` | |
| ``RecordTurnFailure`` | ``ModelAttemptsExhausted`` | ``BuildUserMessage`` -> ``UserMessageBuilt`` (the turn failure note) |
| ``CancelTurn`` | ``TurnCancelStarted`` | ``BuildUserMessage`` -> ``UserMessageBuilt`` (the turn cancel note) |
| ``RecordToolCancellation`` | ``ToolCancellationStarted`` | |

The RPCs' inputs (``RpcCall``) are in ``rpc_calls``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

from pyrsistent.typing import PVector

from dex_agents.pure.machine.rpc_calls import RpcCall
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.runner import AgentTurnOutcome
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentSessionStartInput,
    AgentUsage,
    AgentUserMessage,
    FrameworkMessage,
    SubAgentResult,
)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """The running Step invocation, as the shell read it.

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
class RecoveryError:
    """The failure that routed a Step to its failure route (Dex's ``RecoveryErrorInfo``): the failed
    attempt's message and error type, as Dex recorded them (either may be empty)."""

    detail: str
    error_type: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class InitialMessage:
    """The user message ``StartAgentSession`` starts ``turn-1`` with (``parent_session_id`` and
    ``parent_tool_call_id``: the start input's, for a sub-agent's child session; ours)."""

    parent_session_id: str | None = None
    parent_tool_call_id: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class QueuedMessage:
    """The user message ``AwaitUserMessage`` starts the next turn with (from the consumed queued one)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailureNote:
    """The note that ends a failed turn whose tool calls finished; the turn fails with ``error``.

    Attributes:
        error: The turn's ``last_turn_error`` (the recovery error, or why ``RunModel`` failed it).
        recorded_usage: The failing model call's usage, recorded with the failure (the model call cap:
            the call that reached it returned usage); ``None`` when no model call returned.
    """

    error: str
    recorded_usage: AgentUsage | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCancelNote:
    """The note that ends a canceled turn (``CancelTurn``); the turn ends canceled."""


UserMessagePurpose: TypeAlias = InitialMessage | QueuedMessage | TurnFailureNote | TurnCancelNote
"""What a ``BuildUserMessage`` request builds the message for (its follow-up carries it back)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStarted:
    """``StartAgentSession`` began with the Flow's start input."""

    invocation: Invocation
    start_input: AgentSessionStartInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageArrived:
    """``AwaitUserMessage``'s wait delivered ``consumed`` (it waits for exactly one queued message)."""

    invocation: Invocation
    consumed: PVector[AgentUserMessage]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageBuilt:
    """``runner.build_user_message`` returned ``message`` for a ``BuildUserMessage(text, purpose)``."""

    invocation: Invocation
    purpose: UserMessagePurpose
    message: FrameworkMessage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStepStarted:
    """``RunModel`` began, before calling the model."""

    invocation: Invocation


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
        context_window_exceeded: The model refused the input as longer than its context window
            (``ContextWindowExceededError``; never retryable as it is): compaction may help.
        retry_after_seconds: Whole seconds the model asked to wait before the next attempt (an
            exception with a ``retry_after_seconds``, such as ``ModelRetryAfterError``; rounded up);
            ``None`` when it said nothing.
    """

    invocation: Invocation
    error: str
    retryable: bool
    context_window_exceeded: bool = False
    retry_after_seconds: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionStarted:
    """``CompactHistory(trigger)`` began, before any summarization call."""

    invocation: Invocation
    trigger: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HistorySummarized:
    """``runner.summarize_history`` returned ``text`` with that call's ``usage``, for the compaction
    ``trigger`` of its request."""

    invocation: Invocation
    trigger: str
    text: str
    usage: AgentUsage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizationFailed:
    """``runner.summarize_history`` raised (``retryable`` as ``ModelCallFailed``'s)."""

    invocation: Invocation
    error: str
    retryable: bool


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalWaitStarted:
    """``AwaitToolApproval(tool_call_id)``'s ``wait_for`` runs: what should it wait on?"""

    invocation: Invocation
    tool_call_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalWaitEnded:
    """``AwaitToolApproval(tool_call_id)`` finished waiting. Both endings of the wait, as Dex reported
    them: whether the deadline Timer fired, and the resolutions the wait consumed from the call's
    ``InterruptResolutions`` instance (both can happen in one wait; neither, when it was skipped)."""

    invocation: Invocation
    tool_call_id: str
    timer_fired: bool
    resolutions: PVector[AgentInterruptResolution]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolArgumentsValidated:
    """The runner checked the arguments of an edited approval (``ValidateToolArguments``) against the
    tool's schema: ``problem`` is ``None`` when they are valid, else the validation error. Carries the
    resolution being decided (the request changed no state)."""

    invocation: Invocation
    tool_call_id: str
    resolution: AgentInterruptResolution
    problem: str | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileStarted:
    """``ReconcileToolOutcome(tool_call_id)`` began, before asking the tool policy's ``reconcile``."""

    invocation: Invocation
    tool_call_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcomeReconciled:
    """The tool policy's ``reconcile`` answered for the call: ``status`` ``"succeeded"`` (``text``: the
    output), ``"failed"`` (``text``: the message) or ``"unknown"`` (still unknown)."""

    invocation: Invocation
    tool_call_id: str
    status: str
    text: str | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStepStarted:
    """``CallTool`` or ``CallSingleAttemptTool`` (``step_type``) began, before running anything."""

    invocation: Invocation
    tool_call_id: str
    step_type: StepType


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentWaitStarted:
    """``AwaitSubAgent(tool_call_id)``'s ``wait_for`` runs: which child session should it wait on? (ours)"""

    invocation: Invocation
    tool_call_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentEnded:
    """``AwaitSubAgent(tool_call_id)`` runs: its child session ``child_session_id`` closed with Dex
    status ``child_status`` (``COMPLETED``, ``FAILED``, ``CANCELED``, ...) and, when it completed, its
    ``result``; ``None`` when its wait was skipped (ours)."""

    invocation: Invocation
    tool_call_id: str
    child_session_id: str | None
    child_status: str
    result: SubAgentResult | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatSent:
    """The heartbeat a ``SendHeartbeat`` asked for before ``tool_call_id`` runs is out of the Worker."""

    invocation: Invocation
    tool_call_id: str


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
    recovery_error: RecoveryError | None
    reconcile: bool = False
    """Ours: the call's tool policy has a ``reconcile`` (the shell reads the Flow's policies)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SingleAttemptToolFailed:
    """``RecordToolOutcomeUnknown`` runs: ``CallSingleAttemptTool``'s one attempt failed or crashed."""

    invocation: Invocation
    tool_call_id: str
    recovery_error: RecoveryError | None
    reconcile: bool = False
    """Ours: the call's tool policy has a ``reconcile`` (the shell reads the Flow's policies)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultsArrived:
    """``ResumeTurn(expected)`` consumed ``expected`` ``ToolCallCompleted`` messages."""

    invocation: Invocation
    expected: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelAttemptsExhausted:
    """``RecordTurnFailure`` runs: ``RunModel`` ran out of attempts (errors, crashes or timeouts)."""

    invocation: Invocation
    recovery_error: RecoveryError | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCancelStarted:
    """``CancelTurn`` began: ``cancel_turn`` canceled the running turn's Steps and made its records final."""

    invocation: Invocation


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCancellationStarted:
    """``RecordToolCancellation(tool_call_id)`` began: ``cancel_tool_call`` made the record final."""

    invocation: Invocation
    tool_call_id: str


StepInput: TypeAlias = (
    TurnCancelStarted
    | ToolCancellationStarted
    | ToolArgumentsValidated
    | ReconcileStarted
    | ToolOutcomeReconciled
    | SessionStarted
    | UserMessageArrived
    | UserMessageBuilt
    | ModelStepStarted
    | ModelCallFinished
    | ModelCallFailed
    | ApprovalWaitEnded
    | ToolStepStarted
    | SubAgentEnded
    | HeartbeatSent
    | ToolCallSucceeded
    | ToolExecutionFailed
    | ToolAttemptsExhausted
    | SingleAttemptToolFailed
    | ToolResultsArrived
    | ModelAttemptsExhausted
    | CompactionStarted
    | HistorySummarized
    | SummarizationFailed
)
"""Every input of a Step's ``execute`` (started inputs and follow-ups)."""

WaitInput: TypeAlias = ApprovalWaitStarted | SubAgentWaitStarted
"""Every input of a Step's ``wait_for`` that the core decides (``AwaitToolApproval``'s and
``AwaitSubAgent``'s waits depend on the state; the other waits are the flow table's)."""

SessionInput: TypeAlias = StepInput | WaitInput | RpcCall
"""Everything ``reduce`` accepts, and what ``replay`` folds."""

__all__ = [
    "ToolCancellationStarted",
    "TurnCancelNote",
    "TurnCancelStarted",
    "SubAgentEnded",
    "SubAgentWaitStarted",
    "ReconcileStarted",
    "ToolArgumentsValidated",
    "ToolOutcomeReconciled",
    "CompactionStarted",
    "HistorySummarized",
    "SummarizationFailed",
    "ApprovalWaitEnded",
    "ApprovalWaitStarted",
    "HeartbeatSent",
    "InitialMessage",
    "Invocation",
    "ModelAttemptsExhausted",
    "ModelCallFailed",
    "ModelCallFinished",
    "ModelStepStarted",
    "QueuedMessage",
    "RecoveryError",
    "SessionInput",
    "SessionStarted",
    "SingleAttemptToolFailed",
    "StepInput",
    "ToolAttemptsExhausted",
    "ToolCallSucceeded",
    "ToolExecutionFailed",
    "ToolResultsArrived",
    "ToolStepStarted",
    "TurnFailureNote",
    "UserMessageArrived",
    "UserMessageBuilt",
    "UserMessagePurpose",
    "WaitInput",
]
