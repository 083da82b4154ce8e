"""Sessions that outgrow the model's context window (issue 24), on every adapter, through the real
``openai`` client against ``OpenAICompatibleServer`` given a 3,000-token window.

With the default compaction, 12 turns of 2,000-character messages all complete, the transcript keeps
all 12 messages whole, and a short 13th turn completes; the model saw a summary once the history was
compacted. With ``compaction=None`` the session fails as the spec's sessions do: once the history
outgrows the window, every turn fails with the provider's ``context_length_exceeded`` error, the
short last one included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import pytest
from agents import Agent as OpenAIAgent
from agents import OpenAIChatCompletionsModel, set_tracing_disabled
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents.adapters.langchain import create_langchain_session_flow
from dex_agents.adapters.openai_agents import create_openai_agents_session_flow
from dex_agents.adapters.openai_chat import create_openai_chat_session_flow
from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow
from dex_agents.pure.machine.compaction import SUMMARY_PREFIX, TRANSCRIPT_HEADER, CompactionPolicy
from dex_agents.pure.values.session import AgentStatus, MessageRole
from dex_agents.shell.flow import DEFAULT_COMPACTION, AgentSessionFlow
from dex_agents.testing.openai_compatible import (
    ChatErrorReply,
    ChatReply,
    ChatRequest,
    OpenAICompatibleServer,
    with_context_window,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.adapters.over_http_support import async_openai_client, last_turn, message_text, open_session

WINDOW_TOKENS: Final = 3_000
LONG_TURNS: Final = 12
MESSAGE_CHARACTERS: Final = 2_000
SHORT_MESSAGE: Final = "Thanks, that is all."
SUMMARY: Final = "The user sent long messages numbered so far; the assistant acknowledged each one."
INSTRUCTIONS: Final = "You acknowledge each message."

FlowFactory = Callable[[AsyncOpenAI, OpenAICompatibleServer, str, CompactionPolicy | None], AgentSessionFlow]


def long_message(number: int) -> str:
    """The ``number``-th long user message: 2,000 characters."""
    head = f"Message {number}: "
    return head + ("lorem ipsum " * MESSAGE_CHARACTERS)[: MESSAGE_CHARACTERS - len(head)]


def respond(request: ChatRequest) -> ChatReply | ChatErrorReply:
    """A summary for a summarization call (its user message is a transcript), else an acknowledgement."""
    prompt, _rounds, _results = last_turn(request)
    if prompt.startswith(TRANSCRIPT_HEADER):
        return ChatReply(text=SUMMARY)
    return ChatReply(text=f"Received: {prompt[:10]}")


def pydantic_ai_flow(client: AsyncOpenAI, _server: OpenAICompatibleServer, flow_type: str,
                     compaction: CompactionPolicy | None) -> AgentSessionFlow:
    agent = PydanticAgent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
                          instructions=INSTRUCTIONS)
    return create_pydantic_ai_session_flow(agent, flow_type, compaction=compaction)


def openai_agents_flow(client: AsyncOpenAI, _server: OpenAICompatibleServer, flow_type: str,
                       compaction: CompactionPolicy | None) -> AgentSessionFlow:
    set_tracing_disabled(True)
    agent = OpenAIAgent(name="Acknowledger", instructions=INSTRUCTIONS,
                        model=OpenAIChatCompletionsModel("gpt-4o-mini", openai_client=client))
    return create_openai_agents_session_flow(agent, flow_type, compaction=compaction)


def langchain_flow(_client: AsyncOpenAI, server: OpenAICompatibleServer, flow_type: str,
                   compaction: CompactionPolicy | None) -> AgentSessionFlow:
    model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="test",  # type: ignore[arg-type]
                       max_retries=0)
    return create_langchain_session_flow(model, [], flow_type, system_prompt=INSTRUCTIONS, compaction=compaction)


def openai_chat_flow(client: AsyncOpenAI, _server: OpenAICompatibleServer, flow_type: str,
                     compaction: CompactionPolicy | None) -> AgentSessionFlow:
    return create_openai_chat_session_flow(client, "gpt-4o-mini", [], flow_type, instructions=INSTRUCTIONS,
                                           compaction=compaction)


FLOWS: Final[dict[str, FlowFactory]] = {
    "pydantic_ai": pydantic_ai_flow,
    "openai_agents": openai_agents_flow,
    "langchain": langchain_flow,
    "openai_chat": openai_chat_flow,
}


@pytest.fixture
def small_window_server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(with_context_window(respond, WINDOW_TOKENS)) as server:
        yield server


@pytest.mark.parametrize("framework", list(FLOWS))
def test_a_session_outlives_the_context_window_with_compaction_and_dies_without(
        framework: str, small_window_server: OpenAICompatibleServer,
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    with async_openai_client(small_window_server) as client:
        compacting = FLOWS[framework](client, small_window_server, f"Long-{framework}", DEFAULT_COMPACTION)
        sessions, session_id = open_session(agent_environment, agent_sessions, compacting)
        sessions.start_session(session_id)
        for number in range(1, LONG_TURNS + 1):
            sessions.send_user_message(session_id, long_message(number))
            state = sessions.wait_for_turns(session_id, number)
            assert state.completed_turn_count == number, (number, state.last_turn_error)
        sessions.send_user_message(session_id, SHORT_MESSAGE)
        state = sessions.wait_for_turns(session_id, LONG_TURNS + 1)
        assert state.completed_turn_count == LONG_TURNS + 1 and state.status is AgentStatus.WAITING_FOR_USER_MESSAGE

        users = [m.text for m in sessions.snapshot(session_id).messages if m.role is MessageRole.USER]
        assert users == [long_message(n) for n in range(1, LONG_TURNS + 1)] + [SHORT_MESSAGE]
        compactions = [e for e in sessions.events(session_id) if e.type == "dex_agents.history_compacted"]
        assert compactions and {e.payload["trigger"] for e in compactions} == {"reactive"}
        last_request = small_window_server.requests[-1]["messages"]
        assert any(message_text(m).startswith(SUMMARY_PREFIX + SUMMARY) for m in last_request), last_request
        assert all(message_text(m) != long_message(1) for m in last_request), "turn 1 is summarized"

        plain = FLOWS[framework](client, small_window_server, f"Plain-{framework}", None)
        sessions, session_id = open_session(agent_environment, agent_sessions, plain)
        sessions.start_session(session_id)
        for number in range(1, LONG_TURNS + 1):
            sessions.send_user_message(session_id, long_message(number))
            sessions.wait_for_turns(session_id, number)
        sessions.send_user_message(session_id, SHORT_MESSAGE)
        state = sessions.wait_for_turns(session_id, LONG_TURNS + 1)
        assert state.completed_turn_count < 6 and state.failed_turn_count == LONG_TURNS + 1 - state.completed_turn_count
        assert "maximum context length is 3000 tokens" in (state.last_turn_error or ""), state.last_turn_error
