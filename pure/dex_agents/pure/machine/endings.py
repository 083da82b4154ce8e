"""Endings: how a transition ends, its last element, in closed unions by the kind of transition (what
it performs before, its writes and events, is in ``effects``). The shell interprets these and nothing else.

| Union | Members | Where |
| --- | --- | --- |
| ``StepEnding`` | a decision (``Decision``: ``GoToSteps``, ``DeadEnd``, ``CompleteSession``), a request (``Request``: ``BuildUserMessage``, ``CallModel``, ``SummarizeHistory``, ``SendHeartbeat``, ``ExecuteDeferredToolCall``, ``ValidateToolArguments``, ``ReconcileToolCall``) or ``FailAttempt`` | a Step transition's last element |
| ``WaitEnding`` | ``WaitForResolution``, ``WaitForChildSession``, ``SkipWait`` | the ending of ``AwaitToolApproval``'s (``ApprovalWait``) or ``AwaitSubAgent``'s ``wait_for`` |
| ``RpcEnding`` | ``AnswerRpc``, ``RefuseRpc`` | an RPC transition's last element |

A request asks the shell for work whose result comes back as a follow-up input, reduced in the same
attempt from the state the request left: ``BuildUserMessage`` -> ``UserMessageBuilt``, ``CallModel`` ->
``ModelCallFinished`` or ``ModelCallFailed``, ``SummarizeHistory`` -> ``HistorySummarized`` or
``SummarizationFailed``, ``SendHeartbeat`` -> ``HeartbeatSent``,
``ExecuteDeferredToolCall`` -> ``ToolCallSucceeded`` or ``ToolExecutionFailed``,
``ValidateToolArguments`` -> ``ToolArgumentsValidated``, ``ReconcileToolCall`` -> ``ToolOutcomeReconciled``.

Invariants:
    * A transition that ends in a request changes no state and writes nothing but events before it;
      its follow-up's transition does the rest.
    * ``FailAttempt`` and ``RefuseRpc`` leave the state unchanged. A rejection has no effects before
      it; only a failed model call (``ModelCallFailed``) writes an event first: the shell raises at
      ``FailAttempt``, Dex keeps the Stream writes of the failed attempt and commits nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.rpc import AgentMessagePage, AgentSnapshot
from dex_agents.pure.values.time_travel import SessionRewind
from dex_agents.pure.machine.step_inputs import UserMessagePurpose
from dex_agents.pure.flow.step_options import StepMovement
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentMessage,
    AgentSessionStartInput,
    AgentToolCall,
    SubAgentResult,
)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class GoToSteps:
    """``go_to_many(*movements)``: start every movement at once (at least one); ``cancel_steps``: Dex
    cancels every running execution of these Step types at the decision's commit (ours: ``CancelTurn``)."""

    movements: PVector[StepMovement]
    cancel_steps: PVector[StepType] = pvector()

    def __post_init__(self) -> None:
        if len(self.movements) == 0:
            raise ValueError("GoToSteps needs at least one movement")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeadEnd:
    """``dead_end()``: end this branch of the Flow; the session keeps running."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteSession:
    """``graceful_complete(result)``: a sub-agent's child session ends its Flow with its one turn's
    result, which its parent's ``AwaitSubAgent`` reads (ours)."""

    result: SubAgentResult


Decision: TypeAlias = GoToSteps | DeadEnd | CompleteSession
"""What a Step's ``execute`` returns to Dex."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class BuildUserMessage:
    """Call ``runner.build_user_message(text)``, then feed back ``UserMessageBuilt(purpose, message)``.

    ``purpose`` says what the message is for (the initial message, a queued message, the turn failure
    note); the follow-up's reducer acts on it."""

    text: str
    purpose: UserMessagePurpose


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CallModel:
    """Call ``runner.run_model_step`` with this view of the running turn, then feed back
    ``ModelCallFinished`` (the checked outcome) or ``ModelCallFailed`` (it raised).

    Attributes:
        turn_id: The running turn.
        messages: The stored messages the model sees, in sequence order (this turn's user message
            included): every one, or those after the history summary's boundary.
        framework_run_state: The turn's run state (``None`` for the turn's first model call).
        tool_calls: The turn's tool call records, in deferral order.
        history_summary: The summary that stands for the messages before ``messages`` (``None``: none).
    """

    turn_id: str
    messages: PVector[AgentMessage]
    framework_run_state: str | None
    tool_calls: PVector[AgentToolCall]
    history_summary: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizeHistory:
    """Call ``runner.summarize_history`` over ``messages`` (after ``previous_summary``), then feed
    back ``HistorySummarized`` or ``SummarizationFailed``."""

    turn_id: str | None
    trigger: str
    previous_summary: str | None
    messages: PVector[AgentMessage]
    instructions: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SendHeartbeat:
    """Send a heartbeat and wait until it is out (the single-attempt guard before ``tool_call_id``
    runs), then feed back ``HeartbeatSent``; when it cannot be proven sent, the attempt fails."""

    tool_call_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExecuteDeferredToolCall:
    """Call ``runner.execute_deferred_tool_call`` with this record, idempotency key and the turn's
    ``framework_run_state`` (that of the ``ToolCallsRequested`` that deferred the call), then feed the
    outcome back as ``ToolCallSucceeded`` or ``ToolExecutionFailed`` (anything else the runner raises
    is raised to Dex, which retries or takes the failure route)."""

    tool_call: AgentToolCall
    idempotency_key: str
    framework_run_state: str | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ValidateToolArguments:
    """Ask the runner whether ``arguments`` (an approver's edit) fit ``tool_name``'s schema
    (``validate_tool_arguments``; a runner without it accepts them), then feed back
    ``ToolArgumentsValidated`` with ``resolution``."""

    tool_call_id: str
    tool_name: str
    arguments: str
    resolution: AgentInterruptResolution


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileToolCall:
    """Ask the call's tool policy's ``reconcile`` what became of it (its outcome is unknown after
    ``error``), then feed back ``ToolOutcomeReconciled``; what it raises fails the attempt (retried,
    then ``RecordToolOutcomeUnknown``)."""

    tool_call: AgentToolCall
    idempotency_key: str
    error: str


