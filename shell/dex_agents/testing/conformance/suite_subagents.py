"""Sub-agents: a parent turn delegates ``BILLING_TASK`` (``ASK_BILLING``) to a child session of another
Flow (the same adapter's), which runs a read and an approved ``non_idempotent_write`` as its own Steps.

* The child's approval is listed and resolved through the parent (``SessionClient.pending_approvals``,
  ``approve``); the parent's turn ends with the child's final text as the tool result; the child's
  usage is in the parent's; ``children`` lists the child; export and replay hold for both.
* A Worker SIGKILLed inside the child's write: the write ran once, the child's model reads its
  outcome unknown, and the parent's turn completes.
* The parent's turn cancelled while the child runs: the child's turn is cancelled too
  (``SessionClient.cancel_turn``), the child's write never runs, the parent goes on.
* The sub-agent's call cancelled (``cancel_tool_call``): the child's turn is cancelled, the parent's
  turn goes on with the cancellation as the call's result.
* The parent stopped while the child waits: Dex alone leaves the child running (a SubFlow outlives its
  parent); ``SessionClient.stop`` stops it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dex import Client, FlowStatus, StopFlowOptions

from dex_agents.client import SessionClient
from dex_agents.client.values import PendingApproval
from dex_agents.pure.machine.texts import OUTCOME_UNKNOWN_PREFIX
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.offline.replay_report import replay_export
from dex_agents.pure.values.session import AgentUsage, ToolCallStatus
from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance
from dex_agents.testing.conformance.harness import ConformanceSession
from dex_agents.testing.conformance.model import arm_gate
from dex_agents.testing.conformance.tools import ASK_BILLING, LOOKUP_ORDER, REFUND_ORDER
from dex_agents.testing.polling import poll_until

T = TypeVar("T")

CHILD_RESULTS = "results: order 17: shipped | order 17: refunded 1999"
"""The child's final text: its round's two results, in call order."""


def _client(session: ConformanceSession) -> SessionClient:
    client: Client = session.sessions.client
    return SessionClient(client, session.sessions.flow, timeout=60.0)


def _child_client(session: ConformanceSession, child_id: str) -> SessionClient:
    """A client of the child's own Flow type: a session's events are kept per Flow type, so a child's
    are read (and exported) through a client of its type; its values and RPCs through any."""
    return SessionClient.connect(session.server_address, _client(session).describe(child_id).flow_type, timeout=60.0)


def _eventually(read: Callable[[], T | None], what: str) -> T:
    return poll_until(read, timeout=60.0, description=what)


def wait_for_child_approval(session: ConformanceSession, client: SessionClient) -> PendingApproval:
    """The child's pending ``refund_order`` interrupt, as the parent lists it."""
    def found() -> PendingApproval | None:
        return next((approval for approval in client.pending_approvals(session.session_id)
                     if approval.interrupt.tool_name == REFUND_ORDER), None)

    return _eventually(found, "the child's refund_order approval listed through the parent")


def _own_usage(session: ConformanceSession) -> AgentUsage:
    """The parent's usage from its own model calls (its ``usage_recorded`` events of ``RunModel``)."""
    usage = AgentUsage()
    for event in session.events():
        if event.type == "usage_recorded" and event.step_execution_id.startswith("RunModel"):
            recorded = event.payload["recorded"]
            counts = {key: int(value) for key, value in dict(recorded).items()}  # type: ignore[arg-type]
            usage = add_agent_usage(usage, AgentUsage(**counts))
    return usage


