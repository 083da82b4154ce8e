"""Tool approvals on an in-process Worker: a read that runs while its sibling write waits, rejection,
refused resolutions, and approval deadlines. Deadline tests inject the Worker clock and fire the
deadline Timer with ``skip_timer`` (Dex Timers run on real time), so nothing waits for a deadline."""

from __future__ import annotations

from collections.abc import Mapping, Callable
from pathlib import Path

from dex import StepExecutionId, TimerId
from pyrsistent import pvector

from dex_agents.pure.machine.deadlines import parse_instant
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.machine.texts import describe_tool_call_outcome
from dex_agents.pure.values.session import AgentInterrupt, AgentStatus, MessageRole, ToolCallStatus
from dex_agents.shell import DEADLINE_CONDITION_ID, SessionTiming
from dex_agents.testing import (
    EXECUTE_COMPLETED,
    WAIT_FOR_COMPLETED,
    AgentSessionTestClient,
    FileGate,
    ScriptedModelCall,
    poll_until,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import (
    READ_POLICY,
    WRITE_POLICY,
    OffsetClock,
    answer_tool,
    call,
    completed_steps,
    new_session_id,
    of_type,
    scripted_runner,
    session_flow,
    step_inputs,
    tool_log,
    wait_for_history,
)

DEADLINE_MS = 60_000
PAST_DEADLINE_MS = DEADLINE_MS + 1_000
ANSWER_GATE = "answer"
POLICIES = {"lookup_order": READ_POLICY, "refund": WRITE_POLICY}
TOOLS = {"lookup_order": answer_tool("order 42 ships today"), "refund": answer_tool("refunded")}
REFUND_MESSAGE = "Refund order 42"
REFUND_SCRIPT = {REFUND_MESSAGE: (ScriptedModelCall(tool_calls=(call("call-refund", "refund", order_id=42),)),
                                  ScriptedModelCall(text="Handled.", gate_before_output=ANSWER_GATE))}
TWO_REFUNDS = "Refund orders 1 and 2"
TWO_REFUNDS_SCRIPT = {TWO_REFUNDS: (
    ScriptedModelCall(tool_calls=(call("call-1", "refund", order_id=1), call("call-2", "refund", order_id=2))),
    ScriptedModelCall(text="Handled.", gate_before_output=ANSWER_GATE))}


def spec_payload(payload: Mapping[str, object]) -> dict[str, object]:
    """An ``interrupt_resolved`` payload's spec keys (ours, the audit, are checked in tests/pure)."""
    return {key: payload[key] for key in ("interrupt_id", "approved", "rejection_message")}


def tool_results(sessions: AgentSessionTestClient, session_id: str) -> list[tuple[str | None, str | None]]:
    return [(m.tool_call_id, m.tool_output) for m in sessions.snapshot(session_id).messages if m.role is MessageRole.TOOL]


def snapshot_when(sessions: AgentSessionTestClient, session_id: str, predicate: Callable[[AgentSnapshot], bool],
                  description: str) -> AgentSnapshot:
    """The first snapshot that satisfies ``predicate``."""
    def probe() -> AgentSnapshot | None:
        snapshot = sessions.snapshot(session_id)
        return snapshot if predicate(snapshot) else None

    return poll_until(probe, timeout=sessions.timeout, description=description)


def two_pending_interrupts(sessions: AgentSessionTestClient, session_id: str) -> list[AgentInterrupt]:
    def probe() -> list[AgentInterrupt] | None:
        pending = list(sessions.read_pending_interrupts(session_id))
        return pending if len(pending) == 2 else None

    return poll_until(probe, timeout=sessions.timeout, description="two pending interrupts")


def skip_deadline_timer(sessions: AgentSessionTestClient, session_id: str, number: int) -> None:
    """Fire the deadline Timer of ``AwaitToolApproval-<number>`` once its Wait is stored."""
    wait_for_history(sessions.server_address, session_id, WAIT_FOR_COMPLETED, f"AwaitToolApproval-{number}")
    sessions.client.skip_timer(session_id, StepExecutionId("AwaitToolApproval", number),
                               TimerId.by_condition_id(DEADLINE_CONDITION_ID))


def test_a_read_runs_while_its_sibling_write_awaits_approval(agent_environment: AgentEnvironmentFactory,
                                                             agent_sessions: AgentSessionsFactory,
                                                             tmp_path: Path) -> None:
    script = {"Look up and refund order 42": (
        ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=42),
                                      call("call-refund", "refund", order_id=42))),
        ScriptedModelCall(text="Looked it up and refunded it."))}
    flow = session_flow(scripted_runner(tmp_path, script, TOOLS), prefix="Sibling", tool_policies=POLICIES)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()

    sessions.start_session(session_id, "Look up and refund order 42")
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    waiting = snapshot_when(sessions, session_id, lambda s: s.tool_calls[0].status is ToolCallStatus.SUCCEEDED,
                            "the lookup to succeed while the refund awaits approval")
    lookup, refund = waiting.tool_calls
    assert (lookup.tool_call_id, lookup.output) == ("call-lookup", "order 42 ships today")
    assert (refund.tool_call_id, refund.status, refund.interrupt_id) == (
        "call-refund", ToolCallStatus.AWAITING_APPROVAL, interrupt.interrupt_id)
    assert waiting.pending_interrupts == pvector([interrupt])
    assert waiting.state is not None and waiting.state.status is AgentStatus.RUNNING_TOOLS
    assert tool_log(tmp_path).entries() == [f"lookup_order:{session_id}/turn-1/call-lookup"]
    assert completed_steps(environment.server_address, session_id) == ["StartAgentSession", "RunModel", "CallTool"]

    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    sessions.wait_for_completed_turns(session_id, 1)

    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "CallTool", "AwaitToolApproval", "CallSingleAttemptTool", "ResumeTurn",
        "RunModel"]
    assert tool_results(sessions, session_id) == [("call-lookup", "order 42 ships today"), ("call-refund", "refunded")]
    assert tool_log(tmp_path).count(f"refund:{session_id}/turn-1/call-refund") == 1
    events = sessions.events(session_id)
    assert [e.payload for e in of_type(events, "interrupt_raised")] == [{
        "interrupt_id": "turn-1:call-refund", "tool_call_id": "call-refund", "tool_name": "refund", "deadline": None}]
    assert [spec_payload(e.payload) for e in of_type(events, "interrupt_resolved")] == [
        {"interrupt_id": "turn-1:call-refund", "approved": True, "rejection_message": None}]


