"""Unit checks of the Pydantic AI adapter and the demo agent that need no engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, UserPromptPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition

from dex_agents.adapters.pydantic_ai import PydanticAIRunner
from dex_agents.adapters.pydantic_ai.runner import _effect_from_metadata
from dex_agents.demo.support_agent import MissingModelKeyError, build_support_flow
from dex_agents.pure.values import MessageRole, ToolEffect


def test_build_user_message_is_deterministic_and_valid_pydantic_ai_json() -> None:
    runner: PydanticAIRunner[None] = PydanticAIRunner(Agent(TestModel()))
    first, second = runner.build_user_message("hi"), runner.build_user_message("hi")
    assert first == second and first.role == MessageRole.USER and first.text == "hi"
    (message,) = ModelMessagesTypeAdapter.validate_json(first.framework_item)
    assert isinstance(message, ModelRequest)
    assert isinstance(message.parts[0], UserPromptPart) and message.parts[0].content == "hi"


def test_tool_effects_come_from_dex_effect_metadata_then_mcp_annotations() -> None:
    def definition(metadata: dict[str, object] | None) -> ToolDefinition:
        return ToolDefinition(name="t", metadata=metadata)

    assert _effect_from_metadata(definition({"dex_effect": "idempotent_write"})) == ToolEffect.IDEMPOTENT_WRITE
    assert _effect_from_metadata(definition({"annotations": {"readOnlyHint": True}})) == ToolEffect.READ
    assert _effect_from_metadata(definition(None)) is None
    assert _effect_from_metadata(None) == ToolEffect.READ  # unknown tool: fails at once, no approval


def test_a_real_model_without_its_key_names_the_missing_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingModelKeyError, match="OPENAI_API_KEY"):
        build_support_flow(model="openai:gpt-4o", state_directory=tmp_path)
    with pytest.raises(ValueError, match="provider:name"):
        build_support_flow(model="gpt-4o", state_directory=tmp_path)
