"""The demo support agent on the OpenAI Agents SDK: the same conversation as the Pydantic AI demo,
through a session, and a Worker killed during the refund."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from agents import ModelSettings, set_tracing_disabled
from agents.models.interface import ModelTracing

from dex_agents.demo import openai_agents_agent, support_agent
from dex_agents.demo.openai_agents_agent import (
    DEMO_TURNS,
    REFUNDS_LOG,
    MissingModelKeyError,
    build_support_flow,
    check_model,
)
from dex_agents.pure.texts import OUTCOME_UNKNOWN_PREFIX
from dex_agents.pure.values import MessageRole
from dex_agents.testing import FileGate, completed_step_types, read_step_history
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory

set_tracing_disabled(True)


def test_the_demo_is_the_same_agent_as_the_pydantic_ai_demo() -> None:
    for name in ("DEMO_TURNS", "CRASH_GATE_ENV", "REFUNDS_LOG", "REFUND_GATE", "REFUND_AMOUNT", "INSTRUCTIONS"):
        assert getattr(openai_agents_agent, name) == getattr(support_agent, name), name


def test_a_real_model_needs_its_key_and_the_demo_runs_only_openai(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingModelKeyError, match="OPENAI_API_KEY"):
        build_support_flow(model="openai:gpt-4o-mini", state_directory=tmp_path)
    with pytest.raises(ValueError, match="provider:name"):
        check_model("gpt-4o-mini")
    with pytest.raises(ValueError, match="only OpenAI models"):
        build_support_flow(model="anthropic:claude-sonnet-4-5", state_directory=tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # built, never called
    check_model("openai:gpt-4o-mini")
    flow = build_support_flow(model="openai:gpt-4o-mini", state_directory=tmp_path, flow_type="Real")
    assert flow.get_flow_type() == "Real"
    assert openai_agents_agent.build_support_agent(model="openai:gpt-4o-mini", state_directory=tmp_path).model == (
        "gpt-4o-mini")
    monkeypatch.setenv("DEX_AGENTS_DEMO_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("DEX_AGENTS_DEMO_MODEL", "openai:gpt-4o-mini")
    assert openai_agents_agent.support_flow().get_flow_type() == "SupportAgent"


def test_the_demo_conversation_looks_up_then_refunds_once_after_approval(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(state_directory=tmp_path, flow_type=f"OpenAIAgentsDemo{uuid.uuid4().hex[:8]}")
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


def test_a_crash_during_the_refund_records_outcome_unknown_and_the_model_is_told(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    flow_type = f"OpenAIAgentsCrashDemo{uuid.uuid4().hex[:8]}"
    flow = build_support_flow(state_directory=tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    environment = {"TEST_STATE_DIR": str(tmp_path), "TEST_FLOW_TYPE": flow_type}
    worker = killable_worker("tests.adapters.openai_agents_demo_worker",
                             environment={**environment, "DEX_AGENTS_DEMO_CRASH_GATE": "1"})
    session_id = f"s-{uuid.uuid4().hex}"
    sessions.start_session(session_id, DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True)
    gate = FileGate(tmp_path, "refund")
    gate.wait_until_reached()
    worker.kill()
    gate.release()
    killable_worker("tests.adapters.openai_agents_demo_worker",
                    environment={**environment, "DEX_AGENTS_DEMO_CRASH_GATE": "0"})
    sessions.wait_for_completed_turns(session_id, 1)
    snapshot = sessions.snapshot(session_id)
    tool_message = [m for m in snapshot.messages if m.role == MessageRole.TOOL][0]
    assert (tool_message.tool_output or "").startswith(OUTCOME_UNKNOWN_PREFIX)
    assert "cannot tell whether the refund" in (snapshot.messages[-1].text or "")
    assert (tmp_path / REFUNDS_LOG).read_text().splitlines() == ["order=42 amount=19.99"]  # ran exactly once
    assert len(snapshot.tool_calls) == 0


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