def test_a_rejection_reaches_the_model_and_later_resolutions_are_refused(agent_environment: AgentEnvironmentFactory,
                                                                        agent_sessions: AgentSessionsFactory,
                                                                        tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, REFUND_SCRIPT, TOOLS), prefix="Reject", tool_policies=POLICIES)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")

    reason = "Refunds over $100 need a manager."
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, False, reason) is True
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, False, reason) is False
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is False
    assert sessions.resolve_interrupt(session_id, "turn-1:no-such-call", approved=True) is False

    gate = FileGate(tmp_path, ANSWER_GATE)
    gate.wait_until_reached()
    [record] = sessions.snapshot(session_id).tool_calls
    assert (record.status, record.rejection_message, record.output, record.error) == (
        ToolCallStatus.REJECTED, reason, None, None)
    assert sessions.read_pending_interrupts(session_id) == pvector()
    gate.release()
    sessions.wait_for_completed_turns(session_id, 1)

    assert tool_results(sessions, session_id) == [("call-refund", describe_tool_call_outcome(record))]
    assert describe_tool_call_outcome(record) == f"The tool call was rejected: {reason}"
    assert tool_log(tmp_path).entries() == []
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "AwaitToolApproval", "ResumeTurn", "RunModel"]
    events = sessions.events(session_id)
    [resolved] = of_type(events, "interrupt_resolved")
    assert (resolved.step_execution_id, spec_payload(resolved.payload)) == (
        "AwaitToolApproval-1", {"interrupt_id": interrupt.interrupt_id, "approved": False, "rejection_message": reason})
    assert [e.payload["status"] for e in of_type(events, "tool_call_finished")] == ["rejected"]


def test_a_resolution_past_the_deadline_is_refused_and_the_timer_rejects(agent_environment: AgentEnvironmentFactory,
                                                                        agent_sessions: AgentSessionsFactory,
                                                                        tmp_path: Path) -> None:
    clock = OffsetClock()
    flow = session_flow(scripted_runner(tmp_path, REFUND_SCRIPT, TOOLS), prefix="Late", tool_policies=POLICIES,
                        interrupt_deadline_ms=DEADLINE_MS, timing=SessionTiming(now_ms=clock))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    assert interrupt.deadline is not None
    assert 0 < parse_instant(interrupt.deadline) - clock() <= DEADLINE_MS
    wait_for_history(environment.server_address, session_id, WAIT_FOR_COMPLETED, "AwaitToolApproval-1")

    clock.advance(PAST_DEADLINE_MS)
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is False
    assert sessions.read_pending_interrupts(session_id) == pvector([interrupt])  # a late answer changes nothing
    skip_deadline_timer(sessions, session_id, 1)

    gate = FileGate(tmp_path, ANSWER_GATE)
    gate.wait_until_reached()
    [record] = sessions.snapshot(session_id).tool_calls
    assert (record.status, record.rejection_message) == (ToolCallStatus.REJECTED, "approval deadline passed")
    gate.release()
    sessions.wait_for_completed_turns(session_id, 1)

    assert tool_results(sessions, session_id) == [("call-refund", "The tool call was rejected: approval deadline passed")]
    assert tool_log(tmp_path).entries() == []
    assert sessions.read_pending_interrupts(session_id) == pvector()
    assert [spec_payload(e.payload) for e in of_type(sessions.events(session_id), "interrupt_resolved")] == [
        {"interrupt_id": interrupt.interrupt_id, "approved": False, "rejection_message": "approval deadline passed"}]
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "AwaitToolApproval", "ResumeTurn", "RunModel"]


