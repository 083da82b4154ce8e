"""Rebuild the inputs the reducers saw from Dex's history of a session (the export's ``steps``).

Dex's history holds, for every committed Step method and state-changing RPC, in commit order: the
Step's input, the messages its wait consumed, whether its Timer fired, the failure that routed it
(the failed Step's own history entry), its writes, and the ``dex_agents.invocation`` record of the
Worker clock and the Flow's options. That is a started input per invocation: ``SessionStarted`` from
the start input, ``UserMessageArrived`` from the consumed message, ``ToolStepStarted`` from the tool
call ID, ``ToolAttemptsExhausted`` with the recovery error, an RPC call from its input, ... The
reconstruction reduces it, as the Worker did, and each request the transition ends in is answered from
what the Step wrote (``history_answers``), until a decision.

Invariants:
    * Inputs come in commit order, each with the index of the step it belongs to. A Step method that
      failed for good, an RPC that wrote nothing (a query-only one is never in history) and a fixed
      wait (``AwaitUserMessage``, ``ResumeTurn``) contribute none: they committed nothing the reducers
      decided.
    * Each input's clock is its invocation record's (the Worker clock, exact); without a record, the
      server's event time stands in, and ``clock`` says which.
    * A step that cannot be reconstructed (a write it must have made is missing, an unknown Step type
      or RPC) gives no input and a note naming it; the next steps go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar, assert_never, final

from pyrsistent import pvector
from pyrsistent.typing import PVector
from returns.pipeline import is_successful

from dex_agents.pure.machine.deadlines import parse_instant
from dex_agents.pure.machine.endings import Request
from dex_agents.pure.offline.export_document import METHOD_EXECUTE, METHOD_RPC, METHOD_WAIT_FOR, OUTCOME_FAILED, HistoryStep
from dex_agents.pure.offline.history_answers import answer_request
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.persistence import ChannelMapName, ChannelName, RpcName, StepType
from dex_agents.pure.machine.reducers import reduce
from dex_agents.pure.machine.rpc_calls import (
    CancelToolCallCalled,
    CancelTurnCalled,
    ExtendInterruptDeadlineCalled,
    ResolveInterruptCalled,
    ResolveToolOutcomeCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
    SessionRewindRecorded,
)
from dex_agents.pure.values.rpc import (
    CancelToolCallInput,
    CancelTurnInput,
    ExtendInterruptDeadlineInput,
    ResolveToolOutcomeInput,
    ResolveInterruptInput,
    SendUserMessageInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelStarted,
    ReconcileStarted,
    CompactionStarted,
    ApprovalWaitEnded,
    ApprovalWaitStarted,
    Invocation,
    ModelAttemptsExhausted,
    ModelStepStarted,
    RecoveryError,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    SubAgentEnded,
    SubAgentWaitStarted,
    ToolAttemptsExhausted,
    ToolResultsArrived,
    ToolStepStarted,
    UserMessageArrived,
)
from dex_agents.pure.machine.reducers import SKIPPED, sub_agent_result_of
from dex_agents.pure.offline.stored_values import StoredKey, decode_stored
from dex_agents.pure.values.time_travel import RecordSessionRewindInput
from dex_agents.pure.machine.transition import StepTransition
from dex_agents.pure.values.session import AgentInterruptResolution, AgentSessionStartInput, AgentUserMessage
from dex_agents.pure.wire import JSON_VALUE_TYPE, from_json_data, record_type, to_json_data

T = TypeVar("T")

CLOCK_RECORDED: Final = "recorded"
CLOCK_HISTORY: Final = "history"
CLOCK_MIXED: Final = "mixed"
CLOCK_NONE: Final = "none"

_TOOL_STEPS: Final = frozenset({StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL})


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReconstructedInput:
    """One input and the index of its step."""

    step: int
    input: SessionInput


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Reconstructed:
    """The inputs rebuilt from a history, where their clocks came from, and what could not be known."""

    inputs: PVector[ReconstructedInput]
    clock: str
    notes: PVector[str]


class _Unreconstructable(Exception):
    """A step whose inputs cannot be rebuilt (its message says why)."""


def _decoded(value: JsonValue, cls: type[T], what: str) -> T:
    decoded = from_json_data(to_json_data(value, JSON_VALUE_TYPE), record_type(cls))
    if not is_successful(decoded):
        raise _Unreconstructable(f"its {what} is not a {cls.__name__}: {decoded.failure().message}")
    return decoded.unwrap()


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _Unreconstructable(f"its {what} is not a string")
    return value


def _consumed(step: HistoryStep, name: str, cls: type[T]) -> PVector[T]:
    return pvector(_decoded(value, cls, f"consumed {name} message")
                   for messages in step.consumed if messages.name == name for value in messages.values)


def _recovery(step: HistoryStep, steps: Sequence[HistoryStep]) -> RecoveryError | None:
    failed = next((s for s in steps if s.step_execution_id == step.from_step_execution_id
                   and s.outcome == OUTCOME_FAILED and s.method == METHOD_EXECUTE and s.failure is not None), None)
    if failed is None or failed.failure is None:
        return None
    return RecoveryError(detail=failed.failure.detail, error_type=failed.failure.error_type)


def _started(step: HistoryStep, steps: Sequence[HistoryStep], invocation: Callable[[], Invocation]) -> SessionInput | None:
    """The input an invocation began with (``None``: one the core does not decide); ``invocation``
    reads the input's clock (an RPC other than ``resolve_interrupt`` reads none)."""
    if step.method == METHOD_RPC:
        if not step.writes and not step.published:
            return None  # an RPC that changed nothing (a resend, a late resolution): no input can matter
        return _rpc_call(step, lambda: invocation().now_ms)
    step_type = StepType(step.step_type) if step.step_type in set(StepType) else None
    if step_type is None:
        raise _Unreconstructable(f"{step.step_type!r} is not a session Step type")
    if step.method == METHOD_WAIT_FOR:
        if step_type is StepType.AWAIT_TOOL_APPROVAL:
            return ApprovalWaitStarted(invocation=invocation(), tool_call_id=_text(step.input, "tool call ID"))
        if step_type is StepType.AWAIT_SUB_AGENT:
            return SubAgentWaitStarted(invocation=invocation(), tool_call_id=_text(step.input, "tool call ID"))
        return None
    return _execute_started(step, step_type, steps, invocation())


