"""OpenAI Agents SDK input items <-> stored messages.

The SDK's model input is a list of Responses-API input items (plain JSON objects), which every SDK
model accepts (the Chat Completions model converts them). The binding's message type ``Items`` is one
stored message's list of input items, stored as it is (``framework_item`` is its JSON).

Invariants:
    * The model input is the stored lists concatenated in sequence order (nothing else is read).
    * A user message is one ``{"type": "message", "role": "user", "content": text}`` item (no ID, no
      timestamp, so ``user_item`` is deterministic).
    * One model response is one ``assistant`` message holding all its output items as input items
      (``ModelResponse.to_input_items()``, in the model's order: reasoning, text, function calls,
      hosted tool calls); it is never split, so a replayed response is the response the model made.
    * One tool result is one ``tool`` message holding one ``function_call_output`` item.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from pydantic_core import to_jsonable_python

from dex_agents.adapters.kit import assistant_message, tool_message
from dex_agents.pure.values import FrameworkMessage

Items: TypeAlias = list[dict[str, Any]]
"""One stored message: its input items."""


def user_item(text: str) -> str:
    """The ``framework_item`` of a user message."""
    return json.dumps([{"type": "message", "role": "user", "content": text}])


def jsonable_items(items: Iterable[object]) -> Items:
    """Input items (dicts or SDK models) as plain JSON objects."""
    produced = [to_jsonable_python(item, by_alias=True, exclude_none=False) for item in items]
    if not all(isinstance(item, dict) for item in produced):
        raise TypeError(f"an input item is not a JSON object: {produced!r}")
    return produced


def load_items(data: str | object) -> Items:
    """The input items of one stored message (JSON text or data); ``ValueError`` when it is not a list
    of JSON objects."""
    items = json.loads(data) if isinstance(data, str) else data
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValueError("a stored OpenAI Agents message is not a JSON list of input items")
    return items


def item_type(item: Mapping[str, Any]) -> str:
    """An input item's type (an easy input message without ``type`` is a ``message``)."""
    found = item.get("type")
    return found if isinstance(found, str) else "message"


def function_calls(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ``function_call`` items of a response, in order."""
    return [item for item in items if item_type(item) == "function_call"]


def is_response(items: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``items`` are a model response (not a user message, not a tool result)."""
    return bool(items) and not any(item_type(item) == "function_call_output"
                                   or item.get("role") in ("user", "system", "developer") for item in items)


def output_items(call_id: str, output: str) -> Items:
    """The tool message answering ``call_id``."""
    return [{"type": "function_call_output", "call_id": call_id, "output": output}]


def _text(item: Mapping[str, Any]) -> str | None:
    """The text of an assistant message item: its string content, or its text parts joined."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    texts = [str(part.get("text") or "") for part in content if isinstance(part, dict)
             and part.get("type") in ("output_text", "input_text", "text")] if isinstance(content, list) else []
    return "".join(texts) if texts else None


def framework_messages(messages: Sequence[Items]) -> list[FrameworkMessage]:
    """The stored form of a turn's responses and tool results (a tool result's name is that of its
    call in an earlier response of ``messages``)."""
    names = {call.get("call_id"): str(call.get("name")) for items in messages for call in function_calls(items)}
    stored: list[FrameworkMessage] = []
    for items in messages:
        if len(items) == 1 and item_type(items[0]) == "function_call_output":
            call_id, output = str(items[0].get("call_id")), items[0].get("output")
            stored.append(tool_message(json.dumps(items), tool_call_id=call_id, tool_name=names.get(call_id, ""),
                                       output=output if isinstance(output, str) else json.dumps(output)))
            continue
        texts = [text for item in items if item_type(item) == "message" and item.get("role") == "assistant"
                 for text in [_text(item)] if text is not None]
        calls = function_calls(items)
        single = calls[0] if len(calls) == 1 else None
        stored.append(assistant_message(
            json.dumps(items), text="".join(texts) if texts else None,
            tool_call_id=str(single["call_id"]) if single else None,
            tool_name=str(single["name"]) if single else None,
            tool_arguments=str(single.get("arguments") or "") if single else None))
    return stored


__all__ = ["Items", "framework_messages", "function_calls", "is_response", "item_type", "jsonable_items",
           "load_items", "output_items", "user_item"]