def test_the_deadline_rejects_only_the_unresolved_interrupt(agent_environment: AgentEnvironmentFactory,
                                                            agent_sessions: AgentSessionsFactory,
                                                            tmp_path: Path) -> None:
    clock = OffsetClock()
    flow = session_flow(scripted_runner(tmp_path, TWO_REFUNDS_SCRIPT, TOOLS), prefix="TwoDeadlines",
                        tool_policies=POLICIES, interrupt_deadline_ms=DEADLINE_MS, timing=SessionTiming(now_ms=clock))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, TWO_REFUNDS)
    first, second = two_pending_interrupts(sessions, session_id)
    assert (first.tool_call_id, second.tool_call_id) == ("call-1", "call-2")
    for number in (1, 2):
        wait_for_history(environment.server_address, session_id, WAIT_FOR_COMPLETED, f"AwaitToolApproval-{number}")

    assert sessions.resolve_interrupt(session_id, first.interrupt_id, approved=True) is True
    wait_for_history(environment.server_address, session_id, EXECUTE_COMPLETED, "CallSingleAttemptTool-1")
    assert step_inputs(environment.server_address, session_id)["AwaitToolApproval-1"].string_value == "call-1"
    clock.advance(PAST_DEADLINE_MS)
    assert sessions.resolve_interrupt(session_id, second.interrupt_id, approved=True) is False
    skip_deadline_timer(sessions, session_id, 2)

    gate = FileGate(tmp_path, ANSWER_GATE)
    gate.wait_until_reached()
    approved, expired = sessions.snapshot(session_id).tool_calls
    assert (approved.status, approved.output) == (ToolCallStatus.SUCCEEDED, "refunded")
    assert (expired.status, expired.rejection_message) == (ToolCallStatus.REJECTED, "approval deadline passed")
    gate.release()
    sessions.wait_for_completed_turns(session_id, 1)

    assert tool_results(sessions, session_id) == [
        ("call-1", "refunded"), ("call-2", "The tool call was rejected: approval deadline passed")]
    assert tool_log(tmp_path).entries() == [f"refund:{session_id}/turn-1/call-1"]
    assert [(e.step_execution_id, e.payload["approved"], e.payload["rejection_message"])
            for e in of_type(sessions.events(session_id), "interrupt_resolved")] == [
        ("AwaitToolApproval-1", True, None), ("AwaitToolApproval-2", False, "approval deadline passed")]
    assert sessions.read_pending_interrupts(session_id) == pvector()


def test_a_timer_fired_before_the_deadline_waits_again(agent_environment: AgentEnvironmentFactory,
                                                       agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    clock = OffsetClock()
    flow = session_flow(scripted_runner(tmp_path, REFUND_SCRIPT, TOOLS), prefix="EarlyTimer", tool_policies=POLICIES,
                        interrupt_deadline_ms=DEADLINE_MS, timing=SessionTiming(now_ms=clock))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")

    skip_deadline_timer(sessions, session_id, 1)  # the clock has not reached the deadline
    wait_for_history(environment.server_address, session_id, WAIT_FOR_COMPLETED, "AwaitToolApproval-2")
    assert sessions.read_pending_interrupts(session_id) == pvector([interrupt])
    [record] = sessions.snapshot(session_id).tool_calls
    assert record.status is ToolCallStatus.AWAITING_APPROVAL
    assert tool_log(tmp_path).entries() == []
    assert of_type(sessions.events(session_id), "interrupt_resolved") == []

    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    FileGate(tmp_path, ANSWER_GATE).release()
    sessions.wait_for_completed_turns(session_id, 1)

    assert tool_results(sessions, session_id) == [("call-refund", "refunded")]
    assert tool_log(tmp_path).count(f"refund:{session_id}/turn-1/call-refund") == 1
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "AwaitToolApproval", "AwaitToolApproval", "CallSingleAttemptTool",
        "ResumeTurn", "RunModel"]
    assert [e.step_execution_id for e in of_type(sessions.events(session_id), "interrupt_resolved")] == [
        "AwaitToolApproval-2"]
