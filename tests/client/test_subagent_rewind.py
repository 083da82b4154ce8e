"""A sub-agent call after a rewind starts a new child session: Dex numbers the Step executions of the
new run from the rewind's point again, so the call's SubFlow has the ID of the removed call's child;
the parent's wait replaces that child (``SubFlowReusePolicy.ALWAYS_RESTART``) instead of taking the
removed call's result. Before the fix the second refund was never asked for nor run, and the model
read the first child's answer."""

from __future__ import annotations

from pathlib import Path

from dex_agents.demo.subagent_agent import BILLING_ANSWER, build_support_flows
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import wait_for_pending_approval

REFUND = "Please refund order 42"


def test_a_sub_agent_call_after_a_rewind_runs_a_new_child(agent_environment: AgentEnvironmentFactory,
                                                           agent_sessions: AgentSessionsFactory,
                                                           tmp_path: Path) -> None:
    parent, child = build_support_flows(state_directory=tmp_path)
    sessions = agent_sessions(agent_environment([parent, child]), parent)
    client = sessions.sessions
    session_id = "rewound-parent"

    def refund_through_the_billing_agent(turns: int) -> str:
        approval = wait_for_pending_approval(client, session_id)
        assert approval.session_id != session_id
        assert client.approve(session_id, approval.interrupt.interrupt_id)
        sessions.wait_for_completed_turns(session_id, turns)
        return approval.session_id

    sessions.start_session(session_id, "Where is order 42?")
    sessions.wait_for_completed_turns(session_id, 1)
    assert client.send(session_id, REFUND)
    first_child = refund_through_the_billing_agent(2)
    first_run = client.describe(first_child).run_id
    client.rewind(session_id, 1, reason="refund again")
    assert client.send(session_id, REFUND)
    second_child = refund_through_the_billing_agent(2)
    assert second_child == first_child, "the same Step execution ID in the new run: the same SubFlow ID"
    assert (tmp_path / "refunds.log").read_text().count("order=42") == 2, "the new child ran the refund"
    assert client.describe(second_child).run_id != first_run, "a new run of the child replaced the removed one"
    last = client.snapshot(session_id).messages[-1].text or ""
    assert last.startswith(BILLING_ANSWER)