def _execute_started(step: HistoryStep, step_type: StepType, steps: Sequence[HistoryStep],
                     invocation: Invocation) -> StepInput:
    """The started input of a Step's ``execute``."""
    match step_type:
        case StepType.START_AGENT_SESSION:
            return SessionStarted(invocation=invocation, start_input=_decoded(step.input, AgentSessionStartInput,
                                                                               "start input"))
        case StepType.AWAIT_USER_MESSAGE:
            return UserMessageArrived(invocation=invocation,
                                      consumed=_consumed(step, ChannelName.QUEUED_USER_MESSAGES, AgentUserMessage))
        case StepType.RUN_MODEL:
            return ModelStepStarted(invocation=invocation)
        case StepType.AWAIT_TOOL_APPROVAL:
            resolutions = _consumed(step, ChannelMapName.INTERRUPT_RESOLUTIONS, AgentInterruptResolution)
            return ApprovalWaitEnded(invocation=invocation, tool_call_id=_text(step.input, "tool call ID"),
                                     timer_fired=step.timer_fired, resolutions=resolutions)
        case StepType.CALL_TOOL | StepType.CALL_SINGLE_ATTEMPT_TOOL:
            return ToolStepStarted(invocation=invocation, tool_call_id=_text(step.input, "tool call ID"),
                                   step_type=step_type)
        case StepType.RECORD_TOOL_FAILURE:
            return ToolAttemptsExhausted(invocation=invocation, tool_call_id=_text(step.input, "tool call ID"),
                                         recovery_error=_recovery(step, steps), reconcile=_reconciles(step))
        case StepType.RECORD_TOOL_OUTCOME_UNKNOWN:
            return SingleAttemptToolFailed(invocation=invocation, tool_call_id=_text(step.input, "tool call ID"),
                                           recovery_error=_recovery(step, steps), reconcile=_reconciles(step))
        case StepType.RECONCILE_TOOL_OUTCOME:
            return ReconcileStarted(invocation=invocation, tool_call_id=_text(step.input, "tool call ID"))
        case StepType.RESUME_TURN:
            if not isinstance(step.input, int) or isinstance(step.input, bool):
                raise _Unreconstructable("its input is not a result count")
            return ToolResultsArrived(invocation=invocation, expected=step.input)
        case StepType.RECORD_TURN_FAILURE:
            return ModelAttemptsExhausted(invocation=invocation, recovery_error=_recovery(step, steps))
        case StepType.COMPACT_HISTORY:
            return CompactionStarted(invocation=invocation, trigger=_text(step.input, "compaction trigger"))
        case StepType.CANCEL_TURN:
            return TurnCancelStarted(invocation=invocation)
        case StepType.RECORD_TOOL_CANCELLATION:
            return ToolCancellationStarted(invocation=invocation, tool_call_id=_text(step.input, "tool call ID"))
        case StepType.AWAIT_SUB_AGENT:
            return _sub_agent_ended(step, invocation)
        case _:
            assert_never(step_type)


