"""The LangChain binding of the turn template (``kit.turn``): a chat model and its ``BaseTool``s.

* Stored: one ``FrameworkMessage`` per message (``AIMessage``: ``assistant``, its call fields set when
  it makes one call; ``ToolMessage``: ``tool``; else ``user``); ``framework_item`` the ASCII JSON of
  ``messages_to_dict([message])``, read with ``messages_from_dict``; a stream stored as its aggregate.
* The tools are bound once (``bind_tools``). A model call sends the system prompt first (never stored),
  streams (``astream``) when the model can, else is one ``ainvoke``. A call without an ID gets
  ``call_<turn>_<model call>_<position>``; one of an unknown tool, or whose arguments did not parse
  (an ``InvalidToolCall``: its raw text), is ``READ``.
* Structured output, "tool strategy" (as ``create_agent``): the Pydantic model is one more tool named
  after its class, ``tool_choice="any"``. One valid output call alone completes the turn, answered
  ``"Returning structured response: <output>"``; more, or invalid: ``StructuredOutputError`` (the call
  is retried). Beside function calls it is answered ``OUTPUT_NOT_PROCESSED`` (by the template).
* A tool runs through ``tool.ainvoke`` with a ``ToolCall``, as LangChain's tool node runs it, its
  ``configurable`` holding ``dex_idempotency_key`` (the same on every attempt), ``dex_flow_id``,
  ``dex_tool_call_id`` and ``dex_attempt``. Invalid arguments, a ``ToolException`` and an error
  ``ToolMessage`` (the tool's own error handling) are errors the model reads; other exceptions
  propagate. The output is the content as text (an artifact is not kept).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final, final

from langchain_core.exceptions import ContextOverflowError, ModelError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolCall
from langchain_core.messages import ToolMessage, message_chunk_to_message, messages_from_dict, messages_to_dict
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, ValidationError
from pydantic.v1 import ValidationError as ValidationErrorV1

from dex_agents.adapters.kit import RETRYABLE_CLIENT_STATUSES, ToolOutcome, assistant_message, invalid_arguments_error
from dex_agents.adapters.kit import is_final_client_status, model_call_usage, tool_effect_from_metadata, tool_message
from dex_agents.adapters.kit import ArgumentsValidator, json_schema_validator, unknown_tool_error, user_message
from dex_agents.adapters.kit.model_errors import says_context_window_exceeded
from dex_agents.adapters.kit.turn import CallRef, ModelAnswer, ModelCall, RequestedCall, RoundAnswer, ToolRun
from dex_agents.pure.values.session import AgentUsage, FrameworkMessage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, HistorySummaryResult, ToolExecutionError

IDEMPOTENCY_KEY_CONFIG: Final = "dex_idempotency_key"
"""The ``configurable`` key of the call's idempotency key (``<flow_id>/<turn_id>/<tool_call_id>``)."""


class StructuredOutputError(RuntimeError):
    """The response's output calls give no single valid output; the model call is retried."""


def load_messages(data: str | object) -> list[BaseMessage]:
    """Messages from JSON text or data; ``ValueError`` when they are not a list of message dicts."""
    try:
        loaded = json.loads(data) if isinstance(data, str) else data
        if not isinstance(loaded, list):
            raise ValueError(f"expected a list of message dicts, got {type(loaded).__name__}")
        return messages_from_dict(loaded)
    except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"not LangChain messages: {error}") from error


def _dumped(messages: Sequence[BaseMessage]) -> str:
    return json.dumps(messages_to_dict(list(messages)), default=str)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _text(content: str | list[str | dict[str, object]]) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)


