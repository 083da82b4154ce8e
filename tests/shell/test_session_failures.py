"""Failures on an in-process Worker: a tool's ``ToolExecutionError``, exhausted ``CallTool`` retries, a
model call that runs out of attempts (the turn failure note), and runner defects. Each is checked in
Step history (with the failure's text) and in committed values, and the session takes the next message.

Dex's retry back-off starts at 1 s and doubles, so a Step that uses all 3 attempts takes about 3 s of
real time; those tests wait on committed values with timeouts that allow for it."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from pyrsistent import pvector

from dex_agents.pure.values.runner import (
    AgentTurnOutcome,
    DeferredToolCall,
    ResolvedToolPolicy,
    ToolCallsRequested,
)
from dex_agents.pure.values.session import AgentUsage, AgentStatus, FrameworkMessage, MessageRole, ToolCallStatus, ToolEffect
from dex_agents.shell import AgentTurnContext, DeferredToolExecution, ToolExecutionError
from dex_agents.testing import MODEL_CALL_USAGE, FileGate, ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.scripted_runner import user_message
from tests.shell.scenario_flows import (
    IDEMPOTENT_WRITE_POLICY,
    READ_POLICY,
    RecordingRunner,
    StepFailure,
    answer_tool,
    call,
    completed_executions,
    completed_steps,
    new_session_id,
    of_type,
    scripted_runner,
    session_flow,
    step_failures,
    tool_log,
    user_text_of,
)

RETRIES_SECONDS = 60.0
"""Timeout of a wait that spans 3 attempts (about 3 s of back-off), with room for a slow machine."""
ANSWER_GATE = "answer"


def test_a_tool_execution_error_is_recorded_failed_and_not_retried(agent_environment: AgentEnvironmentFactory,
                                                                   agent_sessions: AgentSessionsFactory,
                                                                   tmp_path: Path) -> None:
    async def lookup_order(_call: DeferredToolExecution) -> str:
        raise ToolExecutionError("order 7 does not exist")

    script = {"Where is order 7?": (ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=7),)),
                                    ScriptedModelCall(text="Order 7 does not exist.", gate_before_output=ANSWER_GATE))}
    flow = session_flow(scripted_runner(tmp_path, script, {"lookup_order": lookup_order}), prefix="ToolError",
                        tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, "Where is order 7?")

    gate = FileGate(tmp_path, ANSWER_GATE)
    gate.wait_until_reached()
    [record] = sessions.snapshot(session_id).tool_calls
    assert (record.status, record.error, record.output) == (ToolCallStatus.FAILED, "order 7 does not exist", None)
    gate.release()
    sessions.wait_for_completed_turns(session_id, 1)

    assert tool_log(tmp_path).entries() == [f"lookup_order:{session_id}/turn-1/call-lookup"]
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"]
    assert [(e.step_execution_id, e.attempt) for e in completed_executions(environment.server_address, session_id)
            if e.step_type == "CallTool"] == [("CallTool-1", 1)]
    assert step_failures(environment.server_address, session_id) == []
    messages = sessions.snapshot(session_id).messages
    assert [m.tool_output for m in messages if m.role is MessageRole.TOOL] == [
        "The tool call failed: order 7 does not exist"]
    assert [e.payload["status"] for e in of_type(sessions.events(session_id), "tool_call_finished")] == ["failed"]


def test_exhausted_call_tool_retries_record_failed_for_a_read_and_outcome_unknown_for_a_write(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """Both tools always raise: ``CallTool`` runs each 3 times (about 3 s of Dex back-off), then
    ``RecordToolFailure`` records the read ``failed`` and the idempotent write ``outcome_unknown``."""

    async def check_stock(_call: DeferredToolExecution) -> str:
        raise RuntimeError("inventory service unavailable")

    async def reserve(_call: DeferredToolExecution) -> str:
        raise RuntimeError("reservation service unavailable")

    script = {"Check and reserve": (
        ScriptedModelCall(tool_calls=(call("call-read", "check_stock"), call("call-write", "reserve"))),
        ScriptedModelCall(text="Neither worked.", gate_before_output=ANSWER_GATE))}
    runner = scripted_runner(tmp_path, script, {"check_stock": check_stock, "reserve": reserve})
    flow = session_flow(runner, prefix="Exhausted",
                        tool_policies={"check_stock": READ_POLICY, "reserve": IDEMPOTENT_WRITE_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id, "Check and reserve")

    gate = FileGate(tmp_path, ANSWER_GATE)
    gate.wait_until_reached(RETRIES_SECONDS)
    read, write = sessions.snapshot(session_id).tool_calls
    assert (read.status, read.error) == (ToolCallStatus.FAILED, "inventory service unavailable")
    assert (write.status, write.error) == (ToolCallStatus.OUTCOME_UNKNOWN, "reservation service unavailable")
    gate.release()
    sessions.wait_for_completed_turns(session_id, 1)

    log = tool_log(tmp_path)
    assert log.count(f"check_stock:{session_id}/turn-1/call-read") == 3
    assert log.count(f"reserve:{session_id}/turn-1/call-write") == 3  # the same idempotency key on every attempt
    assert len(log.entries()) == 6
    failures = step_failures(environment.server_address, session_id)
    assert sorted((f.step_type, f.attempt, f.error) for f in failures) == [
        ("CallTool", 3, "inventory service unavailable"), ("CallTool", 3, "reservation service unavailable")]
    steps = completed_steps(environment.server_address, session_id)
    assert steps == ["StartAgentSession", "RunModel", "RecordToolFailure", "RecordToolFailure", "ResumeTurn",
                     "RunModel"]
    messages = sessions.snapshot(session_id).messages
    assert [(m.tool_call_id, m.tool_output) for m in messages if m.role is MessageRole.TOOL] == [
        ("call-read", "The tool call failed: inventory service unavailable"),
        ("call-write", "The tool call's outcome is unknown: reservation service unavailable")]
    finished = of_type(sessions.events(session_id), "tool_call_finished")
    assert sorted((str(e.payload["tool_call_id"]), str(e.payload["status"])) for e in finished) == [
        ("call-read", "failed"), ("call-write", "outcome_unknown")]
    assert {e.step_execution_id.split("-")[0] for e in finished} == {"RecordToolFailure"}


NOTE_MESSAGE = "Look up order 42, then think hard"
EXPECTED_NOTE = ("[Dex] The previous turn failed after these tool calls ran:\n"
                 '- lookup_order {"order_id":42} -> succeeded: order 42 ships today\n'
                 "Do not repeat these tool calls unless the user asks again.")


def test_a_model_call_out_of_attempts_fails_the_turn_with_the_failure_note(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """The second model call fails all 3 attempts (about 3 s of Dex back-off): ``RecordTurnFailure``."""
    script = {NOTE_MESSAGE: (ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=42),)),
                             ScriptedModelCall(text="never stored", fail_attempts=3))}
    flow = session_flow(scripted_runner(tmp_path, script, {"lookup_order": answer_tool("order 42 ships today")}),
                        prefix="TurnFailure", tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id, NOTE_MESSAGE)

    state = sessions.wait_for_turns(session_id, 1)
    assert (state.failed_turn_count, state.completed_turn_count, state.status, state.current_turn_id) == (
        1, 0, AgentStatus.WAITING_FOR_USER_MESSAGE, None)
    assert state.last_turn_error == "scripted model failure (attempt 3)"
    snapshot = sessions.snapshot(session_id)
    user, note = snapshot.messages
    assert (user.text, note.sequence, note.turn_id, note.role, note.text) == (
        NOTE_MESSAGE, 2, "turn-1", MessageRole.USER, EXPECTED_NOTE)
    assert note.framework_item == user_message(EXPECTED_NOTE).framework_item  # built by runner.build_user_message
    assert list(snapshot.tool_calls) == [] and snapshot.usage == MODEL_CALL_USAGE
    assert sessions.read_attribute(session_id, flow.framework_run_state) is None
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RecordTurnFailure"]
    assert step_failures(environment.server_address, session_id) == [StepFailure(
        step_type="RunModel", step_execution_id="RunModel-2", attempt=3, error="scripted model failure (attempt 3)")]
    [failed] = of_type(sessions.events(session_id), "turn_failed")
    assert (failed.turn_id, failed.step_execution_id, dict(failed.payload)) == (
        "turn-1", "RecordTurnFailure-1", {"error": "scripted model failure (attempt 3)"})

    assert sessions.send_user_message(session_id, "Are you there?") is True
    state = sessions.wait_for_completed_turns(session_id, 1)
    assert (state.completed_turn_count, state.failed_turn_count, state.last_turn_error) == (1, 1, None)
    assert sessions.snapshot(session_id).messages[-1].text == "echo: Are you there? (3 messages)"


DEFECT_ERRORS = {
    "Duplicate tool call IDs": "runner defect: tool call ID 'dup' appears more than once in one response",
    "A slash in a tool call ID": "runner defect: tool call ID 'orders/42' contains '/'",
    "An empty run state": "runner defect: framework_run_state is empty",
}


def _deferred(tool_call_id: str) -> DeferredToolCall:
    return DeferredToolCall(tool_call_id=tool_call_id, tool_name="lookup_order", arguments="{}",
                            policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False))


async def defective_outcome(turn: AgentTurnContext) -> AgentTurnOutcome | None:
    """Breaks the runner contract for the ``DEFECT_ERRORS`` messages; other messages get the script."""
    text = user_text_of(turn)
    if text == "Duplicate tool call IDs":
        return ToolCallsRequested(framework_run_state="{}", tool_calls=pvector([_deferred("dup"), _deferred("dup")]),
                                  usage=MODEL_CALL_USAGE)
    if text == "A slash in a tool call ID":
        return ToolCallsRequested(framework_run_state="{}", tool_calls=pvector([_deferred("orders/42")]),
                                  usage=MODEL_CALL_USAGE)
    if text == "An empty run state":
        return ToolCallsRequested(framework_run_state="", tool_calls=pvector([_deferred("call-1")]),
                                  usage=MODEL_CALL_USAGE)
    return None


def test_runner_defects_fail_the_model_call_and_store_nothing(agent_environment: AgentEnvironmentFactory,
                                                              agent_sessions: AgentSessionsFactory,
                                                              tmp_path: Path) -> None:
    """Each defect fails all 3 ``RunModel`` attempts (about 3 s of Dex back-off; the sessions run at once)."""
    runner = RecordingRunner(inner=scripted_runner(tmp_path, {}, {"lookup_order": answer_tool("found")}),
                             before_model=defective_outcome)
    flow = session_flow(runner, prefix="Defects", tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_ids = {text: new_session_id() for text in DEFECT_ERRORS}
    for text, session_id in session_ids.items():
        sessions.start_session(session_id, text)

    for text, session_id in session_ids.items():
        error = DEFECT_ERRORS[text]
        state = sessions.wait_for_turns(session_id, 1)
        assert (state.failed_turn_count, state.last_turn_error, state.message_count) == (1, error, 1)
        snapshot = sessions.snapshot(session_id)
        assert [m.text for m in snapshot.messages] == [text]  # no note: no tool call of the turn is final
        assert (list(snapshot.tool_calls), list(snapshot.pending_interrupts), snapshot.usage) == ([], [], AgentUsage())
        assert sessions.read_attribute(session_id, flow.framework_run_state) is None
        assert step_failures(environment.server_address, session_id) == [
            StepFailure(step_type="RunModel", step_execution_id="RunModel-1", attempt=3, error=error)]
        assert completed_steps(environment.server_address, session_id) == ["StartAgentSession", "RecordTurnFailure"]
        assert [e.type for e in sessions.events(session_id)] == ["turn_started", "turn_failed"]
        assert [seen.attempt for seen in runner.calls_of("turn-1", session_id)] == [1, 2, 3]

    for session_id in session_ids.values():
        assert sessions.send_user_message(session_id, "Hello again") is True
    for session_id in session_ids.values():
        sessions.wait_for_completed_turns(session_id, 1)
        assert sessions.snapshot(session_id).messages[-1].text == "echo: Hello again (2 messages)"
    assert tool_log(tmp_path).entries() == []


FLAKY_TEXT = "Hello from a flaky adapter"


def test_a_non_user_message_from_build_user_message_fails_the_attempt(agent_environment: AgentEnvironmentFactory,
                                                                      agent_sessions: AgentSessionsFactory,
                                                                      tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """``build_user_message`` answers role ``assistant`` on its first call for ``FLAKY_TEXT``: that
    ``AwaitUserMessage`` attempt fails with the defect, stores nothing, and Dex reruns it after 1 s."""
    calls = {"count": 0}
    lock = threading.Lock()

    def flaky_role(text: str, message: FrameworkMessage) -> FrameworkMessage:
        if text != FLAKY_TEXT:
            return message
        with lock:
            calls["count"] += 1
            first = calls["count"] == 1
        return FrameworkMessage(role=MessageRole.ASSISTANT, text=text, tool_call_id=None, tool_name=None,
                                tool_arguments=None, tool_output=None,
                                framework_item=message.framework_item) if first else message

    runner = RecordingRunner(inner=scripted_runner(tmp_path, {}), user_message=flaky_role)
    flow = session_flow(runner, prefix="NotUser")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id)
    sessions.wait_for_status(session_id, AgentStatus.WAITING_FOR_USER_MESSAGE)
    caplog.set_level(logging.ERROR)

    assert sessions.send_user_message(session_id, FLAKY_TEXT) is True
    state = sessions.wait_for_completed_turns(session_id, 1)

    assert calls["count"] == 2
    assert "runner defect: build_user_message returned role 'assistant', not 'user'" in caplog.text
    assert (state.turn_count, state.message_count) == (1, 2)
    messages = sessions.snapshot(session_id).messages
    assert [(m.sequence, m.role, m.text) for m in messages] == [
        (1, MessageRole.USER, FLAKY_TEXT), (2, MessageRole.ASSISTANT, f"echo: {FLAKY_TEXT} (1 messages)")]
    await_message = [e for e in completed_executions(environment.server_address, session_id)
                     if e.step_type == "AwaitUserMessage"]
    assert [(e.step_execution_id, e.attempt) for e in await_message] == [("AwaitUserMessage-1", 2)]
    assert [e.payload for e in of_type(sessions.events(session_id), "turn_started")] == [{"sequence": 1}]
