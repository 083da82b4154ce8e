"""The demo support agent through a real session: lookup turn, then an approved refund."""

from __future__ import annotations

import uuid
from pathlib import Path

from dex_agents.demo.support_agent import DEMO_TURNS, REFUNDS_LOG, build_support_flow
from dex_agents.pure.values import MessageRole
from dex_agents.testing import completed_step_types, read_step_history
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory


def test_the_demo_conversation_looks_up_then_refunds_once_after_approval(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(state_directory=tmp_path, flow_type=f"SupportDemo{uuid.uuid4().hex[:8]}")
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

    sessions.send_user_message(session_id, DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True)
    sessions.wait_for_completed_turns(session_id, 2)
    snapshot = sessions.snapshot(session_id)
    assert (snapshot.messages[-1].text or "").startswith("Done: Refunded 19.99")
    assert (tmp_path / REFUNDS_LOG).read_text().splitlines() == ["order=42 amount=19.99"]
    assert snapshot.usage.requests == 4