def to_framework_messages(messages: Sequence[BaseMessage]) -> list[FrameworkMessage]:
    """The stored form of ``messages`` (see the module docstring)."""
    stored: list[FrameworkMessage] = []
    for message in messages:
        item = _dumped([message])
        if isinstance(message, AIMessage):
            calls = message.tool_calls
            one = calls[0] if len(calls) == 1 and not message.invalid_tool_calls else None
            stored.append(assistant_message(item, text=message.text or None, tool_call_id=one and one["id"],
                                            tool_name=one and one["name"], tool_arguments=one and _json(one["args"])))
        elif isinstance(message, ToolMessage):
            stored.append(tool_message(item, tool_call_id=message.tool_call_id, tool_name=message.name or "",
                                       output=_text(message.content)))
        else:
            stored.append(user_message(message.text or None, item))
    return stored


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error``: not for an HTTP status of 408,
    409, 425 or 429; else LangChain's ``ModelError`` classification (``is_retryable``); else a 4xx
    ``status_code`` (openai's and anthropic's ``APIStatusError``). Everything else is retried."""
    status = getattr(error, "status_code", None)
    status = status if type(status) is int else None
    if status in RETRYABLE_CLIENT_STATUSES:
        return False
    if isinstance(error, ModelError):
        return not error.is_retryable
    return status is not None and is_final_client_status(status)


def is_context_window_exceeded(error: BaseException) -> bool:
    """Whether ``error`` or an error it came from says the input exceeds the context window: LangChain's
    ``ContextOverflowError`` (``ChatOpenAI`` raises one for ``context_length_exceeded``), an OpenAI error
    whose code (or its body's) is ``context_length_exceeded``, or a "prompt is too long" message."""
    return says_context_window_exceeded(error, ContextOverflowError)


def can_stream(model: BaseChatModel, *, tools_bound: bool) -> bool:
    """Whether ``model`` streams: it implements ``_astream`` or ``_stream`` and does not disable
    streaming (``disable_streaming=True``, or ``"tool_calling"`` while tools are bound)."""
    kind = type(model)
    if kind._astream is BaseChatModel._astream and kind._stream is BaseChatModel._stream:  # noqa: SLF001
        return False
    return not (model.disable_streaming is True or (model.disable_streaming == "tool_calling" and tools_bound))


def _write_deltas(message: AIMessage, events: AgentEventWriter) -> None:
    for block in message.content_blocks:
        data: Mapping[str, object] = block
        kind = data.get("type")
        value = data.get(kind) if kind in ("text", "reasoning") else None
        if isinstance(value, str) and value:
            (events.write_text_delta if kind == "text" else events.write_reasoning_delta)(value)


def _usage(message: AIMessage) -> AgentUsage:
    usage = message.usage_metadata
    details = (usage and usage.get("input_token_details")) or {}
    return model_call_usage(input_tokens=usage and usage.get("input_tokens"),
                            output_tokens=usage and usage.get("output_tokens"),
                            cache_read_tokens=details.get("cache_read"), cache_write_tokens=details.get("cache_creation"))


def _with_call_ids(message: AIMessage, prefix: str) -> AIMessage:
    """``message`` with ``<prefix>_<position>`` as the ID of every call that has none."""
    valid = [{**call, "id": call.get("id") or f"{prefix}_{k}"} for k, call in enumerate(message.tool_calls)]
    invalid = [{**bad, "id": bad.get("id") or f"{prefix}_{len(valid) + k}"}
               for k, bad in enumerate(message.invalid_tool_calls)]
    return message.model_copy(update={"tool_calls": valid, "invalid_tool_calls": invalid})


@final
class LangChainBinding:
    """The ``TurnBinding`` of a LangChain chat model and its tools (refusals: the package docstring)."""

    adapter: Final = "langchain"
    run_state_version: Final = 2

    def __init__(self, model: BaseChatModel, tools: Sequence[BaseTool], *, system_prompt: str | None = None,
                 response_format: type[BaseModel] | None = None) -> None:
        if not isinstance(model, BaseChatModel):
            raise TypeError(f"model must be a LangChain BaseChatModel (give the tools separately), got {model!r}")
        self.tools: dict[str, BaseTool] = {}
        for tool in tools:
            if not isinstance(tool, BaseTool):
                raise TypeError(f"tools must be LangChain BaseTools (StructuredTool.from_function, @tool), got {tool!r}")
            if tool.name in self.tools or tool.return_direct:
                raise ValueError(f"two tools are named {tool.name!r}" if tool.name in self.tools else
                                 f"tool {tool.name!r} has return_direct=True, which a session does not support: "
                                 "the model always reads a tool's result")
            self.tools[tool.name] = tool
        self.effects = {name: tool_effect_from_metadata(name, tool.metadata) for name, tool in self.tools.items()}
        if response_format is not None and BaseModel not in getattr(response_format, "__mro__", ()):
            raise TypeError(f"response_format must be a Pydantic model class (a BaseModel subclass), "
                            f"got {response_format!r}")
        if response_format is not None and response_format.__name__ in self.tools:
            raise ValueError(f"response_format {response_format.__name__!r} has the name of a tool")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str, got {system_prompt!r}")
        self.model, self.system_prompt, self.output = model, system_prompt, response_format
        bindable: list[BaseTool | type[BaseModel]] = [*self.tools.values(), *([response_format] if response_format else [])]
        self.bound: Runnable[LanguageModelInput, AIMessage] = model
        try:
            if bindable:
                self.bound = model.bind_tools(bindable, **({"tool_choice": "any"} if response_format else {}))
        except NotImplementedError as error:
            raise ValueError(f"the model {type(model).__name__} cannot bind tools "
                             "(bind_tools is not implemented)") from error

    def user_item(self, text: str) -> str:
        return _dumped([HumanMessage(content=text)])  # no ID: deterministic

    parse_item = load_messages = staticmethod(load_messages)
    to_framework_messages = staticmethod(to_framework_messages)
    is_non_retryable = staticmethod(is_non_retryable)
    is_context_window_exceeded = staticmethod(is_context_window_exceeded)

    def copy_message(self, message: BaseMessage) -> BaseMessage:
        return message.model_copy()

    def dump_messages(self, messages: Sequence[BaseMessage]) -> object:
        return json.loads(_dumped(messages))

    def response_calls(self, message: BaseMessage) -> list[CallRef] | None:
        """The parsed calls first, then the unparsed ones, as providers replay them."""
        if not isinstance(message, AIMessage):
            return None
        return [CallRef(tool_call_id=call["id"] or "", tool_name=call["name"] or "")
                for call in [*message.tool_calls, *message.invalid_tool_calls]]

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[BaseMessage]:
        return [ToolMessage(content=answer.text, tool_call_id=answer.tool_call_id, name=answer.tool_name,
                            status="success" if answer.outcome is ToolOutcome.SUCCESS else "error")
                for answer in answers]

    async def _respond(self, model_input: list[BaseMessage], events: AgentEventWriter) -> AIMessage:
        if not can_stream(self.model, tools_bound=self.bound is not self.model):
            response = await self.bound.ainvoke(model_input)
            _write_deltas(response, events)
            return response
        aggregate: AIMessageChunk | None = None
        async for chunk in self.bound.astream(model_input):
            _write_deltas(chunk, events)
            if not isinstance(chunk, AIMessageChunk):  # a whole response (LangChain's own fallback)
                return chunk
            aggregate = chunk if aggregate is None else aggregate + chunk
        message = message_chunk_to_message(aggregate) if aggregate is not None else None
        if not isinstance(message, AIMessage):
            raise RuntimeError("the model's stream ended without an AI message")
        return message

    async def call_model(self, call: ModelCall[BaseMessage]) -> ModelAnswer[BaseMessage]:
        system = [SystemMessage(content=self.system_prompt)] if self.system_prompt else []
        response = await self._respond([*system, *call.messages], call.turn.events)
        model_call = sum(isinstance(message, AIMessage) for message in call.turn_messages)
        response = _with_call_ids(response, f"call_{call.turn.turn_id}_{model_call}")
        every: list[tuple[str, str, str, dict[str, object] | None]] = [
            (c["id"] or "", c["name"], _json(c["args"]), c["args"]) for c in response.tool_calls]
        every += [(bad["id"] or "", bad["name"] or "", bad["args"] or "", None) for bad in response.invalid_tool_calls]
        output = self.output.__name__ if self.output is not None else None
        calls = [RequestedCall(tool_call_id=call_id, tool_name=name, arguments=arguments,
                               effect=ToolEffect.READ if parsed is None else self.effects.get(name, ToolEffect.READ))
                 for call_id, name, arguments, parsed in every if name != output]
        outputs = [(call_id, parsed) for call_id, name, _, parsed in every if name == output]
        answer = [self._answer_output(outputs)] if outputs and not calls else []
        return ModelAnswer(messages=[response, *answer], calls=calls, usage=_usage(response))

    def _answer_output(self, outputs: Sequence[tuple[str, dict[str, object] | None]]) -> ToolMessage:
        assert self.output is not None
        name = self.output.__name__
        if len(outputs) != 1:
            raise StructuredOutputError(f"the model called the output tool {name!r} {len(outputs)} times in one "
                                        "response; the model call is retried")
        ((call_id, arguments),) = outputs
        try:
            parsed = self.output.model_validate(arguments if arguments is not None else "not a JSON object")
        except ValidationError as error:
            raise StructuredOutputError(f"the model's {name!r} output does not validate ({error}); "
                                        "the model call is retried") from error
        return ToolMessage(content=f"Returning structured response: {parsed}", tool_call_id=call_id, name=name)

    async def run_tool(self, run: ToolRun[BaseMessage]) -> str:
        call, record = run.call, run.call.tool_call
        tool = self.tools.get(record.tool_name)
        if tool is None:
            raise unknown_tool_error(record.tool_name, self.tools)
        try:
            arguments = json.loads(record.arguments or "{}")
        except ValueError as error:
            raise invalid_arguments_error(record.tool_name, f"not JSON ({error}): {record.arguments!r}") from error
        if not isinstance(arguments, dict):
            raise invalid_arguments_error(record.tool_name, f"expected a JSON object, got {record.arguments!r}")
        config: RunnableConfig = {"run_name": record.tool_name, "configurable": {
            IDEMPOTENCY_KEY_CONFIG: call.idempotency_key, "dex_flow_id": call.flow_id,
            "dex_tool_call_id": record.tool_call_id, "dex_attempt": call.attempt}}
        try:
            output = await tool.ainvoke(ToolCall(name=record.tool_name, args=arguments, id=record.tool_call_id,
                                                 type="tool_call"), config)
        except (ValidationError, ValidationErrorV1) as error:
            raise invalid_arguments_error(record.tool_name, str(error)) from error
        except ToolException as error:
            raise ToolExecutionError(str(error) or type(error).__name__) from error
        text = _text(output.content) if isinstance(output, ToolMessage) else output if isinstance(output, str) \
            else json.dumps(output, default=str)
        if isinstance(output, ToolMessage) and output.status == "error":
            raise ToolExecutionError(text)
        return text

    async def arguments_validator(self, tool_name: str) -> ArgumentsValidator | None:
        """The tool's ``tool_call_schema`` (its ``args_schema`` less injected arguments), a model or a dict."""
        schema = None if (tool := self.tools.get(tool_name)) is None else tool.tool_call_schema
        if schema is None or isinstance(schema, dict):
            return None if schema is None else json_schema_validator(schema)
        return schema.model_validate_json if issubclass(schema, BaseModel) else schema.parse_raw

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        response = await self.model.ainvoke([SystemMessage(content=instructions), HumanMessage(content=transcript)])
        if not response.text.strip():
            raise RuntimeError("the model's summary of the history is empty")
        return HistorySummaryResult(text=response.text, usage=_usage(response))


__all__ = ["IDEMPOTENCY_KEY_CONFIG", "LangChainBinding", "StructuredOutputError", "can_stream",
           "is_context_window_exceeded", "is_non_retryable", "load_messages", "to_framework_messages"]