class SubAgentConformance:
    """A turn that delegates to a sub-agent's child session."""

    def test_a_delegated_turn_runs_the_childs_read_and_approved_write_with_the_approval_through_the_parent(
            self, conformance: Conformance) -> None:
        session = conformance.session(sub_agent=True)
        client = _client(session)
        session.start(script.DELEGATE)
        approval = wait_for_child_approval(session, client)
        child_id = approval.session_id
        assert child_id.startswith(f"SubFlow:{session.session_id}-AwaitSubAgent-")
        assert len(client.pending_interrupts(session.session_id)) == 0  # the parent's own: none
        assert client.approve(session.session_id, approval.interrupt.interrupt_id)  # routed to the child
        assert session.wait_for_turns(1).completed_turn_count == 1
        assert session.messages()[-1].text == script.RESULTS_PREFIX + CHILD_RESULTS
        assert session.tool_runs(LOOKUP_ORDER) == ['{"order_id": 17}']
        assert session.tool_runs(REFUND_ORDER) == ['{"amount": 1999, "order_id": 17}']
        assert [entry.flow_id for entry in client.children(session.session_id)] == [child_id]
        assert client.describe(child_id).status is FlowStatus.COMPLETED  # its one turn ended its Flow
        child = client.snapshot(child_id)
        assert child.state is not None
        assert child.state.parent_session_id == session.session_id and child.state.completed_turn_count == 1
        assert child.messages[-1].text == CHILD_RESULTS
        child_steps = session.steps_of(child_id)
        assert {"CallTool", "AwaitToolApproval", "CallSingleAttemptTool"} <= set(child_steps)
        assert "AwaitSubAgent" in session.steps()
        parent = client.snapshot(session.session_id)
        assert child.usage.requests >= 2
        assert parent.usage == add_agent_usage(_own_usage(session), child.usage)  # rolled up
        ended = [event for event in session.events() if event.type == "dex_agents.sub_agent_ended"]
        assert [(event.payload["child_session_id"], event.payload["child_status"]) for event in ended] == [
            (child_id, "COMPLETED")]
        with _child_client(session, child_id) as child_client:
            child_events = [item.event.type for item in child_client.events(child_id).events]
            assert child_events.count("tool_call_started") == 2 and "interrupt_resolved" in child_events
            for reader, session_id in ((client, session.session_id), (child_client, child_id)):  # export + replay
                document = reader.export(session_id)
                report = replay_export(document).unwrap()
                assert report.identical and report.snapshot == reader.snapshot(session_id), report.describe()
                assert document.events, f"the export of {session_id} holds its events"

    def test_a_worker_killed_inside_the_childs_write_ran_it_once_and_the_parents_turn_completes(
            self, conformance: Conformance) -> None:
        session = conformance.session(sub_agent=True, worker_in_child=True)
        client = _client(session)
        gate = arm_gate(session.state_directory, f"{REFUND_ORDER}-after")
        session.start_worker()
        session.start(script.DELEGATE)
        approval = wait_for_child_approval(session, client)
        assert client.approve(session.session_id, approval.interrupt.interrupt_id)
        gate.wait_until_reached()
        with _child_client(session, approval.session_id) as child_client:
            _eventually(lambda: True if any(item.event.type == "tool_call_started" and item.event.payload.get(
                "tool_name") == REFUND_ORDER for item in child_client.events(approval.session_id).events) else None,
                        "the child's tool_call_started of refund_order committed")
        session.kill_worker()
        gate.release()
        session.start_worker()
        assert session.wait_for_turns(1).completed_turn_count == 1
        assert len(session.tool_runs(REFUND_ORDER)) == 1
        child = client.snapshot(approval.session_id)
        refund = [call for call in child.tool_calls if call.tool_name == REFUND_ORDER]
        assert refund == [] or refund[0].status is ToolCallStatus.OUTCOME_UNKNOWN  # records end with the turn
        answer = session.messages()[-1].text or ""
        assert OUTCOME_UNKNOWN_PREFIX in answer and "order 17: shipped" in answer
        calls = client.snapshot(session.session_id)
        assert calls.state is not None and calls.state.completed_turn_count == 1 and ASK_BILLING not in [c.tool_name for c in calls.tool_calls]

    def test_cancelling_the_parents_turn_while_the_child_runs_cancels_the_childs_turn(
            self, conformance: Conformance) -> None:
        session = conformance.session(sub_agent=True)
        client = _client(session)
        session.start(script.DELEGATE)
        child_id = wait_for_child_approval(session, client).session_id
        state = client.state(session.session_id)
        assert state is not None and state.current_turn_id is not None
        assert client.cancel_turn(session.session_id, state.current_turn_id, "the customer hung up")

        def canceled(session_id: str) -> bool | None:
            ended = client.state(session_id)
            return True if ended is not None and ended.canceled_turn_count == 1 and ended.current_turn_id is None \
                else None

        _eventually(lambda: canceled(session.session_id), "the parent's turn ended canceled")
        _eventually(lambda: canceled(child_id), "the child's turn ended canceled")
        _eventually(lambda: True if client.describe(child_id).status is FlowStatus.COMPLETED else None,
                    "the child session completed its Flow")
        assert len(session.tool_runs(REFUND_ORDER)) == 0 and len(client.pending_approvals(session.session_id)) == 0
        finished = [event.payload["status"] for event in session.events()
                    if event.type == "tool_call_finished" and event.payload["tool_name"] == ASK_BILLING]
        assert finished == ["outcome_unknown"]  # the sub-agent's effect: its strongest tool's, a write
        assert session.send(script.HELLO)  # the parent goes on
        assert session.wait_for_turns(1).completed_turn_count == 1

    def test_cancelling_the_sub_agent_call_cancels_the_childs_turn_and_the_parents_turn_goes_on(
            self, conformance: Conformance) -> None:
        session = conformance.session(sub_agent=True)
        client = _client(session)
        session.start(script.DELEGATE)
        child_id = wait_for_child_approval(session, client).session_id
        call = script.call_id(script.DELEGATE, 0, 0)
        assert client.cancel_tool_call(session.session_id, call, "billing is closed today")
        assert session.wait_for_turns(1).completed_turn_count == 1  # the parent's turn goes on
        child = _eventually(lambda: ended if (ended := client.state(child_id)) is not None
                            and ended.canceled_turn_count == 1 else None, "the child's turn ended canceled")
        assert (child.parent_session_id, child.parent_tool_call_id) == (session.session_id, call)
        assert len(session.tool_runs(REFUND_ORDER)) == 0
        assert "billing is closed today" in (session.messages()[-1].text or "")

    def test_stopping_the_parent_while_the_child_waits(self, conformance: Conformance) -> None:
        """Dex's own stop leaves the child running (a SubFlow outlives its parent); ``SessionClient.stop``
        stops the child sessions too."""
        for cascade in (False, True):
            session = conformance.session(sub_agent=True)
            client = _client(session)
            session.start(script.DELEGATE)
            child_id = wait_for_child_approval(session, client).session_id
            if cascade:
                client.stop(session.session_id, "the customer hung up")
            else:
                session.sessions.client.stop_flow(session.session_id, StopFlowOptions())
            assert client.is_stopped(session.session_id)
            child_status = client.describe(child_id).status
            assert (child_status is FlowStatus.RUNNING) is not cascade, child_status
            assert len(session.tool_runs(REFUND_ORDER)) == 0


__all__ = ["CHILD_RESULTS", "SubAgentConformance", "wait_for_child_approval"]
