"""One durable session through the Pydantic AI adapter, its model Pydantic AI's real ``OpenAIChatModel``
(the conversation and its checks: ``tests.adapters.over_http_support``; the fixtures: ``conftest``)."""

from __future__ import annotations

import uuid

from openai import AsyncOpenAI
from pydantic_ai import Agent, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
from dex_agents.testing.openai_compatible import OpenAICompatibleServer
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.adapters.over_http_support import ToolRuns, hold_the_conversation, lookup_order_function, open_session


def test_a_session_over_openai_chat_completions_http(
        chat_server: OpenAICompatibleServer, openai_client: AsyncOpenAI,
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    runs = ToolRuns()
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=openai_client))
    agent: Agent[None, str] = Agent(model, tools=[Tool(lookup_order_function(runs),
                                                       metadata={DEX_EFFECT_METADATA_KEY: "read"})])
    flow = create_pydantic_ai_session_flow(agent, f"PydanticAIHttp{uuid.uuid4().hex[:8]}")
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)

    hold_the_conversation(chat_server, sessions, session_id, runs, system_prompt=None)
