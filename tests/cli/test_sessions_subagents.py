"""``dex-agents sessions show`` and ``sessions approve`` of a session whose turn delegates to a sub-agent
(the demo's support agent and its billing agent, served in this process): ``show`` lists the child
session and the approval it waits for; ``approve`` through the parent resolves the child's interrupt;
the child's ``show`` names its parent."""

from __future__ import annotations

from pathlib import Path

from dex_agents.demo.subagent_agent import build_support_flows
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import sessions_cli
from tests.shell.scenario_flows import wait_for_pending_approval


def test_show_lists_the_child_and_approve_through_the_parent_resolves_its_interrupt(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    tmp_path: Path,
) -> None:
    parent, child = build_support_flows(state_directory=tmp_path)
    sessions = agent_sessions(agent_environment([parent, child]), parent)
    cli = sessions_cli(dex_engine.server_address)
    sessions.start_session("cli-sub-1", "Please refund order 42")
    client = sessions.sessions
    approval = wait_for_pending_approval(client, "cli-sub-1")
    child_id = approval.session_id
    status, out, err = cli("show", "cli-sub-1")
    assert status == 0, err
    assert f"  {child_id} (BillingAgent) running" in out
    assert f"  pending in {child_id}: {approval.interrupt.interrupt_id} refund_order(" in out
    status, out, err = cli("approve", "cli-sub-1", approval.interrupt.interrupt_id)
    assert (status, out.strip()) == (0, f"interrupt {approval.interrupt.interrupt_id} approved"), err
    assert sessions.wait_for_completed_turns("cli-sub-1", 1).completed_turn_count == 1
    status, out, err = cli("show", "cli-sub-1")
    assert status == 0, err
    assert f"  {child_id} (BillingAgent) completed" in out and f"pending in {child_id}" not in out
    assert "The billing agent answered: Done: Refunded 19.99 for order 42." in out
    status, out, err = cli("show", child_id, "--flow-type", "BillingAgent")
    assert status == 0, err
    assert "parent session: cli-sub-1 (this is a sub-agent's child session)" in out
    assert (tmp_path / "refunds.log").read_text().count("order=42") == 1
