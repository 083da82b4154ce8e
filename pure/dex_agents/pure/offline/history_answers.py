"""What a committed Step's requests were answered with, read back from what the Step wrote.

A Step that asked the runner for something (a user message, a model call, a tool run) committed the
answer's consequences in the same commit; the reducers store those answers verbatim, so the answer can
be read back from the writes (``reconstruct`` then reduces it as the follow-up input it was):

| Request | Answer, from the Step's writes |
| --- | --- |
| ``BuildUserMessage`` | the message it stored next (``AgentMessages/<message_count + 1>``) |
| ``CallModel`` | new tool call records and ``FrameworkRunState``: ``ToolCallsRequested``; a completed turn: ``TurnCompleted`` with the messages it appended; a turn failed in ``RunModel``: the model call cap's ``ToolCallsRequested`` or a non-retryable ``ModelCallFailed`` (its ``last_turn_error``); usage: the growth of ``AgentUsage`` |
| ``SendHeartbeat`` | ``HeartbeatSent`` |
| ``ExecuteDeferredToolCall`` | the call's final record: ``succeeded`` with its output, ``failed`` with its error |
| ``SummarizeHistory`` | the ``HistorySummary`` it stored: ``HistorySummarized`` with its text; usage: the growth of ``AgentUsage`` |
| ``ValidateToolArguments`` | the call stored ``pending``: valid; else refused (the error text is only in the event: ``REFUSED_EDIT_NOTE``) |
| ``ReconcileToolCall`` | the call's final record: ``succeeded`` / ``failed`` with its output or error, else still unknown |

A model call refused as longer than the context window that moved to ``CompactHistory`` wrote nothing
but its event: its answer is a ``ModelCallFailed`` whose error text is not kept (``CONTEXT_WINDOW_NOTE``).

What a reconstruction cannot know (``Answered.note`` says so where it applies): the tool calls a
model call asked for when it reached ``max_model_calls_per_turn`` (none was stored; one placeholder call
stands in), and the raised exception of a failed model call or tool beyond its text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeVar, final

from pyrsistent import pvector

from dex_agents.pure.machine.endings import (
    BuildUserMessage,
    CallModel,
    ExecuteDeferredToolCall,
    Request,
    SendHeartbeat,
    ReconcileToolCall,
    SummarizeHistory,
    ValidateToolArguments,
)
from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.values.persistence import AttributeName, MapName
from dex_agents.pure.machine.texts import model_call_cap_error
from dex_agents.pure.values.runner import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    ToolArgumentsValidated,
    ToolOutcomeReconciled,
    HeartbeatSent,
    HistorySummarized,
    Invocation,
    ModelCallFailed,
    ModelCallFinished,
    StepInput,
    ToolCallSucceeded,
    ToolExecutionFailed,
    UserMessageBuilt,
)
from dex_agents.pure.offline.stored_values import StoredKey
from dex_agents.pure.values.session import (
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    FrameworkMessage,
    HistorySummary,
    ToolCallStatus,
    ToolEffect,
)

T = TypeVar("T")

CONTEXT_WINDOW_NOTE: Final = "the model refused the input as longer than its context window"
"""The error text a reconstruction gives a model call that moved to ``CompactHistory``."""

PLACEHOLDER_CALL_ID: Final = "dex-agents-unknown-call"
"""The ID of the call that stands in for those a capped model call asked for (never stored)."""
PLACEHOLDER_RUN_STATE: Final = "dex-agents-unknown-run-state"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    """A request's answer as a follow-up input, and what of it could not be known (``None``: all)."""

    input: StepInput
    note: str | None = None


def _written(writes: Mapping[StoredKey, object], name: str, instance: str | None, kind: type[T]) -> T | None:
    value = writes.get((name, instance))
    return value if isinstance(value, kind) else None


def _framework_message(message: AgentMessage) -> FrameworkMessage:
    return FrameworkMessage(role=message.role, text=message.text, tool_call_id=message.tool_call_id,
                            tool_name=message.tool_name, tool_arguments=message.tool_arguments,
                            tool_output=message.tool_output, framework_item=message.framework_item)


