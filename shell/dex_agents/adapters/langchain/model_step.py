"""``run_model_step`` for a LangChain chat model and its tools: exactly one model call, no tool run.

How one call runs:
    * The model input is the system prompt (never stored), the stored history (``framework_item``s),
      then, when the turn resumes, the turn's messages so far from the run state followed by one
      ``ToolMessage`` per call of the latest response, in the model's order, right after it: the
      round's final records (``latest_round_results``) for the deferred calls, ``OUTPUT_NOT_PROCESSED``
      for an output-tool call that came beside them.
    * The model is the chat model with the tools bound (``bind_tools``, once, when the runner is
      built). It is streamed (``astream``) when it can stream, and its text and reasoning deltas go to
      the events as they arrive; otherwise it is invoked (``ainvoke``) and each text or reasoning
      block of the response is one delta.
    * If the response calls any function tool (or an unknown tool, or a tool with arguments that are
      not JSON), every such call is deferred, whatever else the response holds; nothing runs inside
      ``RunModel``. Otherwise the turn completes with the response (and the answer to its output call).
    * A call without an ID gets ``call_<turn>_<model call>_<position>`` before anything is stored.

The run state (``dex_agents.adapters.kit`` envelope, adapter ``langchain``, version
``RUN_STATE_VERSION``) holds the turn's messages so far (ending with the response that called tools)
and the IDs of its output-tool calls that were not deferred. A run state or a stored message this
adapter cannot read (another adapter's, another version, corrupt) fails the turn at once
(``NonRetryableModelError``): decoding is deterministic, so a retry cannot help.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, final

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pyrsistent import pvector

from dex_agents.adapters.kit import (
    RunState,
    RunStateError,
    ToolOutcome,
    decode_run_state,
    encode_run_state,
    latest_round_results,
    model_call_usage,
)
from dex_agents.adapters.langchain.messages import (
    call_arguments_json,
    dump_messages_data,
    load_history,
    load_messages,
    to_framework_messages,
)
from dex_agents.adapters.langchain.structured_output import OUTPUT_NOT_PROCESSED, OutputCall, StructuredOutput
from dex_agents.pure.runner_values import AgentTurnOutcome, DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.values import AgentUsage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, AgentTurnContext, NonRetryableModelError

RUN_STATE_ADAPTER: Final = "langchain"
RUN_STATE_VERSION: Final = 1

BoundModel = Runnable[LanguageModelInput, AIMessage]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSetup:
    """What a model step needs, checked when the runner is built.

    Attributes:
        model: The chat model (to decide whether it can stream).
        bound: The model with the tools (and the output tool) bound; ``model`` itself without tools.
        tools: The function tools by name, in the order given.
        effects: Each tool's effect from its metadata (``None``: none given).
        system_prompt: Sent first on every model call; never stored.
        output: The structured output, or ``None`` for text output.
    """

    model: BaseChatModel
    bound: BoundModel
    tools: Mapping[str, BaseTool]
    effects: Mapping[str, ToolEffect | None]
    system_prompt: str | None
    output: StructuredOutput | None

    @property
    def has_bound_tools(self) -> bool:
        return bool(self.tools) or self.output is not None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseCall:
    """A tool call of a response: ``arguments`` as JSON text; ``valid`` is False when the model's
    arguments did not parse (a LangChain ``InvalidToolCall``; ``arguments`` is then its raw text)."""

    tool_call_id: str
    tool_name: str
    arguments: str
    parsed: dict[str, object] | None
    valid: bool


def can_stream(model: BaseChatModel, *, tools_bound: bool) -> bool:
    """Whether ``model`` streams: it implements ``_astream`` or ``_stream`` and does not disable
    streaming (``disable_streaming=True``, or ``"tool_calling"`` while tools are bound)."""
    kind = type(model)
    if kind._astream is BaseChatModel._astream and kind._stream is BaseChatModel._stream:  # noqa: SLF001
        return False
    disabled = model.disable_streaming
    return not (disabled is True or (disabled == "tool_calling" and tools_bound))


def write_deltas(message: AIMessage, writer: AgentEventWriter) -> None:
    """The text and reasoning blocks of ``message`` (a chunk or a whole response), as deltas."""
    for block in message.content_blocks:
        data: Mapping[str, object] = block
        if data.get("type") == "text":
            text = data.get("text")
            if isinstance(text, str) and text:
                writer.write_text_delta(text)
        elif data.get("type") == "reasoning":
            reasoning = data.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                writer.write_reasoning_delta(reasoning)


def usage_of(message: AIMessage) -> AgentUsage:
    """The usage of one model call, from the response's ``usage_metadata`` (zero counts when absent)."""
    usage = message.usage_metadata
    if usage is None:
        return model_call_usage(input_tokens=None, output_tokens=None)
    details = usage.get("input_token_details") or {}
    return model_call_usage(input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"),
                            cache_read_tokens=details.get("cache_read"),
                            cache_write_tokens=details.get("cache_creation"))


