"""The ``openai`` client's Chat Completions and plain Python functions as a ``kit.turn.TurnBinding``:
messages are Chat Completions message dicts, stored as JSON; a model call is one streamed ``create``
(text and ``reasoning_content`` deltas written as they arrive, reasoning not stored)."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar, final, get_type_hints

from openai import APIStatusError, AsyncOpenAI, OpenAIError
from openai.types import CompletionUsage
from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import to_json

from dex_agents.adapters.kit import (DEX_EFFECT_METADATA_KEY, ArgumentsValidator, assistant_message, checked_arguments,
                                     is_final_client_status, model_call_usage, tool_effect_from_metadata,
                                     says_context_window_exceeded, tool_message, unknown_tool_error, user_message)
from dex_agents.adapters.kit.turn import CallRef, ModelAnswer, ModelCall, RequestedCall, RoundAnswer, ToolRun
from dex_agents.pure.values.session import AgentUsage, FrameworkMessage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, HistorySummaryResult

Message = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])


def tool(*, effect: ToolEffect | str) -> Callable[[F], F]:
    """Give a tool function its effect (its ``dex_effect`` attribute); the Flow's ``tool_policies`` win."""
    value = ToolEffect(effect).value

    def mark(function: F) -> F:
        setattr(function, DEX_EFFECT_METADATA_KEY, value)
        return function

    return mark


class FunctionTool(NamedTuple):
    """A tool function, the model of its arguments, its ``tools`` entry and its effect (``None``: none given)."""

    function: Callable[..., Any]
    arguments: type[BaseModel]
    schema: dict[str, Any]
    effect: ToolEffect | None


def function_tool(function: Callable[..., Any]) -> FunctionTool:
    """``function`` as a tool: its name, docstring and pydantic's schema of its parameters (by keyword)."""
    if not inspect.isfunction(function) and not inspect.ismethod(function):
        raise TypeError(f"tools must be plain Python functions, got {function!r}")
    name, hints, fields = function.__name__, get_type_hints(function, include_extras=True), dict[str, Any]()
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(f"tool {name!r}: parameter {parameter.name!r} cannot be passed by keyword")
        fields[parameter.name] = (hints.get(parameter.name, Any), ... if parameter.default is parameter.empty
                                  else parameter.default)
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    schema = {"type": "function", "function": {"name": name, "description": inspect.getdoc(function) or "",
                                               "parameters": model.model_json_schema()}}
    return FunctionTool(function, model, schema, tool_effect_from_metadata(name, getattr(function, "__dict__", None)))


def _item(message: Message) -> str:
    return json.dumps(message, separators=(",", ":"))


def _message(data: object) -> Message:
    loaded = json.loads(data) if isinstance(data, str) else data
    if not isinstance(loaded, dict) or loaded.get("role") not in ("user", "assistant", "tool"):
        raise ValueError(f"not a Chat Completions message: {str(loaded)[:200]}")
    return loaded


def _usage(usage: CompletionUsage | None) -> AgentUsage:
    details = usage.prompt_tokens_details if usage else None
    return model_call_usage(input_tokens=usage.prompt_tokens if usage else None,
                            output_tokens=usage.completion_tokens if usage else None,
                            cache_read_tokens=details.cached_tokens if details else None)


