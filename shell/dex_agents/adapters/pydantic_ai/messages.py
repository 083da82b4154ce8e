"""Pydantic AI messages <-> stored ``FrameworkMessage``s.

Invariants:
    * One ``FrameworkMessage`` per ``ModelResponse`` (role ``assistant``; never split), one per tool
      return or retry prompt (role ``tool``), and one per other request (role ``user``). Pydantic AI
      merges consecutive requests before a model call, so splitting requests replays identically.
    * ``framework_item`` is ``ModelMessagesTypeAdapter`` JSON of a one-message list; the history is
      read from stored items only (the other fields are display projections).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence

from pydantic_ai.messages import (ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, RetryPromptPart,
                                  TextPart, ToolCallPart, ToolReturnPart, UserPromptPart)

from dex_agents.adapters.kit import assistant_message, tool_message, user_message
from dex_agents.pure.values.session import FrameworkMessage


def dump_messages(messages: Sequence[ModelMessage]) -> str:
    """``messages`` as ``ModelMessagesTypeAdapter`` JSON text."""
    return ModelMessagesTypeAdapter.dump_json(list(messages)).decode()


def load_messages(data: str | object) -> list[ModelMessage]:
    """Messages from JSON text or JSON data; ``pydantic.ValidationError`` (a ``ValueError``) when they
    are not messages."""
    if isinstance(data, str):
        return list(ModelMessagesTypeAdapter.validate_json(data))
    return list(ModelMessagesTypeAdapter.validate_python(data))


def shallow_copy(message: ModelMessage) -> ModelMessage:
    """A copy sharing the message's parts (Pydantic AI only ever reassigns a history message's own
    attributes: its run metadata, its parts list)."""
    fields = getattr(message, "__dict__", None)
    if fields is None:
        return copy.copy(message)
    copied = object.__new__(type(message))
    copied.__dict__.update(fields)
    return copied


def user_prompt_item(text: str) -> str:
    """The ``framework_item`` of a user prompt; no timestamp, so it is deterministic."""
    return json.dumps([{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}])


def _content_text(content: object) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=str)


def _response_message(response: ModelResponse) -> FrameworkMessage:
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
    single = calls[0] if len(calls) == 1 else None
    return assistant_message(
        dump_messages([response]),
        text="".join(texts) if texts else None,
        tool_call_id=single.tool_call_id if single else None,
        tool_name=single.tool_name if single else None,
        tool_arguments=single.args_as_json_str() if single else None,
    )


def _request_messages(request: ModelRequest) -> list[FrameworkMessage]:
    results = [part for part in request.parts if isinstance(part, ToolReturnPart | RetryPromptPart)]
    others = [part for part in request.parts if not isinstance(part, ToolReturnPart | RetryPromptPart)]
    produced: list[FrameworkMessage] = []
    if others:
        texts = [_content_text(part.content) for part in others if isinstance(part, UserPromptPart)]
        item = dump_messages([ModelRequest(parts=others, instructions=request.instructions)])
        produced.append(user_message("\n".join(texts) if texts else None, item))
    for part in results:
        output = part.model_response() if isinstance(part, RetryPromptPart) else _content_text(part.content)
        produced.append(tool_message(dump_messages([ModelRequest(parts=[part])]), tool_call_id=part.tool_call_id,
                                     tool_name=part.tool_name or "", output=output))
    return produced


def to_framework_messages(messages: Sequence[ModelMessage]) -> list[FrameworkMessage]:
    """The stored form of ``messages`` (see the module docstring)."""
    produced: list[FrameworkMessage] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            produced.append(_response_message(message))
        else:
            produced.extend(_request_messages(message))
    return produced


__all__ = ["dump_messages", "load_messages", "shallow_copy", "to_framework_messages", "user_prompt_item"]
