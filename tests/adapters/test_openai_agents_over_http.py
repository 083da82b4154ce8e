"""One durable session through the OpenAI Agents SDK adapter, its model the SDK's real
``OpenAIChatCompletionsModel`` (the conversation and its checks: ``tests.adapters.over_http_support``;
the fixtures: ``conftest``)."""

from __future__ import annotations

import uuid
from typing import Final

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from dex_agents.adapters.openai_agents import create_openai_agents_session_flow, with_tool_effect
from dex_agents.testing.openai_compatible import OpenAICompatibleServer
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.adapters.over_http_support import ToolRuns, hold_the_conversation, lookup_order_function, open_session

INSTRUCTIONS: Final = "You are a support agent. Use lookup_order for order questions."

set_tracing_disabled(True)


def test_a_session_over_openai_chat_completions_http(
        chat_server: OpenAICompatibleServer, openai_client: AsyncOpenAI,
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    runs = ToolRuns()
    model = OpenAIChatCompletionsModel("gpt-4o-mini", openai_client=openai_client)
    agent: Agent[None] = Agent(name="support", instructions=INSTRUCTIONS, model=model,
                               model_settings=ModelSettings(include_usage=True),
                               tools=[with_tool_effect(function_tool(lookup_order_function(runs)), "read")])
    flow = create_openai_agents_session_flow(agent, f"OpenAIAgentsHttp{uuid.uuid4().hex[:8]}")
    sessions, session_id = open_session(agent_environment, agent_sessions, flow)

    conversation = hold_the_conversation(chat_server, sessions, session_id, runs, system_prompt=INSTRUCTIONS)
    assert "BadRequestError" in conversation.rejected_turn_error
    stored = sessions.snapshot(session_id).messages
    assert [stored[1].tool_name, stored[1].tool_arguments] == ["lookup_order", '{"order_id": 1}']