def _usage_growth(writes: Mapping[StoredKey, object], before: AgentUsage) -> AgentUsage:
    after = _written(writes, AttributeName.AGENT_USAGE, None, AgentUsage)
    if after is None:
        return AgentUsage()
    return AgentUsage(requests=after.requests - before.requests,
                      input_tokens=after.input_tokens - before.input_tokens,
                      output_tokens=after.output_tokens - before.output_tokens,
                      cache_read_tokens=after.cache_read_tokens - before.cache_read_tokens,
                      cache_write_tokens=after.cache_write_tokens - before.cache_write_tokens)


def _message_count(state: SessionState) -> int:
    return 0 if state.agent_state is None else state.agent_state.message_count


def _built_message(request: BuildUserMessage, state: SessionState, writes: Mapping[StoredKey, object],
                   invocation: Invocation) -> Answered | str:
    key = message_sequence_key(_message_count(state) + 1)
    message = _written(writes, MapName.AGENT_MESSAGES, key, AgentMessage)
    if message is None:
        return f"it asked for a user message but stored no {MapName.AGENT_MESSAGES}/{key}"
    return Answered(input=UserMessageBuilt(invocation=invocation, purpose=request.purpose,
                                           message=_framework_message(message)))


def _deferred(record: AgentToolCall) -> DeferredToolCall:
    return DeferredToolCall(tool_call_id=record.tool_call_id, tool_name=record.tool_name, arguments=record.arguments,
                            policy=ResolvedToolPolicy(effect=record.effect, requires_approval=record.requires_approval,
                                                      sub_agent=record.sub_agent))


def _placeholder_call(state: SessionState) -> DeferredToolCall:
    call_id = PLACEHOLDER_CALL_ID
    while call_id in state.tool_calls:
        call_id += "-"
    return DeferredToolCall(tool_call_id=call_id, tool_name="unknown", arguments="{}",
                            policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False))


def _model_answer(state: SessionState, config: SessionConfig, writes: Mapping[StoredKey, object],
                  invocation: Invocation) -> Answered | str:
    usage = _usage_growth(writes, state.usage)
    records = [value for (name, key), value in writes.items()
               if name == MapName.AGENT_TOOL_CALLS and isinstance(value, AgentToolCall) and key not in state.tool_calls]
    run_state = _written(writes, AttributeName.FRAMEWORK_RUN_STATE, None, str)
    if records and run_state is not None:
        calls = pvector(_deferred(record) for record in sorted(records, key=lambda record: record.deferral_order))
        outcome = ToolCallsRequested(framework_run_state=run_state, tool_calls=calls, usage=usage)
        return Answered(input=ModelCallFinished(invocation=invocation, outcome=outcome))
    before, after = state.agent_state, _written(writes, AttributeName.AGENT_STATE, None, AgentState)
    if not writes:
        return Answered(input=ModelCallFailed(invocation=invocation, error=CONTEXT_WINDOW_NOTE, retryable=False,
                                              context_window_exceeded=True))
    if before is None or after is None:
        return "it ran a model call but stored neither tool calls nor the turn's end"
    if after.completed_turn_count > before.completed_turn_count:
        appended = [value for (name, _), value in writes.items()
                    if name == MapName.AGENT_MESSAGES and isinstance(value, AgentMessage)
                    and value.sequence > before.message_count]
        messages = pvector(_framework_message(m) for m in sorted(appended, key=lambda message: message.sequence))
        return Answered(input=ModelCallFinished(invocation=invocation,
                                                outcome=TurnCompleted(new_messages=messages, usage=usage)))
    if after.failed_turn_count > before.failed_turn_count and after.last_turn_error is not None:
        if after.last_turn_error == model_call_cap_error(config.max_model_calls_per_turn):
            capped = ToolCallsRequested(framework_run_state=PLACEHOLDER_RUN_STATE,
                                        tool_calls=pvector([_placeholder_call(state)]), usage=usage)
            note = (f"{invocation.step_execution_id}: the model call reached the cap of "
                    f"{config.max_model_calls_per_turn} model calls; the tool calls it asked for were not stored, "
                    f"so one placeholder call ({PLACEHOLDER_CALL_ID}) stands in for them")
            return Answered(input=ModelCallFinished(invocation=invocation, outcome=capped), note=note)
        return Answered(input=ModelCallFailed(invocation=invocation, error=after.last_turn_error, retryable=False))
    return "it ran a model call but its writes show no outcome"


