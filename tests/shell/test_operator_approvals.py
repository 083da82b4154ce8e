"""Approvals bound to their arguments and editable (issue 25, item 3), on an in-process Worker and the
local engine through the real SDK: an edited approval runs the edit once under the same idempotency key
with its audit; a stale ``arguments_sha256`` is refused; ``extend_interrupt_deadline`` moves a deadline."""

from __future__ import annotations

from pathlib import Path

import pytest

from dex_agents.client import SessionRefusedError
from dex_agents.client.retries import outcome_options
from dex_agents.pure.machine.deadlines import parse_instant
from dex_agents.pure.offline.replay_report import replay_export
from dex_agents.pure.values.rpc import ResolveToolOutcomeInput
from dex_agents.pure.values.runner import ReconciledOutcome, ToolPolicy
from dex_agents.pure.values.session import ToolCallStatus, ToolEffect, text_sha256
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import (
    LOST_REFUND,
    WRITE_POLICY,
    answer_tool,
    call,
    completed_steps,
    lost_refund_flow,
    new_session_id,
    of_type,
    scripted_runner,
    session_flow,
    tool_log,
)

REFUND = "Refund order 42"
SCRIPT = {REFUND: (ScriptedModelCall(tool_calls=(call("call-refund", "refund", order_id=42),)),
                   ScriptedModelCall(text="Handled."))}
EDITED = '{"order_id":7}'


def test_an_edited_approval_runs_the_edit_once_with_its_audit_and_a_stale_hash_is_refused(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, SCRIPT, {"refund": answer_tool("refunded")}), prefix="Edited",
                        tool_policies={"refund": WRITE_POLICY}, interrupt_deadline_ms=3_600_000)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, REFUND)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    assert interrupt.arguments_sha256 == text_sha256(interrupt.arguments)
    client = sessions.sessions

    with pytest.raises(Exception, match="the approver saw other arguments"):
        client.resolve_interrupt(session_id, interrupt.interrupt_id, True, edited_arguments=EDITED,
                                 arguments_sha256=text_sha256('{"order_id":4200}'), approver="ana")
    assert [i.interrupt_id for i in client.pending_interrupts(session_id)] == [interrupt.interrupt_id]

    assert interrupt.deadline is not None
    assert client.extend_interrupt_deadline(session_id, interrupt.interrupt_id, 7_200_000) is True
    (moved,) = client.pending_interrupts(session_id)
    assert moved.deadline is not None and parse_instant(moved.deadline) > parse_instant(interrupt.deadline)

    assert client.resolve_interrupt(session_id, interrupt.interrupt_id, True, edited_arguments=EDITED,
                                    arguments_sha256=interrupt.arguments_sha256, approver="ana",
                                    reason="wrong order") is True
    sessions.wait_for_completed_turns(session_id, 1)
    assert client.resolve_interrupt(session_id, interrupt.interrupt_id, True) is False  # consumed once
    assert tool_log(tmp_path).entries() == [f"refund:{session_id}/turn-1/call-refund"]
    (resolved,) = of_type(sessions.events(session_id), "interrupt_resolved")
    payload = resolved.payload
    assert (payload["approver"], payload["reason"], payload["edited_arguments"], payload["original_arguments"]) == (
        "ana", "wrong order", EDITED, interrupt.arguments)
    (result,) = [m for m in client.snapshot(session_id).messages if m.tool_call_id == "call-refund"
                 and m.role.value == "tool"]
    assert result.tool_output is not None and result.tool_output.startswith(
        f"[Dex] ana edited this call's arguments before approving it; it ran with {EDITED}")
    finished = of_type(sessions.events(session_id), "tool_call_finished")
    assert [e.payload["status"] for e in finished] == [ToolCallStatus.SUCCEEDED.value]
    report = replay_export(client.export(session_id)).unwrap()  # the edited approval replays offline
    assert report.identical, report.describe()


