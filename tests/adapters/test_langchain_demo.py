"""The demo support agent on LangChain: the same conversation as the Pydantic AI demo, through a session."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from dex_agents.demo import langchain_agent, support_agent
from dex_agents.demo.langchain_agent import DEMO_TURNS, REFUNDS_LOG, MissingModelKeyError, build_support_flow
from dex_agents.pure.values import MessageRole
from dex_agents.testing import completed_step_types, read_step_history
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory


def test_the_demo_is_the_same_agent_as_the_pydantic_ai_demo() -> None:
    for name in ("DEMO_TURNS", "CRASH_GATE_ENV", "REFUNDS_LOG", "REFUND_GATE", "REFUND_AMOUNT", "INSTRUCTIONS"):
        assert getattr(langchain_agent, name) == getattr(support_agent, name), name


def test_a_real_model_needs_its_key_and_the_demo_runs_only_openai(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingModelKeyError, match="OPENAI_API_KEY"):
        build_support_flow(model="openai:gpt-4o-mini", state_directory=tmp_path)
    with pytest.raises(ValueError, match="provider:name"):
        build_support_flow(model="gpt-4o-mini", state_directory=tmp_path)
    with pytest.raises(ValueError, match="only OpenAI models"):
        build_support_flow(model="anthropic:claude-sonnet-4-5", state_directory=tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # built, never called
    assert build_support_flow(model="openai:gpt-4o-mini", state_directory=tmp_path, flow_type="Real").get_flow_type() == "Real"


def test_the_demo_conversation_looks_up_then_refunds_once_after_approval(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(state_directory=tmp_path, flow_type=f"LangChainDemo{uuid.uuid4().hex[:8]}")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = f"s-{uuid.uuid4().hex}"

    sessions.start_session(session_id, DEMO_TURNS[0])
    sessions.wait_for_completed_turns(session_id, 1)
    assert completed_step_types(read_step_history(environment.server_address, session_id)) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"]
    snapshot = sessions.snapshot(session_id)
    assert [m.role for m in snapshot.messages] == [
        MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]
    assert snapshot.messages[1].tool_name == "lookup_order"
    assert snapshot.messages[1].tool_arguments == '{"order_id":42}'
    assert "shipped" in (snapshot.messages[3].text or "")
    deltas = [event for event in sessions.events(session_id) if event.type == "text_delta"]
    assert "".join(str(event.payload["text"]) for event in deltas) == snapshot.messages[3].text

    sessions.send_user_message(session_id, DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    assert (tmp_path / REFUNDS_LOG).exists() is False
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True)
    sessions.wait_for_completed_turns(session_id, 2)
    snapshot = sessions.snapshot(session_id)
    assert (snapshot.messages[-1].text or "").startswith("Done: Refunded 19.99")
    assert (tmp_path / REFUNDS_LOG).read_text().splitlines() == ["order=42 amount=19.99"]
    assert snapshot.usage.requests == 4 and snapshot.usage.input_tokens > 0
