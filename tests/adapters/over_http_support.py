"""What the adapters' over-HTTP session tests (``test_<framework>_over_http``) share.

Each of those tests builds its framework's agent on the framework's real OpenAI Chat Completions
model, whose ``openai`` client (``max_retries=0``: one model attempt is one request) speaks HTTP to
``OpenAICompatibleServer`` on loopback, which enforces OpenAI's tool-message rules, on the local Dex
engine. Everything else is here and knows no framework: the provider's script (``respond``), the
tool's runs (``ToolRuns``, ``lookup_order_function``), the checks of the requests the provider
received, the waits on committed events and Step history, and ``hold_the_conversation``: a session
with a turn of two sequential tool calls, a turn the provider breaks (HTTP 500, retried by
``RunModel`` until it fails), a turn it rejects (HTTP 400, failed at once), a tool turn after both
failures, a text turn, a turn whose HTTP request the provider holds until the operator cancels the turn
(Dex aborts the model call; the turn ends canceled), and a turn whose request carries the cancel note,
checked as every adapter must pass it.

``respond`` is a pure function of the request's messages (the last user message's text and what
follows it), so a model call made again after a failure gets the same answer. Every wait is on
committed values.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from openai import AsyncOpenAI

from dex_agents.pure.values.session import AgentEvent, AgentMessage, AgentUsage, MessageRole
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing import EXECUTE_COMPLETED, EXECUTE_FAILED, poll_until, read_step_history
from dex_agents.testing.openai_compatible import (
    ChatErrorReply,
    ChatReply,
    ChatRequest,
    ChatToolCall,
    OpenAICompatibleServer,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.session_client import AgentSessionTestClient

JsonObject = dict[str, Any]

TWO_LOOKUPS: Final = "Where are orders 1 and 2?"
BREAK: Final = "And what about my refund?"
BAD_REQUEST: Final = "Hello? Are you there?"
ONE_LOOKUP: Final = "Where is order 3?"
THANKS: Final = "Thanks!"
HOLD: Final = "Take all the time you need."
CANCEL_REASON: Final = "the customer hung up"

TWO_LOOKUPS_ANSWER: Final = "Both found: order 1 shipped; order 2 shipped."
SERVER_ERROR: Final = "The server had an error while processing your request (test)."
BAD_REQUEST_ERROR: Final = "Invalid 'messages': this request is rejected by the test server."
THANKS_ANSWER: Final = "You're welcome, have a nice day!"

RUN_MODEL_ATTEMPTS: Final = 3
MODEL_CALL_FAILED: Final = "dex_agents.model_call_failed"
SESSION_TIMEOUT: Final = 60.0
FAILED_TURN_TIMEOUT: Final = 120.0
"""Seconds allowed for a turn whose ``RunModel`` is retried with backoff."""


def message_text(message: JsonObject) -> str:
    """The text of a Chat Completions message (string content or a list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def lookup_call(order_id: int) -> ChatReply:
    return ChatReply(tool_calls=(ChatToolCall(f"call_order_{order_id}", "lookup_order",
                                              json.dumps({"order_id": order_id})),))


def last_turn(request: ChatRequest) -> tuple[str, int, list[str]]:
    """The last user message's text, the assistant messages after it, and the tool results after it."""
    last_user = max(index for index, message in enumerate(request.messages) if message.get("role") == "user")
    after = request.messages[last_user + 1:]
    rounds = sum(1 for message in after if message.get("role") == "assistant")
    return message_text(request.messages[last_user]), rounds, [
        message_text(message) for message in after if message.get("role") == "tool"]


class HeldRequest:
    """The provider holds a ``HOLD`` request (in its handler thread) until the test releases it, so the
    model call it answers stays in flight until the operator cancels its turn."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.released = threading.Event()

    def reset(self) -> None:
        self.reached.clear()
        self.released.clear()


HELD: Final = HeldRequest()
"""This process's held request (the over-HTTP tests of one process run one after another)."""


def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
    """The provider in ``hold_the_conversation``: answers from the last user message and the assistant
    and tool messages after it (no counter); an ``AssertionError`` for any other last user message."""
    prompt, rounds, results = last_turn(request)
    if prompt == TWO_LOOKUPS:
        if rounds < 2:
            return lookup_call(rounds + 1)
        return ChatReply(text=f"Both found: {results[0]}; {results[1]}.")
    if prompt == BREAK:
        return ChatErrorReply(500, SERVER_ERROR)
    if prompt == BAD_REQUEST:
        return ChatErrorReply(400, BAD_REQUEST_ERROR, param="messages", code="invalid_value")
    if prompt == ONE_LOOKUP:
        return lookup_call(3) if rounds == 0 else ChatReply(text=f"Found it: {results[0]}.")
    if prompt == THANKS:
        return ChatReply(text=THANKS_ANSWER)
    if prompt == HOLD:
        HELD.reached.set()
        HELD.released.wait(SESSION_TIMEOUT)
        return ChatReply(text="I took my time.")
    raise AssertionError(f"unexpected last user message {prompt!r}")


class ToolRuns:
    """The order IDs ``lookup_order`` ran with, in order (the tool runs on a Worker thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._order_ids: list[int] = []

    def add(self, order_id: int) -> None:
        with self._lock:
            self._order_ids.append(order_id)

    @property
    def order_ids(self) -> list[int]:
        with self._lock:
            return list(self._order_ids)


def lookup_order_function(runs: ToolRuns) -> Callable[[int], Awaitable[str]]:
    """The ``lookup_order`` tool's function, for a framework to wrap: it adds each run to ``runs``."""

    async def lookup_order(order_id: int) -> str:
        """Look up an order's shipping status."""
        runs.add(order_id)
        return f"order {order_id} shipped"

    return lookup_order


@contextmanager
def async_openai_client(server: OpenAICompatibleServer) -> Iterator[AsyncOpenAI]:
    """A real ``openai`` client of ``server``: no SDK retries, so one model attempt is one HTTP request."""
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        yield client
    finally:
        asyncio.run(client.close())


def open_session(agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
                 flow: AgentSessionFlow) -> tuple[AgentSessionTestClient, str]:
    """A session client of ``flow`` on an environment (and Worker) of its own, and a new session ID."""
    return agent_sessions(agent_environment([flow]), flow, timeout=SESSION_TIMEOUT), f"s-{uuid.uuid4().hex}"


def roles(messages: Sequence[JsonObject]) -> list[str]:
    return [str(message["role"]) for message in messages]


def call_ids(message: JsonObject) -> list[str]:
    return [str(call["id"]) for call in message.get("tool_calls") or []]


def tool_names(request: JsonObject) -> list[str]:
    """The names of the tools a request offers the model."""
    return [str(tool["function"]["name"]) for tool in request.get("tools") or []]


def assert_each_result_once_after_its_call(messages: Sequence[JsonObject]) -> None:
    """Every tool message answers a call of the assistant message right before its run, once."""
    answered: list[str] = []
    for index, message in enumerate(messages):
        if message["role"] != "tool":
            continue
        owner = next(m for m in reversed(messages[:index]) if m["role"] != "tool")
        assert message["tool_call_id"] in call_ids(owner), (index, messages)
        answered.append(str(message["tool_call_id"]))
    assert len(answered) == len(set(answered)), answered
    assert sorted(answered) == sorted(i for m in messages if m["role"] == "assistant" for i in call_ids(m))


def turn_events(sessions: AgentSessionTestClient, session_id: str, turn_id: str, final_type: str) -> list[AgentEvent]:
    """The turn's events, read once its ``final_type`` event (``turn_completed``/``turn_failed``) is committed."""
    def probe() -> list[AgentEvent] | None:
        events = [event for event in sessions.events(session_id) if event.turn_id == turn_id]
        return events if any(event.type == final_type for event in events) else None

    return poll_until(probe, timeout=sessions.timeout, description=f"the {final_type} event of {turn_id}")


def text_of(events: Sequence[AgentEvent]) -> str:
    """The text the ``text_delta`` events of ``events`` streamed."""
    return "".join(str(event.payload["text"]) for event in events if event.type == "text_delta")


def model_call_failures(events: Sequence[AgentEvent]) -> list[dict[str, object]]:
    """The payloads of the ``model_call_failed`` events of ``events``."""
    return [dict(event.payload) for event in events if event.type == MODEL_CALL_FAILED]


def run_model_final_attempts(server_address: str, session_id: str) -> list[tuple[str, int]]:
    """Each ``RunModel`` execution's ID and final attempt, from its completed or failed ``execute``."""
    return [(entry.step_execution_id, entry.attempt) for entry in read_step_history(server_address, session_id)
            if entry.step_type == "RunModel" and entry.event_type in (EXECUTE_COMPLETED, EXECUTE_FAILED)]


def turn_messages(messages: Sequence[AgentMessage], turn_id: str) -> list[AgentMessage]:
    return [message for message in messages if message.turn_id == turn_id]


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """What ``hold_the_conversation`` leaves for a test's own checks."""

    rejected_turn_error: str
    """The session's ``last_turn_error`` once the provider rejected turn 3 (HTTP 400)."""


def hold_the_conversation(server: OpenAICompatibleServer, sessions: AgentSessionTestClient, session_id: str,
                          runs: ToolRuns, *, system_prompt: str | None) -> Conversation:
    """Hold the five turns of the module docstring in a new session ``session_id``, checking after each what
    the provider received, what the session stored and streamed, and how often ``RunModel`` ran.

    ``server`` answers with ``respond``; ``runs`` records the agent's ``lookup_order``;
    ``system_prompt``: the system message every request starts with (``None``: there is none).
    """
    system = [] if system_prompt is None else ["system"]

    # Turn 1: two sequential lookups, then the answer with both results.
    sessions.start_session(session_id, TWO_LOOKUPS)
    sessions.wait_for_completed_turns(session_id, 1)
    turn_1 = server.requests
    assert len(turn_1) == 3
    assert server.rejections == () and server.responder_errors == ()
    assert all(request["stream"] is True for request in turn_1)  # every adapter streams the model
    assert all(tool_names(request) == ["lookup_order"] for request in turn_1)
    assert [roles(request["messages"]) for request in turn_1] == [
        [*system, "user"], [*system, "user", "assistant", "tool"],
        [*system, "user", "assistant", "tool", "assistant", "tool"]]
    assert system_prompt is None or all(message_text(request["messages"][0]) == system_prompt for request in turn_1)
    third = turn_1[2]["messages"][len(system):]
    assert message_text(third[0]) == TWO_LOOKUPS
    assert [call_ids(third[1]), third[2]["tool_call_id"], message_text(third[2])] == [
        ["call_order_1"], "call_order_1", "order 1 shipped"]
    assert [call_ids(third[3]), third[4]["tool_call_id"], message_text(third[4])] == [
        ["call_order_2"], "call_order_2", "order 2 shipped"]
    assert_each_result_once_after_its_call(third)
    stored = sessions.snapshot(session_id).messages
    assert [message.role for message in stored] == [
        MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL,
        MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]
    assert [stored[2].tool_output, stored[4].tool_output, stored[5].text] == [
        "order 1 shipped", "order 2 shipped", TWO_LOOKUPS_ANSWER]
    assert runs.order_ids == [1, 2]
    assert text_of(turn_events(sessions, session_id, "turn-1", "turn_completed")) == TWO_LOOKUPS_ANSWER

    # Turn 2: the provider answers 500 every time; RunModel tries three times, then the turn fails.
    before = server.request_count
    sessions.send_user_message(session_id, BREAK)
    state = sessions.wait_for_turns(session_id, 2, timeout=FAILED_TURN_TIMEOUT)
    assert (state.completed_turn_count, state.failed_turn_count) == (1, 1)
    assert SERVER_ERROR in (state.last_turn_error or ""), state.last_turn_error
    turn_2 = server.requests[before:]
    assert len(turn_2) == RUN_MODEL_ATTEMPTS
    assert all(message_text(request["messages"][-1]) == BREAK for request in turn_2)
    failures_2 = model_call_failures(turn_events(sessions, session_id, "turn-2", "turn_failed"))
    assert [failure["retrying"] for failure in failures_2] == [True, True, False]
    assert all(SERVER_ERROR in str(failure["error"]) for failure in failures_2)

    # Turn 3: the provider rejects the request (400), which no retry can fix: one attempt, then failed.
    before = server.request_count
    sessions.send_user_message(session_id, BAD_REQUEST)
    state = sessions.wait_for_turns(session_id, 3, timeout=FAILED_TURN_TIMEOUT)
    assert (state.completed_turn_count, state.failed_turn_count) == (1, 2)
    rejected_turn_error = state.last_turn_error or ""
    assert BAD_REQUEST_ERROR in rejected_turn_error, rejected_turn_error
    turn_3 = server.requests[before:]
    assert len(turn_3) == 1
    assert roles(turn_3[0]["messages"])[-2:] == ["user", "user"]  # the failed turn's message, then this one
    failures_3 = model_call_failures(turn_events(sessions, session_id, "turn-3", "turn_failed"))
    assert [failure["retrying"] for failure in failures_3] == [False]
    assert BAD_REQUEST_ERROR in str(failures_3[0]["error"])
    # RunModel-1..3 are turn 1's calls, RunModel-4 is turn 2's (3 attempts), RunModel-5 turn 3's (1 attempt).
    assert run_model_final_attempts(sessions.server_address, session_id) == [
        ("RunModel-1", 1), ("RunModel-2", 1), ("RunModel-3", 1), ("RunModel-4", RUN_MODEL_ATTEMPTS), ("RunModel-5", 1)]

    # Turn 4: a tool turn works after both failures; the history holds the failed turns' messages.
    before = server.request_count
    sessions.send_user_message(session_id, ONE_LOOKUP)
    state = sessions.wait_for_turns(session_id, 4)
    assert (state.completed_turn_count, state.failed_turn_count) == (2, 2)
    assert state.last_turn_error is None
    turn_4 = server.requests[before:]
    assert len(turn_4) == 2
    history = [*system, "user", "assistant", "tool", "assistant", "tool", "assistant", "user", "user", "user"]
    assert [roles(request["messages"]) for request in turn_4] == [history, [*history, "assistant", "tool"]]
    last = turn_4[1]["messages"][len(system):]
    assert [message_text(last[index]) for index in (0, 5, 6, 7, 8)] == [
        TWO_LOOKUPS, TWO_LOOKUPS_ANSWER, BREAK, BAD_REQUEST, ONE_LOOKUP]
    assert [call_ids(last[9]), last[10]["tool_call_id"], message_text(last[10])] == [
        ["call_order_3"], "call_order_3", "order 3 shipped"]
    assert_each_result_once_after_its_call(last)
    assert runs.order_ids == [1, 2, 3]
    stored = sessions.snapshot(session_id).messages
    assert [(message.role, message.text) for message in stored[6:8]] == [
        (MessageRole.USER, BREAK), (MessageRole.USER, BAD_REQUEST)]
    assert [(message.role, message.text or message.tool_output) for message in turn_messages(stored, "turn-4")] == [
        (MessageRole.USER, ONE_LOOKUP), (MessageRole.ASSISTANT, None), (MessageRole.TOOL, "order 3 shipped"),
        (MessageRole.ASSISTANT, "Found it: order 3 shipped.")]
    events_4 = turn_events(sessions, session_id, "turn-4", "turn_completed")
    assert [event.payload["message_count"] for event in events_4 if event.type == "turn_completed"] == [3]

    # Turn 5: a text turn.
    before = server.request_count
    sessions.send_user_message(session_id, THANKS)
    state = sessions.wait_for_completed_turns(session_id, 3)
    assert (state.turn_count, state.failed_turn_count, state.message_count) == (5, 2, 14)
    turn_5 = server.requests[before:]
    assert len(turn_5) == 1 and message_text(turn_5[0]["messages"][-1]) == THANKS
    snapshot = sessions.snapshot(session_id)
    assert snapshot.usage == AgentUsage(requests=6, input_tokens=60, output_tokens=30)  # the 6 answered calls
    assert [(message.role, message.text) for message in turn_messages(snapshot.messages, "turn-5")] == [
        (MessageRole.USER, THANKS), (MessageRole.ASSISTANT, THANKS_ANSWER)]
    assert text_of(turn_events(sessions, session_id, "turn-5", "turn_completed")) == THANKS_ANSWER
    assert all(message.role != MessageRole.USER or message.text != system_prompt for message in snapshot.messages)
    assert runs.order_ids == [1, 2, 3]
    assert server.rejections == () and server.responder_errors == ()
    cancel_a_held_model_call(server, sessions, session_id)
    return Conversation(rejected_turn_error=rejected_turn_error)


def cancel_a_held_model_call(server: OpenAICompatibleServer, sessions: AgentSessionTestClient, session_id: str) -> None:
    """Turn 6: the provider holds the model's HTTP request; the operator cancels the turn, Dex aborts the
    model call and the turn ends canceled. Turn 7: its request carries the cancel note before its message."""
    HELD.reset()
    before = server.request_count
    sessions.send_user_message(session_id, HOLD)
    assert HELD.reached.wait(SESSION_TIMEOUT), "the held request reached the provider"
    try:
        assert sessions.sessions.cancel_turn(session_id, "turn-6", CANCEL_REASON) is True
        state = sessions.wait_for_turns(session_id, 6)
    finally:
        HELD.released.set()
    assert (state.completed_turn_count, state.failed_turn_count, state.canceled_turn_count) == (3, 2, 1)
    assert server.request_count == before + 1, "one request: the cancelled call is not retried"
    assert [event.payload["reason"] for event in sessions.events(session_id)
            if event.type == "dex_agents.turn_canceled"] == [CANCEL_REASON]
    sessions.send_user_message(session_id, THANKS)
    sessions.wait_for_completed_turns(session_id, 4)
    (turn_7,) = server.requests[before + 1:]
    held, note, thanks = turn_7["messages"][-3:]
    assert [held["role"], note["role"], thanks["role"]] == ["user", "user", "user"]
    assert (message_text(held), message_text(thanks)) == (HOLD, THANKS)
    assert message_text(note).startswith("[Dex] The user cancelled the previous turn before it finished.")
    assert f"Reason: {CANCEL_REASON}" in message_text(note)
    assert server.rejections == () and server.responder_errors == ()


__all__ = [
    "BAD_REQUEST",
    "BAD_REQUEST_ERROR",
    "BREAK",
    "CANCEL_REASON",
    "HELD",
    "HOLD",
    "FAILED_TURN_TIMEOUT",
    "MODEL_CALL_FAILED",
    "ONE_LOOKUP",
    "RUN_MODEL_ATTEMPTS",
    "SERVER_ERROR",
    "SESSION_TIMEOUT",
    "THANKS",
    "THANKS_ANSWER",
    "TWO_LOOKUPS",
    "TWO_LOOKUPS_ANSWER",
    "Conversation",
    "JsonObject",
    "ToolRuns",
    "assert_each_result_once_after_its_call",
    "async_openai_client",
    "call_ids",
    "cancel_a_held_model_call",
    "hold_the_conversation",
    "last_turn",
    "lookup_call",
    "lookup_order_function",
    "message_text",
    "model_call_failures",
    "open_session",
    "respond",
    "roles",
    "run_model_final_attempts",
    "text_of",
    "tool_names",
    "turn_events",
    "turn_messages",
]