Request: TypeAlias = (
    BuildUserMessage
    | CallModel
    | SendHeartbeat
    | ExecuteDeferredToolCall
    | SummarizeHistory
    | ValidateToolArguments
    | ReconcileToolCall
)
"""Work the shell performs and reports back as a follow-up input, in the same attempt."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class FailAttempt:
    """Raise so that Dex fails this attempt (retry, then the failure route). Nothing staged is committed
    (events written before it stay in the Stream). ``error`` says what was wrong (a runner defect, a
    failed model call, an input that does not fit the state). ``retry_after_seconds``: Dex waits that
    many seconds before the next attempt instead of its backoff (``dex.retry_after``)."""

    error: str
    retry_after_seconds: int | None = None


StepEnding: TypeAlias = Decision | Request | FailAttempt
"""The last element of a Step transition."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WaitForResolution:
    """Wait for one message on ``InterruptResolutions[interrupt_id]``, or a Timer of ``timer_seconds``
    (whole seconds, rounded up) when one is set; the Timer comes first in Dex's canonical order."""

    interrupt_id: str
    timer_seconds: int | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SkipWait:
    """Nothing to wait for (``Wait.skip_immediately``); execute then sees no Timer and no resolution."""


ApprovalWait: TypeAlias = WaitForResolution | SkipWait
"""What ``AwaitToolApproval``'s ``wait_for`` waits on."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WaitForChildSession:
    """Start (or find again) the call's child session, a Dex SubFlow of Flow type ``flow_type`` with
    ``start_input``, and wait for it to close (ours: ``AwaitSubAgent``'s ``wait_for``)."""

    flow_type: str
    start_input: AgentSessionStartInput


WaitEnding: TypeAlias = WaitForResolution | WaitForChildSession | SkipWait
"""The ending of a ``WaitTransition``: ``AwaitToolApproval``'s or ``AwaitSubAgent``'s wait."""


RpcOutput: TypeAlias = bool | AgentSnapshot | AgentMessagePage | SessionRewind
"""``send_user_message`` and ``resolve_interrupt`` answer ``bool``; the readers their records."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerRpc:
    """Return ``output`` from the RPC handler (with the writes of the same transition).

    ``cancel_steps``: Dex cancels every running execution of these Step types before ``next_steps``
    start (``RPCResult.with_canceling_steps``); ``next_steps``: Steps the RPC starts. Both commit with
    the writes (ours: ``cancel_turn`` and ``cancel_tool_call``)."""

    output: RpcOutput
    cancel_steps: PVector[StepType] = pvector()
    next_steps: PVector[StepMovement] = pvector()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RefuseRpc:
    """Fail the RPC: its caller gets an error with this text and nothing is written (text that cannot
    be encoded)."""

    error: str


RpcEnding: TypeAlias = AnswerRpc | RefuseRpc
"""The last element of an RPC transition."""


__all__ = [
    "AnswerRpc",
    "ApprovalWait",
    "BuildUserMessage",
    "CallModel",
    "CompleteSession",
    "DeadEnd",
    "Decision",
    "ExecuteDeferredToolCall",
    "FailAttempt",
    "GoToSteps",
    "ReconcileToolCall",
    "RefuseRpc",
    "Request",
    "RpcEnding",
    "RpcOutput",
    "SendHeartbeat",
    "SkipWait",
    "StepEnding",
    "SummarizeHistory",
    "ValidateToolArguments",
    "WaitEnding",
    "WaitForChildSession",
    "WaitForResolution",
]
