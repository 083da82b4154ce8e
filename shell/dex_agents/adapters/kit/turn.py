"""The turn template: the algorithm of a session's model calls and tool calls, written once.

A framework supplies a ``TurnBinding``: its message type ``M`` and the few things only it knows (how
a message is stored and read back, one model call, the calls of a response, the messages answering a
round of tool calls, one tool run, one summarization call, and which of its errors no retry can fix or
say the context window is exceeded). ``TurnRunner(binding)`` is then the session runner, and
``create_session_flow`` its Flow factory. The template owns everything else:

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
* compaction's summarization (``summarize_history``) over the transcript ``pure.compaction`` renders.

Invariants: a model step makes exactly the one model call of ``binding.call_model`` and runs no tool;
the messages a completed turn stores are the turn's messages so far plus what the last call produced,
in order; nothing is stored for a call that raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Generic, Protocol, TypeVar, Unpack, final

from pyrsistent import pvector

from dex_agents.adapters.kit.history import HistoryMemo
from dex_agents.adapters.kit.messages import user_message
from dex_agents.adapters.kit.options import SessionFlowOptions
from dex_agents.adapters.kit.run_state import RunState, RunStateError, decode_run_state, encode_run_state
from dex_agents.adapters.kit.tool_results import ToolOutcome, latest_round_results
from dex_agents.pure.compaction import render_transcript, summary_message_text
from dex_agents.pure.runner_values import (
    AgentTurnOutcome,
    DeferredToolCall,
    ResolvedToolPolicy,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.pure.usage import add_agent_usage
from dex_agents.pure.values import AgentMessage, AgentUsage, FrameworkMessage, MessageRole, ToolEffect
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import (
    AgentEventWriter,
    AgentTurnContext,
    ContextWindowExceededError,
    DeferredToolExecution,
    HistorySummaryRequest,
    HistorySummaryResult,
    NonRetryableModelError,
    ToolExecutionError,
    ToolExecutionResult,
)

M = TypeVar("M")

OUTPUT_NOT_PROCESSED: Final = (
    "Output not processed: this response also called function tools, which run first. "
    "Read their results, then give the final output again."
)
"""What the model reads for a call of a response that was not deferred (an output tool's call)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CallRef:
    """A call of a response: its ID and tool name, in the model's order."""

    tool_call_id: str
    tool_name: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RequestedCall:
    """A call the response asks the session to defer.

    Attributes:
        effect: The framework's effect for the tool (``None``: none given; ``READ`` for a tool the
            agent does not have or arguments that cannot be read, so it fails at once).
        requires_approval: The framework itself asks for an approval of this call.
        context: JSON data the tool Step gets back (``ToolRun.context``), e.g. a serialized run context.
    """

    tool_call_id: str
    tool_name: str
    arguments: str
    effect: ToolEffect | None
    requires_approval: bool = False
    context: object = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall(Generic[M]):
    """One model call's input.

    Attributes:
        turn: The session's view of the turn.
        history: The stored messages the model sees, parsed (a compaction summary first, when any).
        turn_messages: The turn so far after its user message (responses and the answers to their
            calls, ending with the answers to the latest round); empty on the turn's first call.
        turn_usage: The usage of the turn's model calls before this one.
    """

    turn: AgentTurnContext
    history: list[M]
    turn_messages: list[M]
    turn_usage: AgentUsage

    @property
    def messages(self) -> list[M]:
        """The whole model input: ``history`` then ``turn_messages``."""
        return [*self.history, *self.turn_messages]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelAnswer(Generic[M]):
    """What one model call produced.

    Attributes:
        messages: The messages to store (the response; when the turn completes, also any message
            answering an output call).
        calls: The calls to defer; empty: the turn completes with ``messages``.
        usage: This call's usage.
    """

    messages: Sequence[M]
    calls: Sequence[RequestedCall]
    usage: AgentUsage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RoundAnswer:
    """What the model reads about one call of its latest response."""

    tool_call_id: str
    tool_name: str
    text: str
    outcome: ToolOutcome


class TurnBinding(Protocol[M]):
    """What a framework supplies to the template (see the module docstring)."""

    @property
    def adapter(self) -> str:
        """The run-state envelope's adapter name (e.g. ``"langchain"``)."""
        ...

    @property
    def run_state_version(self) -> int:
        """The adapter's run-state format version."""
        ...

    def user_item(self, text: str) -> str:
        """The deterministic ``framework_item`` of a user message showing ``text``."""
        ...

    def parse_item(self, data: str | object) -> Sequence[M]:
        """The messages of one stored item (JSON text, or data with a long text put back); raises
        ``ValueError`` when it is not this framework's."""
        ...

    def copy_message(self, message: M) -> M:
        """A copy the framework may change (history messages are shared between calls)."""
        ...

    def dump_messages(self, messages: Sequence[M]) -> object:
        """``messages`` as JSON data."""
        ...

    def load_messages(self, data: object) -> list[M]:
        """Messages from ``dump_messages`` data; raises ``ValueError`` when they are not."""
        ...

    def to_framework_messages(self, messages: Sequence[M]) -> list[FrameworkMessage]:
        """The stored form of ``messages``."""
        ...

    def response_calls(self, message: M) -> Sequence[CallRef] | None:
        """Every call of a model response, in the model's order; ``None`` when ``message`` is not one."""
        ...

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[M]:
        """The messages answering every call of the latest response (one answer per call, in order)."""
        ...

    async def call_model(self, call: ModelCall[M]) -> ModelAnswer[M]:
        """Make exactly one model call (streamed when the model can stream, its deltas written to
        ``call.turn.events``; else plain, its text written after it); run no tool."""
        ...

    async def run_tool(self, run: ToolRun[M]) -> str:
        """Run one deferred call's tool; its output as text. Raise ``ToolExecutionError`` for a failure
        the model should see (``kit.unknown_tool_error``, ``kit.invalid_arguments_error``)."""
        ...

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        """One plain model call, no tools: ``instructions`` as the system prompt, ``transcript`` as the
        user message; the response's text and usage."""
        ...

    def is_non_retryable(self, error: BaseException) -> bool:
        """Whether no retry of the model call can succeed after ``error``."""
        ...

    def is_context_window_exceeded(self, error: BaseException) -> bool:
        """Whether ``error`` says the model input exceeds the model's context window."""
        ...


@final
@dataclass(slots=True)
class ToolRun(Generic[M]):
    """One deferred call as its tool Step sees it; the run state is read only when asked for.

    ``context``, ``turn_messages`` and ``turn_usage`` raise ``ToolExecutionError`` when the run state
    is missing or unreadable (the tool does not run: decoding cannot succeed on a retry).
    """

    call: DeferredToolExecution
    binding: TurnBinding[M]
    _decoded: tuple[RunState, dict[str, object]] | None = field(default=None)

    def _state(self) -> dict[str, object]:
        if self._decoded is None:
            record = self.call.tool_call
            if self.call.framework_run_state is None:
                raise ToolExecutionError(f"tool call {record.tool_call_id!r} has no run state")
            try:
                self._decoded = _decode(self.call.framework_run_state, self.binding)
            except RunStateError as error:
                raise ToolExecutionError(str(error)) from error
        return self._decoded[1]

    @property
    def context(self) -> object:
        """The ``RequestedCall.context`` of this call (``None`` when it had none)."""
        contexts = self._state()["contexts"]
        return contexts.get(self.call.tool_call.tool_call_id) if isinstance(contexts, dict) else None

    def turn_messages(self) -> list[M]:
        """The turn's messages up to the response that made this call."""
        try:
            return self.binding.load_messages(self._state()["messages"])
        except ValueError as error:
            raise ToolExecutionError(f"the turn's run state holds no readable messages: {error}") from error

    def turn_usage(self) -> AgentUsage:
        """The usage of the turn's model calls up to the one that made this call."""
        return usage_from_json(self._state()["usage"])


def usage_to_json(usage: AgentUsage) -> dict[str, int]:
    return {"requests": usage.requests, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens}


def usage_from_json(data: object) -> AgentUsage:
    """``usage_to_json`` data back (a missing or invalid count is 0)."""
    counts = data if isinstance(data, dict) else {}

    def count(name: str) -> int:
        value = counts.get(name)
        return value if type(value) is int and value > 0 else 0

    return AgentUsage(requests=count("requests"), input_tokens=count("input_tokens"),
                      output_tokens=count("output_tokens"), cache_read_tokens=count("cache_read_tokens"),
                      cache_write_tokens=count("cache_write_tokens"))


def _decode(text: str, binding: TurnBinding[M]) -> tuple[RunState, dict[str, object]]:
    decoded = decode_run_state(text, adapter=binding.adapter, version=binding.run_state_version)
    state = decoded.state
    if not isinstance(state, dict) or set(state) != {"messages", "usage", "contexts"}:
        raise RunStateError(f"the turn's run state is not this {binding.adapter} adapter's state")
    return decoded, state


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
            decoded, state = _decode(turn.framework_run_state, binding)
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
        return ResolvedToolPolicy(effect=policy.effect, requires_approval=True)
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
