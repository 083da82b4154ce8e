"""A real ``openai.AsyncOpenAI`` client answered inside the process: no server, no socket, no key (the
keyless demo's model, and the tests').

``in_process_openai_client(respond)`` gives a client whose HTTP transport (``httpx2.MockTransport``)
hands every Chat Completions request to ``respond`` and answers on the wire of
``OpenAICompatibleServer`` (``dex_agents.demo.chat_completions_wire``): the same rule checks (a broken tool-message
rule is a 400 and ``respond`` is not called), Server-Sent Events for ``"stream": true``, one
``chat.completion`` otherwise, and a ``ChatErrorReply`` as OpenAI's error body. ``respond`` may be
async (it may wait, e.g. at a test's gate). The client does not retry (``max_retries=0``): one model
attempt is one request. Used by the ``openai_chat`` adapter's conformance fixture and its keyless demo.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Final, TypeAlias

import httpx2
from openai import AsyncOpenAI

from dex_agents.demo.chat_completions_wire import (
    ChatErrorReply,
    ChatReply,
    ChatRequest,
    completion_chunks,
    completion_json,
    message_rule_violation,
)

IN_PROCESS_BASE_URL: Final = "http://openai.in-process.invalid/v1"

InProcessResponder: TypeAlias = Callable[[ChatRequest], "ChatReply | ChatErrorReply | Awaitable[ChatReply | ChatErrorReply]"]


def _error(reply: ChatErrorReply) -> httpx2.Response:
    return httpx2.Response(reply.status, json=reply.body())


def in_process_openai_client(respond: InProcessResponder) -> AsyncOpenAI:
    """A client whose every request ``respond`` answers (see the module docstring)."""
    numbers = itertools.count(1)

    async def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        violation = message_rule_violation(body)
        if violation is not None:
            return _error(ChatErrorReply(400, violation[0], param=violation[1]))
        chat = ChatRequest(number=next(numbers), model=body["model"], messages=body["messages"],
                           tools=body.get("tools") or [], stream=body.get("stream") is True, body=body)
        reply = respond(chat)
        answer = await reply if inspect.isawaitable(reply) else reply
        if isinstance(answer, ChatErrorReply):
            return _error(answer)
        if not chat.stream:
            return httpx2.Response(200, json=completion_json(chat, answer))
        events = [f"data: {json.dumps(chunk)}\n\n" for chunk in completion_chunks(chat, answer)]
        return httpx2.Response(200, content="".join([*events, "data: [DONE]\n\n"]).encode(),
                               headers={"content-type": "text/event-stream"})

    return AsyncOpenAI(api_key="in-process", base_url=IN_PROCESS_BASE_URL, max_retries=0,
                       http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handle)))


__all__ = ["IN_PROCESS_BASE_URL", "InProcessResponder", "in_process_openai_client"]
