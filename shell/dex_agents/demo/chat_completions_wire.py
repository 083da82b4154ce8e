"""The Chat Completions wire format of ``OpenAICompatibleServer``: request view, scripted replies, rules.

Functions without I/O or state, so each rule and each rendering can be checked alone.

Invariants:
    * ``message_rule_violation`` accepts exactly the requests whose tool messages pair up with the
      tool calls of the assistant message before their run (see its docstring), as OpenAI does.
    * ``completion_json`` and ``completion_chunks`` render the same ``ChatReply``: concatenating the
      chunks' ``content`` and each tool call's ``arguments`` fragments gives back the reply's text
      and arguments, and the ``finish_reason`` is the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, cast

__all__ = [
    "STREAM_PIECE_CHARS",
    "VALID_ROLES",
    "ChatErrorReply",
    "ChatReply",
    "ChatRequest",
    "ChatToolCall",
    "ChatUsage",
    "JsonObject",
    "Responder",
    "completion_chunks",
    "completion_json",
    "message_rule_violation",
]

JsonObject: TypeAlias = dict[str, Any]
VALID_ROLES: Final = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
STREAM_PIECE_CHARS: Final = 4
"""Streamed text and tool-call arguments are cut into pieces of at most this many characters."""
_DEFAULT_ERROR_TYPES: Final = {400: "invalid_request_error", 401: "invalid_request_error",
                               404: "invalid_request_error", 429: "requests"}


@dataclass(frozen=True)
class ChatRequest:
    """A recorded request as the responder sees it: ``number`` is its 1-based arrival position.

    ``messages`` and ``tools`` are the request's lists as received (a private copy: changing them
    changes neither ``server.requests`` nor later requests); ``body`` is the whole parsed JSON.
    """

    number: int
    model: str
    messages: list[JsonObject]
    tools: list[JsonObject]
    stream: bool
    body: JsonObject

    @property
    def include_usage(self) -> bool:
        """Whether a streamed answer must end with a usage chunk (``stream_options.include_usage``)."""
        options = self.body.get("stream_options")
        return self.stream and isinstance(options, dict) and options.get("include_usage") is True

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the function tools offered, in request order."""
        functions = [tool.get("function") for tool in self.tools]
        return tuple(str(function.get("name")) for function in functions if isinstance(function, dict))