def _tool_answer(request: ExecuteDeferredToolCall, writes: Mapping[StoredKey, object],
                 invocation: Invocation) -> Answered | str:
    call_id = request.tool_call.tool_call_id
    record = _written(writes, MapName.AGENT_TOOL_CALLS, call_id, AgentToolCall)
    if record is not None and record.status is ToolCallStatus.SUCCEEDED:
        return Answered(input=ToolCallSucceeded(invocation=invocation, tool_call_id=call_id, output=record.output or ""))
    if record is not None and record.status is ToolCallStatus.FAILED:
        return Answered(input=ToolExecutionFailed(invocation=invocation, tool_call_id=call_id, error=record.error or ""))
    return f"it ran tool call {call_id!r} but stored no succeeded or failed record of it"


def _summary_answer(request: SummarizeHistory, state: SessionState, writes: Mapping[StoredKey, object],
                    invocation: Invocation) -> Answered | str:
    summary = _written(writes, AttributeName.HISTORY_SUMMARY, None, HistorySummary)
    if summary is None:
        return "it ran a summarization but stored no history summary"
    return Answered(input=HistorySummarized(invocation=invocation, trigger=request.trigger, text=summary.text,
                                            usage=_usage_growth(writes, state.usage)))


def answer_request(request: Request, state: SessionState, config: SessionConfig, writes: Mapping[StoredKey, object],
                   invocation: Invocation) -> Answered | str:
    """The follow-up input that answered ``request`` in a Step that committed ``writes`` (typed, by key),
    reduced from ``state``; or why the writes cannot tell."""
    match request:
        case BuildUserMessage():
            return _built_message(request, state, writes, invocation)
        case CallModel():
            return _model_answer(state, config, writes, invocation)
        case SendHeartbeat(tool_call_id=tool_call_id):
            return Answered(input=HeartbeatSent(invocation=invocation, tool_call_id=tool_call_id))
        case ExecuteDeferredToolCall():
            return _tool_answer(request, writes, invocation)
        case SummarizeHistory():
            return _summary_answer(request, state, writes, invocation)
        case ValidateToolArguments():
            return _validation_answer(request, writes, invocation)
        case ReconcileToolCall():
            return _reconcile_answer(request, writes, invocation)


def _validation_answer(request: ValidateToolArguments, writes: Mapping[StoredKey, object],
                       invocation: Invocation) -> Answered:
    """Valid when the Step stored the call approved (``pending``); else refused, whose error text only
    the ``dex_agents.approval_refused`` event kept."""
    record = _written(writes, MapName.AGENT_TOOL_CALLS, request.tool_call_id, AgentToolCall)
    valid = record is not None and record.status is ToolCallStatus.PENDING
    problem = None if valid else REFUSED_EDIT_NOTE
    return Answered(input=ToolArgumentsValidated(invocation=invocation, tool_call_id=request.tool_call_id,
                                                 resolution=request.resolution, problem=problem),
                    note=None if valid else REFUSED_EDIT_NOTE)


def _reconcile_answer(request: ReconcileToolCall, writes: Mapping[StoredKey, object],
                      invocation: Invocation) -> Answered | str:
    call_id = request.tool_call.tool_call_id
    record = _written(writes, MapName.AGENT_TOOL_CALLS, call_id, AgentToolCall)
    if record is None or not record.status.is_final:
        return f"it reconciled tool call {call_id!r} but stored no final record of it"
    status = {ToolCallStatus.SUCCEEDED: "succeeded", ToolCallStatus.FAILED: "failed"}.get(record.status, "unknown")
    text = record.output if status == "succeeded" else record.error if status == "failed" else None
    return Answered(input=ToolOutcomeReconciled(invocation=invocation, tool_call_id=call_id, status=status, text=text))


REFUSED_EDIT_NOTE: Final = "an edited approval was refused by the tool's schema; the error is in the event"


__all__ = ["REFUSED_EDIT_NOTE", "CONTEXT_WINDOW_NOTE", "PLACEHOLDER_CALL_ID", "Answered", "answer_request"]