@final
class OpenAIChatBinding:
    """An ``AsyncOpenAI`` client's model, instructions (a system message, never stored) and tools."""

    adapter = "openai_chat"
    run_state_version = 1

    def __init__(self, client: AsyncOpenAI, model: str, tools: Mapping[str, FunctionTool], *,
                 instructions: str | None, model_settings: Mapping[str, Any]) -> None:
        self.client, self.model, self.tools, self.settings = client, model, tools, dict(model_settings)
        self.system: list[Message] = [{"role": "system", "content": instructions}] if instructions else []

    def user_item(self, text: str) -> str:
        return _item({"role": "user", "content": text})

    def parse_item(self, data: str | object) -> Sequence[Message]:
        return [_message(data)]

    def copy_message(self, message: Message) -> Message:
        return dict(message)

    def dump_messages(self, messages: Sequence[Message]) -> object:
        return list(messages)

    def load_messages(self, data: object) -> list[Message]:
        if not isinstance(data, list):
            raise ValueError("expected a list of Chat Completions messages")
        return [_message(item) for item in data]

    def to_framework_messages(self, messages: Sequence[Message]) -> list[FrameworkMessage]:
        names: dict[str, str] = {}  # a tool message does not name its tool; its call does
        stored: list[FrameworkMessage] = []
        for message in messages:
            text, item = message["content"] if isinstance(message.get("content"), str) else None, _item(message)
            calls = message.get("tool_calls") or []
            names.update((call["id"], call["function"]["name"]) for call in calls)
            if message["role"] == "user":
                stored.append(user_message(text, item))
            elif message["role"] == "tool":
                call_id = message["tool_call_id"]
                stored.append(tool_message(item, tool_call_id=call_id, tool_name=names.get(call_id, ""),
                                           output=text or ""))
            else:
                one = calls[0]["function"] if len(calls) == 1 else {}
                stored.append(assistant_message(item, text=text or None, tool_call_id=calls[0]["id"] if one else None,
                                                tool_name=one.get("name"), tool_arguments=one.get("arguments")))
        return stored

    def response_calls(self, message: Message) -> Sequence[CallRef] | None:
        calls = message.get("tool_calls") or []
        return None if message["role"] != "assistant" else [
            CallRef(tool_call_id=call["id"], tool_name=call["function"]["name"]) for call in calls]

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[Message]:
        return [{"role": "tool", "tool_call_id": answer.tool_call_id, "content": answer.text} for answer in answers]

    async def call_model(self, call: ModelCall[Message]) -> ModelAnswer[Message]:
        tools: dict[str, Any] = {"tools": [found.schema for found in self.tools.values()]} if self.tools else {}
        model_input: list[Any] = [*self.system, *call.messages]  # Chat Completions message dicts
        text, calls, usage = list[str](), dict[int, dict[str, str]](), None
        async for chunk in await self.client.chat.completions.create(
                **self.settings, **tools, model=self.model, messages=model_input,
                stream=True, stream_options={"include_usage": True}):
            usage = chunk.usage or usage
            for delta in [choice.delta for choice in chunk.choices[:1]]:
                if isinstance(reasoning := getattr(delta, "reasoning_content", None), str) and reasoning:
                    call.turn.events.write_reasoning_delta(reasoning)
                if delta.content:
                    call.turn.events.write_text_delta(delta.content)
                    text.append(delta.content)
                for part in delta.tool_calls or []:
                    entry = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    entry["id"] = part.id or entry["id"]
                    entry["name"] += (part.function.name or "") if part.function else ""
                    entry["arguments"] += (part.function.arguments or "") if part.function else ""
        prefix = f"call_{call.turn.turn_id}_{len(call.turn_messages)}"  # for a server that gives no call IDs
        made: list[Message] = [{"id": entry["id"] or f"{prefix}_{position}", "type": "function",
                 "function": {"name": entry["name"], "arguments": entry["arguments"]}}
                for position, entry in enumerate(calls.values())]
        message: Message = {"role": "assistant", "content": "".join(text) or (None if made else ""),
                            **({"tool_calls": made} if made else {})}
        return ModelAnswer(messages=[message], usage=_usage(usage), calls=[RequestedCall(
            tool_call_id=made_call["id"], tool_name=made_call["function"]["name"],
            arguments=made_call["function"]["arguments"], effect=self._effect(made_call["function"]))
            for made_call in made])

    def _effect(self, function: Mapping[str, str]) -> ToolEffect | None:
        """The tool's effect; ``READ`` (it fails at once) for an unknown tool or arguments not a JSON object."""
        found = self.tools.get(function["name"])
        try:
            readable = isinstance(json.loads(function["arguments"] or "{}"), dict)
            return found.effect if found and readable else ToolEffect.READ
        except ValueError:
            return ToolEffect.READ

    async def run_tool(self, run: ToolRun[Message]) -> str:
        record = run.call.tool_call
        found = self.tools.get(record.tool_name)
        if found is None:
            raise unknown_tool_error(record.tool_name, self.tools)
        values = dict(checked_arguments(record.tool_name, found.arguments.model_validate_json, record.arguments))
        if inspect.iscoroutinefunction(found.function):
            output = await found.function(**values)
        else:  # a sync tool runs on a thread, so it does not hold up the Worker
            output = await asyncio.to_thread(found.function, **values)
        return output if isinstance(output, str) else to_json(output, fallback=str).decode()

    async def arguments_validator(self, tool_name: str) -> ArgumentsValidator | None:
        found = self.tools.get(tool_name)
        return None if found is None else found.arguments.model_validate_json

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        settings = {key: value for key, value in self.settings.items()
                    if key not in ("response_format", "tool_choice", "parallel_tool_calls")}  # no tools, plain text
        response = await self.client.chat.completions.create(**settings, model=self.model, messages=[
            {"role": "system", "content": instructions}, {"role": "user", "content": transcript}])
        text = response.choices[0].message.content if response.choices else None
        if not text or not text.strip():
            raise RuntimeError("the summarization call answered no text")
        return HistorySummaryResult(text=text, usage=_usage(response.usage))

    def is_non_retryable(self, error: BaseException) -> bool:
        if not isinstance(error, APIStatusError):
            return type(error) is OpenAIError  # the client's own configuration error, e.g. no API key
        status = error.status_code
        return error.code == "insufficient_quota" if status == 429 else is_final_client_status(status)

    def is_context_window_exceeded(self, error: BaseException) -> bool:
        return says_context_window_exceeded(error)


__all__ = ["FunctionTool", "Message", "OpenAIChatBinding", "function_tool", "tool"]