@dataclass(frozen=True)
class ChatToolCall:
    """One function tool call of a reply; ``arguments`` is the JSON text the model "wrote"."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class ChatUsage:
    """Token counts reported for a reply; ``total_tokens`` is always their sum."""

    prompt_tokens: int = 10
    completion_tokens: int = 5


@dataclass(frozen=True)
class ChatReply:
    """A successful answer: ``finish_reason`` is ``"tool_calls"`` when there are tool calls, else ``"stop"``.

    ``text`` ``None`` answers ``content: null`` with tool calls and ``""`` without. ``reasoning``, when
    given, is the message's ``reasoning_content`` (as DeepSeek and vLLM send it; streamed first).
    """

    text: str | None = None
    tool_calls: tuple[ChatToolCall, ...] = ()
    usage: ChatUsage = field(default_factory=ChatUsage)
    reasoning: str | None = None

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class ChatErrorReply:
    """An HTTP error answered with OpenAI's body ``{"error": {"message", "type", "param", "code"}}``.

    ``type`` defaults by status as OpenAI's does (``invalid_request_error``, ``requests`` for 429,
    ``server_error`` for 5xx). The openai client raises e.g. ``BadRequestError`` (400),
    ``AuthenticationError`` (401), ``RateLimitError`` (429), ``InternalServerError`` (>= 500).
    """

    status: int
    message: str
    type: str | None = None
    param: str | None = None
    code: str | None = None

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP error status (400-599), got {self.status}")

    def body(self) -> JsonObject:
        kind = self.type or _DEFAULT_ERROR_TYPES.get(self.status, "server_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


Responder: TypeAlias = Callable[[ChatRequest], ChatReply | ChatErrorReply]


def message_rule_violation(body: JsonObject) -> tuple[str, str | None] | None:
    """The first OpenAI request rule ``body`` breaks, as (message, param), or ``None`` if it keeps all.

    Rules: ``model`` is a non-empty string; ``messages`` a non-empty array of objects with a valid
    role; ``tools`` (if present) an array of objects; ``stream`` (if present) a boolean. Every tool call id of
    an assistant message is a non-empty string, unique in that message; every ``tool`` message has
    a string ``tool_call_id``. The ``tool`` messages right
    after an assistant message with ``tool_calls`` answer exactly its calls: each carries the
    ``tool_call_id`` of one of them, none is answered twice, and none is left unanswered when the
    next non-tool message (or the end) comes. A ``tool`` message anywhere else is rejected.
    """
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        return "you must provide a model parameter", "model"
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': expected a non-empty array of messages.", "messages"
    tools = body.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        return "Invalid 'tools': expected an array of objects.", "tools"
    if "stream" in body and not isinstance(body["stream"], bool):
        return "Invalid 'stream': expected a boolean.", "stream"
    open_calls: list[str] | None = None  # ids still to answer; None outside a run of tool messages
    answered: set[str] = set()
    for index, message in enumerate(messages):
        param = f"messages.[{index}]"
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in VALID_ROLES:
            return f"Invalid value for '{param}.role': {role!r}; expected one of {sorted(VALID_ROLES)}.", param
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                return f"Missing required parameter: '{param}.tool_call_id'.", f"{param}.tool_call_id"
            if open_calls is None:
                return (f"Invalid parameter: messages with role 'tool' must be a response to a preceding message "
                        f"with 'tool_calls' ({param} answers {call_id!r}).", f"{param}.role")
            if call_id in answered:
                return f"Invalid parameter: tool_call_id {call_id!r} is answered twice ({param}).", param
            if call_id not in open_calls:
                return (f"Invalid parameter: 'tool_call_id' of {call_id!r} not found in 'tool_calls' of the "
                        f"preceding assistant message ({param}).", f"{param}.tool_call_id")
            open_calls.remove(call_id)
            answered.add(call_id)
            continue
        if open_calls:
            return _unanswered(open_calls, param)
        answered.clear()
        open_calls = None
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls is not None and not isinstance(calls, list):
            return f"Invalid type for '{param}.tool_calls': expected an array.", f"{param}.tool_calls"
        if calls:
            ids = [call.get("id") if isinstance(call, dict) else None for call in calls]
            if not all(isinstance(call_id, str) and call_id for call_id in ids) or len(set(ids)) != len(ids):
                return f"Invalid '{param}.tool_calls': ids must be unique non-empty strings, got {ids}.", param
            open_calls = cast(list[str], ids)
    if open_calls:
        return _unanswered(open_calls, "messages")
    return None


def _unanswered(open_calls: list[str], param: str) -> tuple[str, str]:
    return (f"An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_calls)} "
            f"(before {param}).", param)


def _pieces(text: str) -> list[str]:
    return [text[start:start + STREAM_PIECE_CHARS] for start in range(0, len(text), STREAM_PIECE_CHARS)]


def _usage(usage: ChatUsage) -> JsonObject:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def completion_json(request: ChatRequest, reply: ChatReply) -> JsonObject:
    """The ``chat.completion`` object answering a non-streamed request."""
    message: JsonObject = {"role": "assistant", "refusal": None,
                           "content": reply.text if reply.text is not None or reply.tool_calls else ""}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": call.arguments}}
                                 for call in reply.tool_calls]
    return {"id": f"chatcmpl-test-{request.number}", "object": "chat.completion", "created": int(time.time()),
            "model": request.model, "system_fingerprint": "fp_test", "usage": _usage(reply.usage),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}]}


def completion_chunks(request: ChatRequest, reply: ChatReply) -> Iterator[JsonObject]:
    """The ``chat.completion.chunk`` objects answering a streamed request, in OpenAI's order."""
    base: JsonObject = {"id": f"chatcmpl-test-{request.number}", "object": "chat.completion.chunk",
                        "created": int(time.time()), "model": request.model, "system_fingerprint": "fp_test"}
    if request.include_usage:
        base["usage"] = None

    def chunk(delta: JsonObject, finish_reason: str | None = None) -> JsonObject:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": "" if reply.text is not None or not reply.tool_calls else None,
                 "refusal": None})
    for piece in _pieces(reply.reasoning or ""):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.text or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                     "function": {"name": call.name, "arguments": ""}}]})
        for piece in _pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if request.include_usage:
        yield {**base, "choices": [], "usage": _usage(reply.usage)}
