"""A session across continue-as-new rollovers (issue 24): the Flow ID stays, a new run starts, and the
session goes on as if nothing happened: its messages, a pending approval, a queued message, a message
receipt and the event Stream (and a cursor into it) survive, later turns (tool turns included)
complete, and an export reads every run, so a replay reproduces the session. Rollovers are triggered with
the Client (``trigger_continue_as_new``), so the test waits on committed values, never on time."""

from __future__ import annotations

from pathlib import Path

from dex_agents.pure.offline.replay_report import replay_export
from dex_agents.pure.values.session import AgentStatus, MessageRole, ToolCallStatus
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import (
    READ_POLICY,
    WRITE_POLICY,
    answer_tool,
    call,
    new_session_id,
    scripted_runner,
    session_flow,
    tool_log,
)

SCRIPT = {
    "hello": (ScriptedModelCall(text="Hello!"),),
    "look up 42": (ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=42),)),
                   ScriptedModelCall(text="Order 42 ships today.")),
    "refund 42": (ScriptedModelCall(tool_calls=(call("call-refund", "refund_order", order_id=42),)),
                  ScriptedModelCall(text="Refunded.")),
    "thanks": (ScriptedModelCall(text="You are welcome."),),
}
TOOLS = {"lookup_order": answer_tool("ships today"), "refund_order": answer_tool("refund rf_1 made")}


def test_a_session_goes_on_across_rollovers_with_its_approval_queue_and_events(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, SCRIPT, TOOLS), prefix="Rollover",
                        tool_policies={"lookup_order": READ_POLICY, "refund_order": WRITE_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    client = environment.client

    first_run = sessions.start_session(session_id, "hello")
    sessions.wait_for_completed_turns(session_id, 1)
    cursor = sessions.sessions.events(session_id).cursor
    client.trigger_continue_as_new(session_id)
    second_run = client.describe_flow(session_id).run_id
    assert second_run != first_run

    assert sessions.sessions.send(session_id, "look up 42", message_id="m-look-up")
    sessions.wait_for_completed_turns(session_id, 2)
    client.trigger_continue_as_new(session_id)
    assert sessions.sessions.send(session_id, "look up 42", message_id="m-look-up")  # its receipt carried over
    later = sessions.sessions.events(session_id, cursor).events
    assert [item.event.turn_id for item in later if item.event.type == "turn_completed"] == ["turn-2"]
    sessions.send_user_message(session_id, "refund 42")
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    sessions.send_user_message(session_id, "thanks")  # queued behind the running turn

    client.trigger_continue_as_new(session_id)  # with an approval pending and a message queued
    assert client.describe_flow(session_id).run_id not in (first_run, second_run)
    snapshot = sessions.snapshot(session_id)
    assert [i.interrupt_id for i in snapshot.pending_interrupts] == [interrupt.interrupt_id]
    assert snapshot.queued_message_count == 1

    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, True)
    state = sessions.wait_for_completed_turns(session_id, 4)
    assert state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    runs = tool_log(tmp_path).entries()
    assert [run.split(":")[0] for run in runs] == ["lookup_order", "refund_order"], "each tool ran once"

    snapshot = sessions.snapshot(session_id)
    users = [m.text for m in snapshot.messages if m.role is MessageRole.USER]
    assert users == ["hello", "look up 42", "refund 42", "thanks"]
    assert [m.sequence for m in snapshot.messages] == list(range(1, len(snapshot.messages) + 1))
    assert snapshot.usage.requests == 6
    events = sessions.events(session_id)
    assert [e.turn_id for e in events if e.type == "turn_completed"] == ["turn-1", "turn-2", "turn-3", "turn-4"]
    finished = [e.payload["status"] for e in events if e.type == "tool_call_finished"]
    assert finished == [ToolCallStatus.SUCCEEDED.value, ToolCallStatus.SUCCEEDED.value]

    document = sessions.sessions.export(session_id)  # every run's history, oldest first
    assert document.session.run_id == client.describe_flow(session_id).run_id
    assert [step.step_type for step in document.steps].count("RunModel") == 6
    report = replay_export(document).unwrap()
    assert report.identical, report.describe()
