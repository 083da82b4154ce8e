"""OpenAI Agents SDK input items <-> stored ``FrameworkMessage``s.

The SDK's model input is a list of Responses-API input items (``TResponseInputItem``, plain JSON
objects), which every SDK model accepts (the Chat Completions model converts them). The session
stores them as they are:

Invariants:
    * ``framework_item`` is a JSON list of input items; ``load_history`` concatenates the stored lists
      in sequence order, reading nothing else (the other fields are display projections).
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
from typing import Any, Final, cast

from agents.items import TResponseInputItem
from pydantic_core import to_jsonable_python

from dex_agents.adapters.kit import assistant_message, tool_message, user_message
from dex_agents.adapters.kit.messages import expanded_item
from dex_agents.pure.values import AgentMessage, FrameworkMessage

ASSISTANT: Final = "assistant"
TOOL: Final = "tool"


def user_item(text: str) -> str:
    """The ``framework_item`` of a user message."""
    return json.dumps([{"type": "message", "role": "user", "content": text}])


def jsonable_items(items: Iterable[object]) -> list[dict[str, Any]]:
    """Input items (dicts or SDK models) as plain JSON objects."""
    produced: list[dict[str, Any]] = []
    for item in items:
        data = to_jsonable_python(item, by_alias=True, exclude_none=False)
        if not isinstance(data, dict):
            raise TypeError(f"an input item is not a JSON object: {item!r}")
        produced.append(data)
    return produced


def load_items(text: str) -> list[TResponseInputItem]:
    """The input items of one ``framework_item``; ``ValueError`` when it is not a JSON list of objects."""
    data = json.loads(text)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ValueError("a stored OpenAI Agents message is not a JSON list of input items")
    return cast(list[TResponseInputItem], data)


def load_history(stored: Iterable[AgentMessage]) -> list[TResponseInputItem]:
    """The model input the stored messages replay to, from their ``framework_item``s only."""
    return [item for message in stored for item in load_items(expanded_item(message))]


def item_type(item: Mapping[str, Any]) -> str:
    """An input item's type (an easy input message without ``type`` is a ``message``)."""
    found = item.get("type")
    return found if isinstance(found, str) else "message"


def message_text(item: Mapping[str, Any]) -> str | None:
    """The text of a message item: its string content, or its text parts joined (refusals excluded)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [str(part.get("text") or "") for part in content
             if isinstance(part, dict) and part.get("type") in ("output_text", "input_text", "text")]
    return "".join(texts) if texts else None


def function_calls(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ``function_call`` items of a response, in order."""
    return [item for item in items if item_type(item) == "function_call"]


def assistant_framework_message(items: Sequence[Mapping[str, Any]]) -> FrameworkMessage:
    """One model response: its text (assistant message items) and its call when it makes exactly one."""
    texts = [text for item in items if item_type(item) == "message" and item.get("role") == "assistant"
             for text in [message_text(item)] if text is not None]
    calls = function_calls(items)
    single = calls[0] if len(calls) == 1 else None
    return assistant_message(
        json.dumps(list(items)),
        text="".join(texts) if texts else None,
        tool_call_id=str(single["call_id"]) if single else None,
        tool_name=str(single["name"]) if single else None,
        tool_arguments=str(single.get("arguments") or "") if single else None,
    )


def output_item(call_id: str, output: str) -> dict[str, Any]:
    """The ``function_call_output`` item answering ``call_id``."""
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def tool_framework_message(item: Mapping[str, Any], tool_name: str) -> FrameworkMessage:
    """One tool result (a ``function_call_output`` item)."""
    output = item.get("output")
    return tool_message(json.dumps([dict(item)]), tool_call_id=str(item["call_id"]), tool_name=tool_name,
                        output=output if isinstance(output, str) else json.dumps(output))


def user_framework_message(text: str) -> FrameworkMessage:
    """The stored form of a user message."""
    return user_message(text, user_item(text))


__all__ = [
    "ASSISTANT",
    "TOOL",
    "assistant_framework_message",
    "function_calls",
    "item_type",
    "jsonable_items",
    "load_history",
    "load_items",
    "message_text",
    "output_item",
    "tool_framework_message",
    "user_framework_message",
    "user_item",
]