def test_a_write_whose_outcome_is_unknown_is_reconciled_before_the_model_sees_it(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """Item 4 (a): the tool raises an unexpected error (its one attempt fails: the outcome is unknown);
    the policy's reconcile finds the refund by its idempotency key; the model reads it succeeded."""
    asked: list[tuple[str, str, str, str]] = []

    def reconcile(tool_name: str, arguments: str, idempotency_key: str, error: str) -> ReconciledOutcome:
        asked.append((tool_name, arguments, idempotency_key, error))
        return ReconciledOutcome.succeeded(f"refund found for {idempotency_key}")

    policy = ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False, reconcile=reconcile)
    flow = lost_refund_flow(tmp_path, prefix="Reconciled", policy=policy)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, LOST_REFUND)
    sessions.wait_for_completed_turns(session_id, 1)
    key = f"{session_id}/turn-1/call-lost"
    assert len(asked) == 1 and asked[0][:3] == ("refund", '{"order_id":9}', key)
    assert "connection reset" in asked[0][3]
    assert tool_log(tmp_path).entries() == [f"refund:{key}"]  # the write ran once, never again
    (settled,) = of_type(sessions.events(session_id), "dex_agents.tool_outcome_settled")
    assert (settled.payload["status"], settled.payload["settled_by"]) == ("succeeded", "reconcile")
    (result,) = [m for m in sessions.snapshot(session_id).messages if m.role.value == "tool"]
    assert result.tool_output is not None and result.tool_output.endswith(f"refund found for {key}")
    assert "settled it as succeeded" in result.tool_output
    assert "ReconcileToolOutcome" in completed_steps(environment.server_address, session_id)


def test_an_operator_settles_an_unknown_outcome_once_and_the_next_model_call_is_told(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """Item 4 (b): the write's one attempt fails, the outcome is unknown (no reconcile); every bad
    resolution is refused with its reason and changes nothing; the operator's is kept with its audit,
    and the next model call reads the settled result and who settled it."""
    flow = lost_refund_flow(tmp_path, prefix="Settled")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    client = sessions.sessions
    session_id = new_session_id()
    sessions.start_session(session_id, LOST_REFUND)
    sessions.wait_for_completed_turns(session_id, 1)
    unknown = client.unknown_outcome(session_id, "call-lost")
    assert unknown is not None and unknown.status is ToolCallStatus.OUTCOME_UNKNOWN  # kept after its turn ended

    with pytest.raises(SessionRefusedError, match="no tool call 'nope' of this session has an unknown outcome"):
        client.resolve_tool_outcome(session_id, "nope", "succeeded", "x", resolver="bo@ops")
    with pytest.raises(ValueError, match="resolver must not be blank"):
        client.resolve_tool_outcome(session_id, "call-lost", "succeeded", "x", resolver=" ")
    with pytest.raises(ValueError, match="status must be 'succeeded' or 'failed'"):
        client.resolve_tool_outcome(session_id, "call-lost", "unknown", "x", resolver="bo@ops")
    blank = ResolveToolOutcomeInput(tool_call_id="call-lost", status="succeeded", output_or_message="x", resolver="")
    with pytest.raises(Exception, match="resolver must name who settles the outcome"):  # the RPC itself refuses too
        sessions.client.invoke_rpc(flow.resolve_tool_outcome, session_id, blank,
                                   options=outcome_options("call-lost"))
    assert client.unknown_outcome(session_id, "call-lost") == unknown  # nothing changed
    assert client.snapshot(session_id).queued_message_count == 0

    assert client.resolve_tool_outcome(session_id, "call-lost", "succeeded", "refund rf_9 found",
                                       resolver="bo@ops", reason="bank statement") is True
    sessions.wait_for_completed_turns(session_id, 2)
    settled = client.unknown_outcome(session_id, "call-lost")
    assert settled is not None and settled.settlement is not None
    assert (settled.status, settled.output, settled.settlement.settled_by, settled.settlement.resolver,
            settled.settlement.reason) == (ToolCallStatus.SUCCEEDED, "refund rf_9 found", "operator", "bo@ops",
                                           "bank statement")
    told = client.snapshot(session_id).messages[-1].text or ""
    assert told.startswith("echo: [Dex] An operator settled the outcome of an earlier tool call, refund "
                           '{"order_id":9} (tool call call-lost), which you were told was unknown.')
    assert "bo@ops settled it as succeeded. Reason: bank statement.\nrefund rf_9 found" in told
    with pytest.raises(SessionRefusedError, match="was already settled as succeeded by bo@ops"):
        client.resolve_tool_outcome(session_id, "call-lost", "failed", "no", resolver="ana")
    assert tool_log(tmp_path).entries() == [f"refund:{session_id}/turn-1/call-lost"]  # its one attempt; never again
    report = replay_export(client.export(session_id)).unwrap()  # the settlement replays offline, write for write
    assert report.identical, report.describe()
