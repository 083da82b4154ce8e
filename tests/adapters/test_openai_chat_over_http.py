"""Durable sessions through the ``openai_chat`` adapter, its model the real ``openai.AsyncOpenAI`` client
speaking HTTP to ``OpenAICompatibleServer`` (the conversation and its checks:
``tests.adapters.over_http_support``; the fixtures: ``conftest``). The second session streams reasoning
and calls a sync tool whose result is not text; the responder answers it as it answers the conversation.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Annotated, Final

import pytest
from openai import AsyncOpenAI
from pydantic import Field

from dex_agents.adapters.openai_chat import create_openai_chat_session_flow, tool
from dex_agents.pure.values.session import MessageRole
from dex_agents.testing.openai_compatible import ChatErrorReply, ChatReply, ChatRequest, ChatToolCall, OpenAICompatibleServer
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.adapters import over_http_support
from tests.adapters.over_http_support import (
    ToolRuns,
    assert_each_result_once_after_its_call,
    hold_the_conversation,
    last_turn,
    lookup_order_function,
    open_session,
    roles,
    turn_events,
)

INSTRUCTIONS: Final = "You are the support agent of an online shop."
WHY_LATE: Final = "Why is order 8 late?"
THINKING: Final = "The customer asks about a delay; I look the order up first."


def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
    """``over_http_support.respond``, and the session with reasoning and a sync tool."""
    prompt, rounds, results = last_turn(request)
    if prompt == WHY_LATE:
        if rounds == 0:
            return ChatReply(reasoning=THINKING, tool_calls=(ChatToolCall("call_details", "order_details",
                                                                          json.dumps({"order_id": 8})),))
        return ChatReply(text=f"Details: {results[0]}")
    return over_http_support.respond(request)


@pytest.fixture
def chat_server() -> Iterator[OpenAICompatibleServer]:
    """The model provider, answering with this module's ``respond`` (overrides ``conftest``'s)."""
    with OpenAICompatibleServer(respond) as server:
        yield server


def test_a_session_over_openai_chat_completions_http(
        chat_server: OpenAICompatibleServer, openai_client: AsyncOpenAI,
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    runs = ToolRuns()
    lookup_order = tool(effect="read")(lookup_order_function(runs))
    flow = create_openai_chat_session_flow(openai_client, "gpt-4o-mini", [lookup_order],
                                           f"OpenAIChatHttp{uuid.uuid4().hex[:8]}", instructions=INSTRUCTIONS)
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)

    conversation = hold_the_conversation(chat_server, sessions, session_id, runs, system_prompt=INSTRUCTIONS)
    assert "BadRequestError" in conversation.rejected_turn_error
    stored = sessions.snapshot(session_id).messages
    assert [stored[1].tool_name, stored[1].tool_arguments] == ["lookup_order", '{"order_id": 1}']
    offered = chat_server.requests[0]["tools"][0]["function"]
    assert offered["description"] == "Look up an order's shipping status."
    assert offered["parameters"]["properties"]["order_id"]["type"] == "integer"
    assert chat_server.requests[0]["stream_options"] == {"include_usage": True}


def test_reasoning_streams_and_a_sync_tool_runs_on_a_thread(
        chat_server: OpenAICompatibleServer, openai_client: AsyncOpenAI,
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    threads: list[str] = []

    @tool(effect="read")
    def order_details(order_id: Annotated[int, Field(description="The order number.")]) -> dict[str, object]:
        """An order's carrier and delay."""
        threads.append(threading.current_thread().name)
        return {"order_id": order_id, "carrier": "Parcelo", "delay_days": 2}

    flow = create_openai_chat_session_flow(openai_client, "gpt-4o-mini", [order_details],
                                           f"OpenAIChatHttpSync{uuid.uuid4().hex[:8]}")
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)
    sessions.start_session(session_id, WHY_LATE)
    sessions.wait_for_completed_turns(session_id, 1)

    first, second = chat_server.requests
    assert first["tools"][0]["function"]["parameters"]["properties"]["order_id"]["description"] == "The order number."
    assert roles(second["messages"]) == ["user", "assistant", "tool"]
    assert_each_result_once_after_its_call(second["messages"])
    assert "reasoning_content" not in second["messages"][1]  # reasoning is streamed, not sent back
    output = '{"order_id":8,"carrier":"Parcelo","delay_days":2}'
    assert second["messages"][2]["content"] == output
    assert len(threads) == 1 and threads[0].startswith("asyncio_")  # the loop's default executor
    stored = sessions.snapshot(session_id).messages
    assert [(message.role, message.tool_name) for message in stored[1:3]] == [
        (MessageRole.ASSISTANT, "order_details"), (MessageRole.TOOL, "order_details")]
    assert stored[-1].text == f"Details: {output}"
    events = turn_events(sessions, session_id, "turn-1", "turn_completed")
    assert "".join(str(event.payload["text"]) for event in events if event.type == "reasoning_delta") == THINKING
    assert chat_server.rejections == () and chat_server.responder_errors == ()
