"""A loopback server that speaks OpenAI's Chat Completions HTTP API, for proving framework adapters.

``OpenAICompatibleServer`` serves ``POST /v1/chat/completions`` on ``127.0.0.1`` from a background
thread of the test process, so a framework's real OpenAI client (``openai.AsyncOpenAI`` under
Pydantic AI, LangChain's ChatOpenAI, ...) runs unchanged against ``server.base_url``. A responder
callback scripts each answer (``ChatReply`` or ``ChatErrorReply``) from a typed ``ChatRequest``;
``replies_in_order`` makes one from a fixed script. The wire types live in
``dex_agents.demo.chat_completions_wire`` and are re-exported here.

Invariants:
    * Every request to ``/v1/chat/completions`` whose body is a JSON object is recorded, in arrival
      order and before validation, in ``server.requests``; its 1-based position there is its
      ``ChatRequest.number``.
    * A request that breaks OpenAI's message rules (see ``message_rule_violation``) is answered 400
      with an OpenAI-style error naming the rule, its message is added to ``server.rejections``,
      and the responder is not called.
    * ``"stream": true`` is answered as Server-Sent Events shaped like OpenAI's (role chunk, text
      pieces, tool-call header then argument fragments, a ``finish_reason`` chunk, a usage chunk
      when ``stream_options.include_usage``, ``data: [DONE]``), each event in its own HTTP chunk;
      otherwise as one ``chat.completion`` object.
    * A responder that raises gets its request answered 500; the exception is kept in
      ``server.responder_errors``.
    * ``with_context_window(responder, tokens)`` makes a model with a context window: a longer request
      is answered HTTP 400 ``context_length_exceeded``, as OpenAI answers it.
    * Any other path or method gets OpenAI's 404 JSON error. Every response closes its connection,
      so ``close()`` returns with no server or handler thread left running.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, cast, final

from dex_agents.demo.chat_completions_wire import (
    ChatErrorReply,
    ChatReply,
    ChatRequest,
    ChatToolCall,
    ChatUsage,
    JsonObject,
    Responder,
    completion_chunks,
    completion_json,
    message_rule_violation,
)
from dex_agents.testing.ports import LOOPBACK_HOST

__all__ = [
    "CHAT_COMPLETIONS_PATH",
    "ChatErrorReply",
    "ChatReply",
    "ChatRequest",
    "ChatToolCall",
    "ChatUsage",
    "OpenAICompatibleServer",
    "Responder",
    "message_rule_violation",
    "replies_in_order",
    "request_tokens",
    "with_context_window",
]

CHAT_COMPLETIONS_PATH: Final = "/v1/chat/completions"


CHARACTERS_PER_TOKEN: Final = 4
"""``with_context_window``'s token estimate: a request's messages and tools, as JSON, per token."""


def request_tokens(request: ChatRequest) -> int:
    """The estimated input tokens of ``request``: its messages and tools as JSON, ``CHARACTERS_PER_TOKEN``
    characters a token."""
    return len(json.dumps([request.messages, request.tools])) // CHARACTERS_PER_TOKEN


def with_context_window(responder: Responder, window_tokens: int) -> Responder:
    """``responder`` behind a model whose context window holds ``window_tokens``: a request estimated
    above it (``request_tokens``) is answered as OpenAI answers one, HTTP 400 with code
    ``context_length_exceeded``, and never reaches ``responder``; a reply's prompt tokens are the estimate."""

    def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
        tokens = request_tokens(request)
        if tokens > window_tokens:
            return ChatErrorReply(400, f"This model's maximum context length is {window_tokens} tokens. However, "
                                       f"your messages resulted in {tokens} tokens. Please reduce the length of "
                                       "the messages.", param="messages", code="context_length_exceeded")
        reply = responder(request)
        if isinstance(reply, ChatErrorReply):
            return reply
        return ChatReply(text=reply.text, tool_calls=reply.tool_calls, reasoning=reply.reasoning,
                         usage=ChatUsage(prompt_tokens=tokens, completion_tokens=reply.usage.completion_tokens))

    return respond


def replies_in_order(*replies: ChatReply | ChatErrorReply) -> Responder:
    """A responder that answers its k-th call with ``replies[k-1]`` (thread-safe).

    Rejected requests never reach a responder, so they do not use up a reply. A call beyond the
    script raises ``IndexError``, which the server answers 500 and lists in ``responder_errors``.
    """
    lock, calls = threading.Lock(), [0]

    def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
        with lock:
            calls[0] += 1
            index = calls[0] - 1
        if index >= len(replies):
            raise IndexError(f"request {request.number} is call {index + 1}; only {len(replies)} replies scripted")
        return replies[index]

    return respond