def with_call_ids(message: AIMessage, prefix: str) -> AIMessage:
    """``message`` with an ID for every call that has none (``<prefix>_<position>``)."""
    calls = [*message.tool_calls, *message.invalid_tool_calls]
    if all(call.get("id") for call in calls):
        return message
    valid: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for position, call in enumerate(message.tool_calls):
        valid.append({**call, "id": call.get("id") or f"{prefix}_{position}"})
    offset = len(message.tool_calls)
    for position, bad in enumerate(message.invalid_tool_calls):
        invalid.append({**bad, "id": bad.get("id") or f"{prefix}_{offset + position}"})
    return message.model_copy(update={"tool_calls": valid, "invalid_tool_calls": invalid})


def response_calls(message: AIMessage) -> list[ResponseCall]:
    """The calls of a response (IDs already filled), the parsed ones first, as the provider replays them."""
    calls = [ResponseCall(tool_call_id=call["id"] or "", tool_name=call["name"],
                          arguments=call_arguments_json(call["args"]), parsed=dict(call["args"]), valid=True)
             for call in message.tool_calls]
    calls.extend(ResponseCall(tool_call_id=bad["id"] or "", tool_name=bad["name"] or "", arguments=bad["args"] or "",
                              parsed=None, valid=False)
                 for bad in message.invalid_tool_calls)
    return calls


def _decoded_state(turn: AgentTurnContext) -> RunState:
    assert turn.framework_run_state is not None
    try:
        return decode_run_state(turn.framework_run_state, adapter=RUN_STATE_ADAPTER, version=RUN_STATE_VERSION)
    except RunStateError as error:
        raise NonRetryableModelError(str(error)) from error


def _result_message(call: ResponseCall, results: Mapping[str, tuple[str, ToolOutcome]],
                    not_deferred: Sequence[str]) -> ToolMessage:
    found = results.get(call.tool_call_id)
    if found is not None:
        text, outcome = found
        return ToolMessage(content=text, tool_call_id=call.tool_call_id, name=call.tool_name,
                           status="success" if outcome is ToolOutcome.SUCCESS else "error")
    if call.tool_call_id in not_deferred:
        return ToolMessage(content=OUTPUT_NOT_PROCESSED, tool_call_id=call.tool_call_id, name=call.tool_name,
                           status="error")
    raise NonRetryableModelError(
        f"the turn's run state has no result for tool call {call.tool_call_id!r} of the latest response")


def _carried_messages(turn: AgentTurnContext) -> list[BaseMessage]:
    """The turn's messages so far, ending with one result per call of the latest response."""
    if turn.framework_run_state is None:
        return []
    decoded = _decoded_state(turn)
    state = decoded.state
    if not isinstance(state, dict) or not isinstance(state.get("not_deferred"), list):
        raise NonRetryableModelError("the turn's run state is not this LangChain adapter's state")
    try:
        messages = load_messages(state.get("messages"))
    except ValueError as error:
        raise NonRetryableModelError(f"the turn's run state holds no readable LangChain messages: {error}") from error
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage):
        raise NonRetryableModelError("the turn's run state does not end with the model response that called tools")
    results = {result.tool_call_id: (result.text, result.outcome)
               for result in latest_round_results(decoded, turn.tool_calls)}
    not_deferred = [str(call_id) for call_id in state["not_deferred"]]
    return [*messages, *(_result_message(call, results, not_deferred) for call in response_calls(last))]


