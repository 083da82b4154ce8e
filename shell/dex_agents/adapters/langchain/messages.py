"""LangChain messages <-> stored ``FrameworkMessage``s.

Invariants:
    * One ``FrameworkMessage`` per LangChain message: an ``AIMessage`` is ``assistant`` (never split;
      its text is ``message.text``, reasoning excluded; the call fields are set when it makes exactly
      one call), a ``ToolMessage`` is ``tool``, any other message is ``user``.
    * ``framework_item`` is the JSON of ``messages_to_dict([message])``, LangChain's own plain form,
      read back with ``messages_from_dict`` (which builds message classes only, never arbitrary
      objects). ``load_history`` reads stored items only; the other fields are display projections.
    * A streamed response is stored as the ``AIMessage`` it aggregates to, never as a chunk.
    * Items are ASCII JSON (``\\uXXXX`` escapes), so any text, a lone surrogate included, is storable;
      a value JSON cannot hold (in provider metadata) is stored as its ``str``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages import messages_from_dict as _messages_from_dict
from langchain_core.messages import messages_to_dict as _messages_to_dict

from dex_agents.adapters.kit import assistant_message, tool_message, user_message
from dex_agents.adapters.kit.history import HistoryMemo
from dex_agents.pure.values import AgentMessage, FrameworkMessage


def dump_messages_data(messages: Sequence[BaseMessage]) -> list[object]:
    """``messages`` as JSON data (``messages_to_dict``, made JSON-safe)."""
    loaded: list[object] = json.loads(dump_messages(messages))
    return loaded


def dump_messages(messages: Sequence[BaseMessage]) -> str:
    """``messages`` as JSON text (see the module docstring)."""
    return json.dumps(_messages_to_dict(list(messages)), default=str)


def load_messages(data: str | object) -> list[BaseMessage]:
    """Messages from JSON text or JSON data.

    Raises:
        ValueError: the data is not a list of LangChain message dicts.
    """
    try:
        loaded = json.loads(data) if isinstance(data, str) else data
        if not isinstance(loaded, list):
            raise ValueError(f"expected a list of message dicts, got {type(loaded).__name__}")
        return _messages_from_dict(loaded)
    except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"not LangChain messages: {error}") from error


_HISTORY: Final[HistoryMemo[BaseMessage]] = HistoryMemo(lambda item: load_messages(item),
                                                        lambda message: message.model_copy())
"""Parsed stored items; each model call gets (shallow) copies, which a chat model may change."""


def load_history(stored: Iterable[AgentMessage]) -> list[BaseMessage]:
    """The model input the stored messages replay to, from their ``framework_item``s only (each item
    parsed once per Worker: ``kit.history.HistoryMemo``)."""
    return _HISTORY.load(stored)


def user_prompt_item(text: str) -> str:
    """The ``framework_item`` of a user message: a ``HumanMessage`` with no ID, so it is deterministic."""
    return dump_messages([HumanMessage(content=text)])


def call_arguments_json(arguments: object) -> str:
    """A tool call's arguments as compact JSON (non-ASCII kept readable)."""
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, default=str)


def content_text(content: str | list[str | dict[str, object]]) -> str:
    """A message content as the text a tool result or display shows (blocks as JSON)."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)


def _assistant(message: AIMessage) -> FrameworkMessage:
    calls = message.tool_calls
    single = calls[0] if len(calls) == 1 and not message.invalid_tool_calls else None
    text = message.text
    return assistant_message(
        dump_messages([message]),
        text=text or None,
        tool_call_id=single["id"] if single else None,
        tool_name=single["name"] if single else None,
        tool_arguments=call_arguments_json(single["args"]) if single else None,
    )


def to_framework_messages(messages: Sequence[BaseMessage]) -> list[FrameworkMessage]:
    """The stored form of ``messages`` (see the module docstring)."""
    produced: list[FrameworkMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            produced.append(_assistant(message))
        elif isinstance(message, ToolMessage):
            produced.append(tool_message(dump_messages([message]), tool_call_id=message.tool_call_id,
                                         tool_name=message.name or "", output=content_text(message.content)))
        else:
            produced.append(user_message(message.text or None, dump_messages([message])))
    return produced


__all__ = [
    "call_arguments_json",
    "content_text",
    "dump_messages",
    "dump_messages_data",
    "load_history",
    "load_messages",
    "to_framework_messages",
    "user_prompt_item",
]
