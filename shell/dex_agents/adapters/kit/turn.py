"""The turn template: the algorithm of a session's model calls and tool calls, written once.

A framework supplies a ``TurnBinding``: its message type ``M`` and the few things only it knows (how
a message is stored and read back, one model call, the calls of a response, the messages answering a
round of tool calls, one tool run, one summarization call, and which of its errors no retry can fix or
say the context window is exceeded). ``TurnRunner(binding)`` is then the session runner, and
``create_session_flow`` its Flow factory. The template owns everything else:

* the binding's protocol and values live in ``kit.binding``;
* the run-state envelope (``kit.run_state``; adapter ``binding.adapter``, version
  ``binding.run_state_version``), whose state is ``{"messages": <the turn's messages so far, ending
  with the response that called tools>, "usage": <the turn's usage so far>, "contexts": {call ID:
  <per-call framework context>}}``;
* resume: one answer per call of the latest response, in the model's order: the round's final
  records (``latest_round_results``) for the deferred calls, ``OUTPUT_NOT_PROCESSED`` for the rest;
* the defer-every-call rule: a response with any deferred call defers them all and completes nothing;
* tool policies: ``turn.resolve_tool_policy`` over the framework's effect, approval forced when the
  framework itself asks for it (a call of an unknown tool is the binding's ``READ``: it fails at once);
* the history memo (``kit.history``), with the compaction summary first when the session compacted;
* the error mapping: the binding's context-window errors become ``ContextWindowExceededError``, its
  final errors ``NonRetryableModelError``, a run state or stored message it cannot read (decoding is
  deterministic) ``NonRetryableModelError``; everything else is retried by ``RunModel``;
* an approver's edited arguments checked by the framework's own schema of the tool
  (``validate_tool_arguments``: ``kit.arguments`` over the binding's ``arguments_validator``);
* compaction's summarization (``summarize_history``) over the transcript ``pure.compaction`` renders.

Invariants: a model step makes exactly the one model call of ``binding.call_model`` and runs no tool;
the messages a completed turn stores are the turn's messages so far plus what the last call produced,
in order; nothing is stored for a call that raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Generic, TypeVar, Unpack, final

from pyrsistent import pvector

from dex_agents.adapters.kit.arguments import arguments_problem
from dex_agents.adapters.kit.binding import OUTPUT_NOT_PROCESSED as OUTPUT_NOT_PROCESSED
from dex_agents.adapters.kit.binding import CallRef as CallRef
from dex_agents.adapters.kit.binding import ModelAnswer as ModelAnswer
from dex_agents.adapters.kit.binding import ModelCall as ModelCall
from dex_agents.adapters.kit.binding import RequestedCall as RequestedCall
from dex_agents.adapters.kit.binding import RoundAnswer as RoundAnswer
from dex_agents.adapters.kit.binding import ToolRun as ToolRun
from dex_agents.adapters.kit.binding import TurnBinding as TurnBinding
from dex_agents.adapters.kit.binding import decode_turn_state, usage_from_json, usage_to_json
from dex_agents.adapters.kit.history import HistoryMemo
from dex_agents.adapters.kit.messages import user_message
from dex_agents.adapters.kit.options import SessionFlowOptions
from dex_agents.adapters.kit.run_state import RunStateError, encode_run_state
from dex_agents.adapters.kit.tool_results import ToolOutcome, latest_round_results
from dex_agents.pure.machine.compaction import render_transcript, summary_message_text
from dex_agents.pure.values.runner import (
    AgentTurnOutcome,
    DeferredToolCall,
    ResolvedToolPolicy,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.values.session import AgentMessage, AgentUsage, FrameworkMessage, MessageRole
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import (
    AgentTurnContext,
    ContextWindowExceededError,
    DeferredToolExecution,
    HistorySummaryRequest,
    HistorySummaryResult,
    NonRetryableModelError,
    ToolExecutionResult,
)

M = TypeVar("M")


@final
class TurnRunner(Generic[M]):
    """The session runner of a ``TurnBinding`` (an ``AgentFrameworkRunner`` that also summarizes;
    keeps no state between calls but the history memo)."""

    def __init__(self, binding: TurnBinding[M]) -> None:
        self.binding = binding
        self._memo: HistoryMemo[M] = HistoryMemo(binding.parse_item, binding.copy_message)

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text, self.binding.user_item(text))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        try:
            return await self._model_step(turn)
        except NonRetryableModelError:
            raise
        except Exception as error:
            raise self._mapped(error) from error

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return ToolExecutionResult(output=await self.binding.run_tool(ToolRun(call=call, binding=self.binding)))

    async def validate_tool_arguments(self, tool_name: str, arguments: str) -> str | None:
        """``None`` when ``arguments`` (an approver's edit) validate against the framework's schema of
        ``tool_name``; else the framework's validation error (the approval is refused, nothing runs)."""
        return arguments_problem(tool_name, await self.binding.arguments_validator(tool_name), arguments)

    async def summarize_history(self, request: HistorySummaryRequest) -> HistorySummaryResult:
        transcript = render_transcript(request.previous_summary, request.messages)
        try:
            return await self.binding.summarize(request.instructions, transcript, request.events)
        except NonRetryableModelError:
            raise
        except Exception as error:
            raise self._mapped(error) from error

    def _mapped(self, error: Exception) -> Exception:
        """``error`` as the session reads it (see the module docstring)."""
        described = f"{type(error).__name__}: {error}"
        if self.binding.is_context_window_exceeded(error):
            return ContextWindowExceededError(described)
        if self.binding.is_non_retryable(error):
            return NonRetryableModelError(described)
        return error

    def history(self, turn: AgentTurnContext) -> list[M]:
        """The stored messages ``turn`` shows the model, parsed, the compaction summary first."""
        stored: Sequence[AgentMessage] = turn.messages
        if turn.history_summary is not None:
            text = summary_message_text(turn.history_summary)
            summary = AgentMessage(sequence=0, turn_id="", role=MessageRole.USER, text=text, tool_call_id=None,
                                   tool_name=None, tool_arguments=None, tool_output=None,
                                   framework_item=self.build_user_message(text).framework_item)
            stored = [summary, *stored]
        try:
            return self._memo.load(stored)
        except ValueError as error:
            raise NonRetryableModelError(f"a stored message is not a {self.binding.adapter} message: {error}") from error

    def _resumed(self, turn: AgentTurnContext) -> tuple[list[M], AgentUsage]:
        """The turn's messages so far, ending with one answer per call of the latest response, and
        the turn's usage so far."""
        if turn.framework_run_state is None:
            return [], AgentUsage()
        binding = self.binding
        try:
            decoded, state = decode_turn_state(turn.framework_run_state, binding)
            messages = binding.load_messages(state["messages"])
        except (RunStateError, ValueError) as error:
            raise NonRetryableModelError(f"the turn's run state cannot be read: {error}") from error
        calls = binding.response_calls(messages[-1]) if messages else None
        if calls is None or not set(decoded.round_call_ids) <= {call.tool_call_id for call in calls}:
            raise NonRetryableModelError("the turn's run state does not end with the model response that called tools")
        results = {result.tool_call_id: result for result in latest_round_results(decoded, turn.tool_calls)}
        answers = [RoundAnswer(tool_call_id=call.tool_call_id, tool_name=call.tool_name, text=found.text,
                               outcome=found.outcome)
                   if (found := results.get(call.tool_call_id)) is not None
                   else RoundAnswer(tool_call_id=call.tool_call_id, tool_name=call.tool_name,
                                    text=OUTPUT_NOT_PROCESSED, outcome=ToolOutcome.FAILED)
                   for call in calls]
        return [*messages, *binding.answer_round(answers)], usage_from_json(state["usage"])

    async def _model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        binding = self.binding
        turn_messages, turn_usage = self._resumed(turn)
        answer = await binding.call_model(ModelCall(turn=turn, history=self.history(turn), turn_messages=turn_messages,
                                                    turn_usage=turn_usage))
        produced = [*turn_messages, *answer.messages]
        if not answer.calls:
            return TurnCompleted(new_messages=pvector(binding.to_framework_messages(produced)), usage=answer.usage)
        state = {
            "messages": binding.dump_messages(produced),
            "usage": usage_to_json(add_agent_usage(turn_usage, answer.usage)),
            "contexts": {call.tool_call_id: call.context for call in answer.calls if call.context is not None},
        }
        return ToolCallsRequested(
            framework_run_state=encode_run_state(binding.adapter, binding.run_state_version,
                                                 [call.tool_call_id for call in answer.calls], state),
            tool_calls=pvector(DeferredToolCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name,
                                                arguments=call.arguments, policy=_policy(turn, call))
                               for call in answer.calls),
            usage=answer.usage,
        )


def _policy(turn: AgentTurnContext, call: RequestedCall) -> ResolvedToolPolicy:
    policy = turn.resolve_tool_policy(call.tool_name, call.effect)
    if call.requires_approval and not policy.requires_approval:
        return replace(policy, requires_approval=True)
    return policy


def create_session_flow(
    binding: TurnBinding[M],
    flow_type: str,
    **options: Unpack[SessionFlowOptions],
) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``binding``, with ``create_agent_session_flow``'s
    options (``compaction=None``: the history is never compacted, as the spec's sessions)."""
    return create_agent_session_flow(TurnRunner(binding), flow_type, **options)


__all__ = [
    "OUTPUT_NOT_PROCESSED",
    "CallRef",
    "ModelAnswer",
    "ModelCall",
    "RequestedCall",
    "RoundAnswer",
    "ToolRun",
    "TurnBinding",
    "TurnRunner",
    "create_session_flow",
    "usage_from_json",
    "usage_to_json",
]