async def call_model(setup: ModelSetup, messages: Sequence[BaseMessage], writer: AgentEventWriter) -> AIMessage:
    """Make the one model call: streamed when the model can stream, else one ``ainvoke``."""
    if not can_stream(setup.model, tools_bound=setup.has_bound_tools):
        response = await setup.bound.ainvoke(list(messages))
        write_deltas(response, writer)
        return response
    aggregate: AIMessageChunk | None = None
    async for chunk in setup.bound.astream(list(messages)):
        write_deltas(chunk, writer)
        if not isinstance(chunk, AIMessageChunk):  # a whole response (LangChain's own fallback)
            return chunk
        aggregate = chunk if aggregate is None else aggregate + chunk
    if aggregate is None:
        raise RuntimeError("the model's stream ended without a response")
    message = message_chunk_to_message(aggregate)
    if not isinstance(message, AIMessage):
        raise RuntimeError(f"the model streamed a {type(message).__name__}, not an AI message")
    return message


def _framework_effect(setup: ModelSetup, call: ResponseCall) -> ToolEffect | None:
    if call.tool_name not in setup.tools or not call.valid:
        return ToolEffect.READ  # the call fails at once, without an approval
    return setup.effects[call.tool_name]


def _history(turn: AgentTurnContext) -> list[BaseMessage]:
    try:
        return load_history(turn.messages)
    except ValueError as error:  # decoding is deterministic: a retry cannot help
        raise NonRetryableModelError(f"a stored message is not a LangChain message: {error}") from error


async def run_model_step(setup: ModelSetup, turn: AgentTurnContext) -> AgentTurnOutcome:
    """One model call of ``turn`` (see the module docstring)."""
    carried = _carried_messages(turn)
    system = [SystemMessage(content=setup.system_prompt)] if setup.system_prompt else []
    response = await call_model(setup, [*system, *_history(turn), *carried], turn.events)
    model_call = sum(1 for message in carried if isinstance(message, AIMessage))
    response = with_call_ids(response, f"call_{turn.turn_id}_{model_call}")
    usage = usage_of(response)
    output_name = setup.output.tool_name if setup.output is not None else None
    calls = response_calls(response)
    deferred = [call for call in calls if call.tool_name != output_name]
    output_calls = [call for call in calls if call.tool_name == output_name]
    if deferred:
        state = {"messages": dump_messages_data([*carried, response]),
                 "not_deferred": [call.tool_call_id for call in output_calls]}
        return ToolCallsRequested(
            framework_run_state=encode_run_state(RUN_STATE_ADAPTER, RUN_STATE_VERSION,
                                                 [call.tool_call_id for call in deferred], state),
            tool_calls=pvector(
                DeferredToolCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name, arguments=call.arguments,
                                 policy=turn.resolve_tool_policy(call.tool_name, _framework_effect(setup, call)))
                for call in deferred
            ),
            usage=usage,
        )
    produced: list[BaseMessage] = [*carried, response]
    if setup.output is not None and output_calls:
        produced.append(setup.output.answer([OutputCall(tool_call_id=call.tool_call_id, arguments=call.parsed)
                                             for call in output_calls]))
    return TurnCompleted(new_messages=pvector(to_framework_messages(produced)), usage=usage)


__all__ = [
    "RUN_STATE_ADAPTER",
    "RUN_STATE_VERSION",
    "ModelSetup",
    "ResponseCall",
    "call_model",
    "can_stream",
    "response_calls",
    "run_model_step",
    "usage_of",
    "with_call_ids",
    "write_deltas",
]