def _sub_agent_ended(step: HistoryStep, invocation: Invocation) -> SubAgentEnded:
    """``AwaitSubAgent``'s started input: its wait's one SubFlow result (none: the wait was skipped);
    the child's ID is Dex's (``SubFlow:<session>-<step execution>-0``)."""
    tool_call_id = _text(step.input, "tool call ID")
    if not step.sub_flows:
        return SubAgentEnded(invocation=invocation, tool_call_id=tool_call_id, child_session_id=None,
                             child_status=SKIPPED, result=None)
    outcome = step.sub_flows[0]
    output = outcome.output
    result = sub_agent_result_of(output) if outcome.status == "COMPLETED" and isinstance(output, str) else None
    return SubAgentEnded(invocation=invocation, tool_call_id=tool_call_id,
                         child_session_id=f"SubFlow:{invocation.flow_id}-{invocation.step_execution_id}-0",
                         child_status=outcome.status, result=result)


def _reconciles(step: HistoryStep) -> bool:
    """Whether a failure route's call had a ``reconcile``: the route moved to ``ReconcileToolOutcome``
    (a route that recorded the call final did not need to know)."""
    return StepType.RECONCILE_TOOL_OUTCOME.value in step.next_steps


def _rpc_call(step: HistoryStep, now_ms: Callable[[], int]) -> SessionInput:
    match step.rpc_name:
        case RpcName.SEND_USER_MESSAGE:
            return SendUserMessageCalled(input=_decoded(step.input, SendUserMessageInput, "input"))
        case RpcName.SEND_USER_MESSAGE_ONCE:
            return SendUserMessageOnceCalled(input=_decoded(step.input, SendUserMessageOnceInput, "input"))
        case RpcName.RESOLVE_INTERRUPT:
            return ResolveInterruptCalled(input=_decoded(step.input, ResolveInterruptInput, "input"), now_ms=now_ms())
        case RpcName.EXTEND_INTERRUPT_DEADLINE:
            return ExtendInterruptDeadlineCalled(input=_decoded(step.input, ExtendInterruptDeadlineInput, "input"),
                                                 now_ms=now_ms())
        case RpcName.RECORD_SESSION_REWIND:
            return SessionRewindRecorded(input=_decoded(step.input, RecordSessionRewindInput, "input"), now_ms=now_ms())
        case RpcName.CANCEL_TURN:
            return CancelTurnCalled(input=_decoded(step.input, CancelTurnInput, "input"), now_ms=now_ms())
        case RpcName.CANCEL_TOOL_CALL:
            return CancelToolCallCalled(input=_decoded(step.input, CancelToolCallInput, "input"), now_ms=now_ms())
        case RpcName.RESOLVE_TOOL_OUTCOME:
            return ResolveToolOutcomeCalled(input=_decoded(step.input, ResolveToolOutcomeInput, "input"),
                                            now_ms=now_ms())
        case _:
            raise _Unreconstructable(f"RPC {step.rpc_name!r} is not one that changes a session")