class _Handler(BaseHTTPRequestHandler):
    """Answers one request per connection (``Connection: close``), so handler threads always end."""

    protocol_version = "HTTP/1.1"
    timeout = 30.0  # a connection that never sends its request cannot hold close() forever

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: pytest shows the client's errors, and ``server.requests`` records the traffic."""

    def do_POST(self) -> None:
        owner = cast(_HTTPServer, self.server).owner
        if self.path.split("?")[0] != CHAT_COMPLETIONS_PATH:
            return self._not_found()
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self._send_json(400, ChatErrorReply(400, "We could not parse the JSON body of your request.").body())
        reply = owner._answer(body)
        if isinstance(reply, ChatErrorReply):
            return self._send_json(reply.status, reply.body())
        request, answer = reply
        if not request.stream:
            return self._send_json(200, completion_json(request, answer))
        self._start(200, "text/event-stream", {"Transfer-Encoding": "chunked", "Cache-Control": "no-cache"})
        events = [f"data: {json.dumps(chunk)}\n\n" for chunk in completion_chunks(request, answer)]
        for event in [*events, "data: [DONE]\n\n"]:
            data = event.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _not_found(self) -> None:
        self._send_json(404, ChatErrorReply(404, f"Invalid URL ({self.command} {self.path})").body())

    do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _not_found

    def _start(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.close_connection = True
        self.send_response(status)
        for name, value in {"Content-Type": content_type, "Connection": "close", **headers}.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_json(self, status: int, body: JsonObject) -> None:
        data = json.dumps(body).encode()
        self._start(status, "application/json", {"Content-Length": str(len(data))})
        if self.command != "HEAD":
            self.wfile.write(data)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins every handler thread
    block_on_close = True

    def __init__(self, owner: OpenAICompatibleServer) -> None:
        self.owner = owner
        super().__init__((LOOPBACK_HOST, 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer is not the server's failure; report anything else."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@final
class OpenAICompatibleServer:
    """Chat Completions on ``127.0.0.1``, answering from ``responder`` and recording every request.

    Started (bound to a free port, serving) on construction; ``close()`` (or leaving the ``with``
    block) stops it, joins its threads and is idempotent.
    """

    def __init__(self, responder: Responder) -> None:
        self._responder = responder
        self._lock = threading.Lock()
        self._requests: list[JsonObject] = []
        self._rejections: list[str] = []
        self._responder_errors: list[Exception] = []
        self._closed = False
        self._httpd = _HTTPServer(self)
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://{LOOPBACK_HOST}:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"openai-compatible-server-{self.port}", daemon=True)
        self._thread.start()

    @property
    def requests(self) -> tuple[JsonObject, ...]:
        """Deep copies of the recorded request bodies, in arrival order (rejected ones included)."""
        with self._lock:
            return tuple(copy.deepcopy(body) for body in self._requests)

    @property
    def request_count(self) -> int:
        """How many requests were recorded so far (``len(server.requests)``)."""
        with self._lock:
            return len(self._requests)

    @property
    def rejections(self) -> tuple[str, ...]:
        """The messages of the 400s answered for broken message rules, in order."""
        with self._lock:
            return tuple(self._rejections)

    @property
    def responder_errors(self) -> tuple[Exception, ...]:
        """Exceptions the responder raised (each answered 500 to the client), in order."""
        with self._lock:
            return tuple(self._responder_errors)

    def _answer(self, body: JsonObject) -> tuple[ChatRequest, ChatReply] | ChatErrorReply:
        """Record ``body``, then validate it and ask the responder (called on handler threads)."""
        with self._lock:
            self._requests.append(copy.deepcopy(body))
            number = len(self._requests)
        violation = message_rule_violation(body)
        if violation is not None:
            with self._lock:
                self._rejections.append(violation[0])
            return ChatErrorReply(400, violation[0], param=violation[1])
        tools = body.get("tools") or []
        request = ChatRequest(number=number, model=body["model"], messages=body["messages"], tools=tools,
                              stream=body.get("stream") is True, body=body)
        try:
            reply = self._responder(request)
        except Exception as error:  # reported to the client as a 500 and kept for the test
            with self._lock:
                self._responder_errors.append(error)
            return ChatErrorReply(500, f"The test responder raised {error!r}")
        return reply if isinstance(reply, ChatErrorReply) else (request, reply)

    def close(self) -> None:
        """Stop serving, close the socket and join the serving and handler threads."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> OpenAICompatibleServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
