"""``FrameworkMessage`` builders: one per role, so an adapter fills only what its role has; and the
framework items a stored message replays to (``item_data``, ``expanded_item``).

``framework_item`` is the framework-native JSON the session replays; the other fields are display
projections (spec: "Rebuild framework input from ``frameworkItem`` only").

A long text is stored once. When the message's ``text`` (or a tool message's ``tool_output``) has at
least ``REFERENCE_THRESHOLD_CHARACTERS`` characters and appears as a string in ``framework_item``, the
item holds ``{"$dex_agents_ref": "text"}`` (or ``"tool_output"``) in its place; ``item_data`` and
``expanded_item`` put the value back, so the framework replays exactly what it produced. Shorter texts,
and items where the text does not appear as a whole string, are stored as produced.
"""

from __future__ import annotations

import json
from typing import Final

from dex_agents.pure.values.session import REFERENCE_KEY, AgentMessage, FrameworkMessage, MessageRole


REFERENCE_THRESHOLD_CHARACTERS: Final = 1024
"""Texts at least this long are stored once (see the module docstring)."""

_REFERABLE: Final = ("text", "tool_output")

JsonData = object
"""Parsed JSON (dicts, lists, strings, numbers, booleans, None)."""


def _replaced(data: JsonData, find: str, reference: dict[str, str]) -> tuple[JsonData, int]:
    if isinstance(data, str):
        return (reference, 1) if data == find else (data, 0)
    if isinstance(data, list):
        items = [_replaced(item, find, reference) for item in data]
        return [item for item, _ in items], sum(count for _, count in items)
    if isinstance(data, dict):
        entries = {key: _replaced(value, find, reference) for key, value in data.items()}
        return {key: value for key, (value, _) in entries.items()}, sum(count for _, count in entries.values())
    return data, 0


def referring_item(framework_item: str, value: str | None, field: str) -> str:
    """``framework_item`` with each string equal to ``value`` (the message's ``field``) replaced by a
    reference, when ``value`` is long enough; else ``framework_item`` unchanged."""
    if value is None or len(value) < REFERENCE_THRESHOLD_CHARACTERS or REFERENCE_KEY in framework_item:
        return framework_item
    try:
        data = json.loads(framework_item)
    except ValueError:
        return framework_item
    replaced, count = _replaced(data, value, {REFERENCE_KEY: field})
    return json.dumps(replaced, separators=(",", ":")) if count else framework_item


def _expanded(data: JsonData, message: AgentMessage) -> JsonData:
    if isinstance(data, list):
        return [_expanded(item, message) for item in data]
    if isinstance(data, dict):
        field = data.get(REFERENCE_KEY)
        if len(data) == 1 and field in _REFERABLE:
            value = getattr(message, str(field))
            if not isinstance(value, str):
                raise ValueError(f"message {message.sequence} refers to its {field}, which is empty")
            return value
        return {key: _expanded(value, message) for key, value in data.items()}
    return data


def refers(message: AgentMessage) -> bool:
    """Whether the stored item refers to the message's display fields."""
    return REFERENCE_KEY in message.framework_item


def item_data(message: AgentMessage) -> str | JsonData:
    """What the stored message replays to: its ``framework_item`` text, or, when it refers to a display
    field, the item's JSON data with the field's value put back.

    Raises:
        ValueError: the item is not JSON, or refers to a field the message lacks.
    """
    if not refers(message):
        return message.framework_item
    return _expanded(json.loads(message.framework_item), message)


def expanded_item(message: AgentMessage) -> str:
    """``item_data`` as JSON text (the item itself when it refers to nothing)."""
    data = item_data(message)
    return data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))


def user_message(text: str | None, framework_item: str) -> FrameworkMessage:
    """A user message showing ``text`` (``None``: a request with no text to show, e.g. only instructions)."""
    return FrameworkMessage(role=MessageRole.USER, text=text, tool_call_id=None, tool_name=None,
                            tool_arguments=None, tool_output=None,
                            framework_item=referring_item(framework_item, text, "text"))


def assistant_message(
    framework_item: str,
    *,
    text: str | None = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    tool_arguments: str | None = None,
) -> FrameworkMessage:
    """A model response: its text, and the call it makes when it makes exactly one."""
    return FrameworkMessage(role=MessageRole.ASSISTANT, text=text, tool_call_id=tool_call_id, tool_name=tool_name,
                            tool_arguments=tool_arguments, tool_output=None,
                            framework_item=referring_item(framework_item, text, "text"))


def tool_message(framework_item: str, *, tool_call_id: str, tool_name: str, output: str) -> FrameworkMessage:
    """The result of one tool call, as the model reads it."""
    return FrameworkMessage(role=MessageRole.TOOL, text=None, tool_call_id=tool_call_id, tool_name=tool_name,
                            tool_arguments=None, tool_output=output,
                            framework_item=referring_item(framework_item, output, "tool_output"))


__all__ = [
    "REFERENCE_KEY",
    "REFERENCE_THRESHOLD_CHARACTERS",
    "assistant_message",
    "expanded_item",
    "item_data",
    "referring_item",
    "refers",
    "tool_message",
    "user_message",
]