def _typed_writes(step: HistoryStep) -> dict[StoredKey, object]:
    typed: dict[StoredKey, object] = {}
    for write in step.writes:
        if write.value is None:
            continue
        decoded = decode_stored(write.name, write.value)
        if not is_successful(decoded):
            raise _Unreconstructable(f"its write of {write.name}: {decoded.failure()}")
        typed[(write.name, write.instance)] = decoded.unwrap()
    return typed


@final
class _Clocks:
    """Each input's clock: its invocation record's, else the step's event time (counted for ``clock``)."""

    def __init__(self) -> None:
        self.recorded = 0
        self.history = 0

    def of(self, step: HistoryStep, position: int) -> int:
        if step.recorded is not None and position < len(step.recorded.now_ms):
            self.recorded += 1
            return step.recorded.now_ms[position]
        self.history += 1
        try:
            return 0 if step.time is None else parse_instant(step.time)
        except ValueError:
            return 0

    @property
    def source(self) -> str:
        if self.recorded and self.history:
            return CLOCK_MIXED
        return CLOCK_RECORDED if self.recorded else CLOCK_HISTORY if self.history else CLOCK_NONE


def _label(step: HistoryStep) -> str:
    return f"rpc {step.rpc_name}" if step.method == METHOD_RPC else f"{step.step_execution_id} ({step.method})"


def reconstruct_inputs(session_id: str, steps: Sequence[HistoryStep]) -> Reconstructed:
    """The inputs the reducers saw in the session ``session_id`` whose history is ``steps`` (see the
    module docstring)."""
    state = SessionState.initial()
    config = SessionConfig()
    clocks = _Clocks()
    inputs: list[ReconstructedInput] = []
    notes: list[str] = []
    for index, step in enumerate(steps):
        if step.outcome == OUTCOME_FAILED:
            continue
        if step.recorded is not None:
            config = step.recorded.config()
        kept = len(inputs)
        try:
            state = _reduce_step(session_id, steps, index, state, config, clocks, inputs, notes)
        except _Unreconstructable as problem:
            del inputs[kept:]  # the step gives no input at all: a replay then reports its writes missing
            notes.append(f"step {index} {_label(step)}: cannot rebuild its inputs: {problem}")
    if clocks.history:
        notes.append(f"{clocks.history} input(s) carry the server's event time as their clock (no "
                     f"dex_agents.invocation record): an approval deadline or a late resolution may differ")
    return Reconstructed(inputs=pvector(inputs), clock=clocks.source, notes=pvector(notes))


def _reduce_step(session_id: str, steps: Sequence[HistoryStep], index: int, state: SessionState,
                 config: SessionConfig, clocks: _Clocks, inputs: list[ReconstructedInput],
                 notes: list[str]) -> SessionState:
    """Reduce one step's inputs from ``state``, appending them; returns the state after them."""
    step = steps[index]
    position = 0

    def invocation() -> Invocation:
        return Invocation(flow_id=session_id, step_execution_id=step.step_execution_id or "",
                          attempt=step.attempt, now_ms=clocks.of(step, position))

    current: SessionInput | None = _started(step, steps, invocation)
    writes = _typed_writes(step) if current is not None else {}
    while current is not None:
        inputs.append(ReconstructedInput(step=index, input=current))
        transition = reduce(state, config, current)
        if transition.is_rejection:
            notes.append(f"step {index} {_label(step)}: the reducers reject {type(current).__name__} "
                         f"(the live attempt committed)")
            return state
        state = transition.state
        if not isinstance(transition, StepTransition) or not isinstance(transition.ending, Request):
            return state
        position += 1
        answered = answer_request(transition.ending, state, config, writes, invocation())
        if isinstance(answered, str):
            raise _Unreconstructable(answered)
        if answered.note is not None:
            notes.append(answered.note)
        current = answered.input
    return state


__all__ = [
    "CLOCK_HISTORY",
    "CLOCK_MIXED",
    "CLOCK_NONE",
    "CLOCK_RECORDED",
    "Reconstructed",
    "ReconstructedInput",
    "reconstruct_inputs",
]
