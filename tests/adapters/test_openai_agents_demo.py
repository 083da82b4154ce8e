"""What only the OpenAI Agents SDK demo does (the tests every demo shares are ``test_demo_agents``):
the SDK agent on a real model's name, and the scripted ``Model``'s stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agents import ModelSettings, set_tracing_disabled
from agents.models.interface import ModelTracing

from dex_agents.demo import openai_agents_agent

set_tracing_disabled(True)


def test_a_real_model_is_the_sdk_agent_s_model_name_and_read_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # built, never called
    assert openai_agents_agent.build_support_agent(model="openai:gpt-4o-mini", state_directory=tmp_path).model == (
        "gpt-4o-mini")
    monkeypatch.setenv("DEX_AGENTS_DEMO_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("DEX_AGENTS_DEMO_MODEL", "openai:gpt-4o-mini")
    assert openai_agents_agent.support_flow().get_flow_type() == "SupportAgent"


def test_the_scripted_model_streams_its_text_word_by_word() -> None:
    async def events() -> list[object]:
        stream = openai_agents_agent.ScriptedSupportModel().stream_response(
            None, [{"type": "message", "role": "user", "content": "hi"}], ModelSettings(), [], None, [],
            ModelTracing.DISABLED, previous_response_id=None, conversation_id=None, prompt=None)
        return [event async for event in stream]

    streamed = asyncio.run(events())
    deltas = [getattr(event, "delta", "") for event in streamed if getattr(event, "type", "") == "response.output_text.delta"]
    assert "".join(deltas) == "Happy to help. Ask me about an order or a refund." and len(deltas) == 11
    assert getattr(streamed[-1], "type", None) == "response.completed"
