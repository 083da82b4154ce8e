"""The core's guards around model calls and user text, on an in-process Worker: the per-turn cap on
model calls, a failed model attempt visible in the events before the next attempt, a model error the
runner marks non-retryable, text that cannot be encoded, and the run state a tool Step hands the runner.
Each is checked in Step history and in committed values."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from dex import WorkerInvocationError

from dex_agents import NonRetryableModelError
from dex_agents.pure.values.rpc import SendUserMessageInput
from dex_agents.pure.values.runner import AgentTurnOutcome
from dex_agents.pure.values.session import AgentStatus, MessageRole
from dex_agents.shell import AgentTurnContext, DeferredToolExecution, create_agent_session_flow
from dex_agents.testing import FileGate, ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.scripted_runner import user_message
from tests.shell.agents import unique_flow_type
from tests.shell.scenario_flows import (
    READ_POLICY,
    WRITE_POLICY,
    RecordingRunner,
    StepFailure,
    answer_tool,
    assert_payload_keys,
    call,
    completed_executions,
    completed_steps,
    new_session_id,
    of_type,
    scripted_runner,
    step_failures,
    tool_log,
    user_text_of,
)

RETRIES_SECONDS = 60.0
"""Timeout of a wait that spans Dex's retry back-off (1 s, then 2 s), with room for a slow machine."""
MODEL_CALL_FAILED = "dex_agents.model_call_failed"

LOOPING_MESSAGE = "Keep looking"
LOOPING_SCRIPT = {LOOPING_MESSAGE: (
    ScriptedModelCall(tool_calls=(call("call-1", "lookup_order", order_id=1),)),
    ScriptedModelCall(tool_calls=(call("call-2", "lookup_order", order_id=2),), gate_before_output="second-call"),
    ScriptedModelCall(text="never reached"),
)}
CAP_ERROR = "the turn reached its cap of 2 model calls (max_model_calls_per_turn) without a final answer"
CAP_NOTE = ("[Dex] The previous turn failed after these tool calls ran:\n"
            '- lookup_order {"order_id":1} -> succeeded: found\n'
            "Do not repeat these tool calls unless the user asks again.")


def test_a_turn_at_its_model_call_cap_fails_without_deferring_more_tools(agent_environment: AgentEnvironmentFactory,
                                                                          agent_sessions: AgentSessionsFactory,
                                                                          tmp_path: Path) -> None:
    """Cap 2: the first model call defers a tool (the count, 1, is committed in ``TurnModelCallCount``),
    the second asks for tools again, so the turn fails in that ``RunModel`` with the note of call-1."""
    runner = scripted_runner(tmp_path, LOOPING_SCRIPT, {"lookup_order": answer_tool("found")})
    flow = create_agent_session_flow(runner, unique_flow_type("ModelCallCap"), tool_policies={"lookup_order": READ_POLICY},
                                     max_model_calls_per_turn=2)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, LOOPING_MESSAGE)

    gate = FileGate(tmp_path, "second-call")
    gate.wait_until_reached()
    assert sessions.read_attribute(session_id, flow.turn_model_call_count) == 1  # committed: survives a crash
    gate.release()
    state = sessions.wait_for_turns(session_id, 1)

    assert (state.failed_turn_count, state.last_turn_error, state.status) == (
        1, CAP_ERROR, AgentStatus.WAITING_FOR_USER_MESSAGE)
    assert tool_log(tmp_path).entries() == [f"lookup_order:{session_id}/turn-1/call-1"]  # call-2 never deferred
    snapshot = sessions.snapshot(session_id)
    assert [(m.role, m.text) for m in snapshot.messages] == [(MessageRole.USER, LOOPING_MESSAGE),
                                                             (MessageRole.USER, CAP_NOTE)]
    assert snapshot.messages[-1].framework_item == user_message(CAP_NOTE).framework_item
    assert list(snapshot.tool_calls) == [] and snapshot.usage.requests == 2
    assert sessions.read_attribute(session_id, flow.turn_model_call_count) is None
    assert sessions.read_attribute(session_id, flow.framework_run_state) is None
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"]
    assert step_failures(environment.server_address, session_id) == []
    events = sessions.events(session_id)
    assert_payload_keys(events)
    assert [e.payload["tool_call_id"] for e in of_type(events, "tool_call_deferred")] == ["call-1"]
    [failed] = of_type(events, "turn_failed")
    assert (failed.step_execution_id, dict(failed.payload)) == ("RunModel-2", {"error": CAP_ERROR})

    gate.reset()
    assert sessions.send_user_message(session_id, LOOPING_MESSAGE) is True  # the next turn counts from 0 again
    gate.wait_until_reached()
    assert sessions.read_attribute(session_id, flow.turn_model_call_count) == 1
    gate.release()
    assert sessions.wait_for_turns(session_id, 2).failed_turn_count == 2


FLAKY_MESSAGE = "Hello from a flaky model"
SECOND_ATTEMPT_GATE = "second-attempt"


def test_a_failed_model_attempt_is_in_the_events_before_the_next_attempt_starts(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """Attempt 1 raises; attempt 2 stops at a gate before any output, and the Stream already holds the
    failure of attempt 1 (``retrying`` true), written by attempt 1 itself."""
    async def flaky(turn: AgentTurnContext) -> AgentTurnOutcome | None:
        if user_text_of(turn) != FLAKY_MESSAGE:
            return None
        if turn.attempt == 1:
            raise RuntimeError("model overloaded (503)")
        await FileGate(tmp_path, SECOND_ATTEMPT_GATE).mark_reached_async()
        return None

    runner = RecordingRunner(inner=scripted_runner(tmp_path, {}), before_model=flaky)
    flow = create_agent_session_flow(runner, unique_flow_type("FlakyModel"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id, FLAKY_MESSAGE)

    gate = FileGate(tmp_path, SECOND_ATTEMPT_GATE)
    gate.wait_until_reached(RETRIES_SECONDS)
    [failed] = of_type(sessions.events(session_id), MODEL_CALL_FAILED)
    assert (failed.turn_id, failed.step_execution_id, failed.attempt, dict(failed.payload)) == (
        "turn-1", "RunModel-1", 1, {"error": "model overloaded (503)", "retrying": True})
    gate.release()

    state = sessions.wait_for_completed_turns(session_id, 1)
    assert (state.failed_turn_count, state.last_turn_error) == (0, None)
    events = sessions.events(session_id)
    assert_payload_keys(events)
    assert [e.type for e in events if e.type != "text_delta"] == [
        "turn_started", MODEL_CALL_FAILED, "usage_recorded", "turn_completed"]
    assert [(e.step_execution_id, e.attempt) for e in completed_executions(environment.server_address, session_id)
            if e.step_type == "RunModel"] == [("RunModel-1", 2)]


REFUSED_MESSAGE = "Look up order 42, then summarize everything"
REFUSAL = "the provider refused the request: the prompt is too long"
REFUSAL_NOTE = ("[Dex] The previous turn failed after these tool calls ran:\n"
                '- lookup_order {"order_id":42} -> succeeded: order 42 ships today\n'
                "Do not repeat these tool calls unless the user asks again.")


def test_a_non_retryable_model_error_fails_the_turn_in_one_attempt(agent_environment: AgentEnvironmentFactory,
                                                                    agent_sessions: AgentSessionsFactory,
                                                                    tmp_path: Path) -> None:
    """The resumed model call raises ``NonRetryableModelError``: one ``RunModel`` attempt records the
    failure (note, error, cleared turn) and the session waits for the next message; no
    ``RecordTurnFailure`` runs and Dex records no failed Step."""
    async def refuse_when_resuming(turn: AgentTurnContext) -> AgentTurnOutcome | None:
        if turn.is_resuming:
            raise NonRetryableModelError(REFUSAL)
        return None

    script = {REFUSED_MESSAGE: (ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=42),)),
                                ScriptedModelCall(text="never stored"))}
    inner = scripted_runner(tmp_path, script, {"lookup_order": answer_tool("order 42 ships today")})
    runner = RecordingRunner(inner=inner, before_model=refuse_when_resuming)
    flow = create_agent_session_flow(runner, unique_flow_type("Refused"), tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, REFUSED_MESSAGE)

    state = sessions.wait_for_turns(session_id, 1)
    assert (state.failed_turn_count, state.last_turn_error, state.current_turn_id) == (1, REFUSAL, None)
    snapshot = sessions.snapshot(session_id)
    assert [m.text for m in snapshot.messages] == [REFUSED_MESSAGE, REFUSAL_NOTE]
    assert snapshot.messages[-1].framework_item == user_message(REFUSAL_NOTE).framework_item
    assert list(snapshot.tool_calls) == []
    assert sessions.read_attribute(session_id, flow.framework_run_state) is None
    assert sessions.read_attribute(session_id, flow.turn_model_call_count) is None
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"]
    assert [(e.step_execution_id, e.attempt) for e in completed_executions(environment.server_address, session_id)
            if e.step_type == "RunModel"] == [("RunModel-1", 1), ("RunModel-2", 1)]
    assert step_failures(environment.server_address, session_id) == []
    assert [seen.attempt for seen in runner.calls_of("turn-1", session_id)] == [1, 1]
    events = sessions.events(session_id)
    assert_payload_keys(events)
    assert [(e.type, e.step_execution_id) for e in events if e.type in (MODEL_CALL_FAILED, "turn_failed")] == [
        (MODEL_CALL_FAILED, "RunModel-2"), ("turn_failed", "RunModel-2")]
    [failed] = of_type(events, MODEL_CALL_FAILED)
    assert dict(failed.payload) == {"error": REFUSAL, "retrying": False}

    assert sessions.send_user_message(session_id, "Are you there?") is True
    assert sessions.wait_for_completed_turns(session_id, 1).last_turn_error is None


def test_the_last_failed_model_attempt_says_no_retry_follows(agent_environment: AgentEnvironmentFactory,
                                                             agent_sessions: AgentSessionsFactory,
                                                             tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """All 3 attempts raise: ``retrying`` is true, true, false, and ``RecordTurnFailure`` records the
    last error as before; the failed attempt's error keeps the runner's exception as its cause."""
    caplog.set_level(logging.ERROR)
    script = {"Always failing": (ScriptedModelCall(text="never stored", fail_attempts=3),)}
    flow = create_agent_session_flow(scripted_runner(tmp_path, script), unique_flow_type("OutOfAttempts"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id, "Always failing")

    state = sessions.wait_for_turns(session_id, 1)
    assert state.last_turn_error == "scripted model failure (attempt 3)"
    failures = [(e.attempt, dict(e.payload)) for e in of_type(sessions.events(session_id), MODEL_CALL_FAILED)]
    assert failures == [(n, {"error": f"scripted model failure (attempt {n})", "retrying": n < 3}) for n in (1, 2, 3)]
    assert step_failures(environment.server_address, session_id) == [StepFailure(
        step_type="RunModel", step_execution_id="RunModel-1", attempt=3, error="scripted model failure (attempt 3)")]
    assert completed_steps(environment.server_address, session_id) == ["StartAgentSession", "RecordTurnFailure"]
    assert "RuntimeError: scripted model failure (attempt 3)" in caplog.text
    assert "The above exception was the direct cause of the following exception" in caplog.text


UNPAIRED = "Where is order 42? \ud83d"
UNPAIRED_ERROR = "text contains a lone surrogate U+D83D at index 19; it cannot be encoded as UTF-8"


def test_text_that_cannot_be_encoded_is_refused_by_the_rpcs(agent_environment: AgentEnvironmentFactory,
                                                            agent_sessions: AgentSessionsFactory,
                                                            tmp_path: Path) -> None:
    """``send_user_message`` and ``resolve_interrupt`` raise an RPC error naming the lone surrogate;
    nothing is queued or resolved, and the session goes on."""
    script = {"Refund order 42": (ScriptedModelCall(tool_calls=(call("call-refund", "refund", order_id=42),)),
                                  ScriptedModelCall(text="Refunded."))}
    flow = create_agent_session_flow(scripted_runner(tmp_path, script, {"refund": answer_tool("refunded")}),
                                     unique_flow_type("Unencodable"), tool_policies={"refund": WRITE_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, "Refund order 42")
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")

    with pytest.raises(WorkerInvocationError) as refused:
        environment.client.invoke_rpc(flow.send_user_message, session_id, SendUserMessageInput(text=UNPAIRED))
    assert (refused.value.worker_error_detail, refused.value.worker_error_type) == (
        UNPAIRED_ERROR, "dex_agents.shell.perform.RpcRefusedError")
    assert str(refused.value) == f"rpc send_user_message failed: {UNPAIRED_ERROR}"
    with pytest.raises(WorkerInvocationError) as refused_once:  # the session client's send, with its message ID
        sessions.send_user_message(session_id, UNPAIRED)
    assert str(refused_once.value) == f"rpc send_user_message_once failed: {UNPAIRED_ERROR}"
    with pytest.raises(WorkerInvocationError, match=re.escape("rejection_message contains a lone surrogate U+DC00 at index 4")):
        sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=False, rejection_message="not \udc00")
    snapshot = sessions.snapshot(session_id)
    assert snapshot.queued_message_count == 0
    assert [i.interrupt_id for i in snapshot.pending_interrupts] == [interrupt.interrupt_id]

    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    sessions.wait_for_completed_turns(session_id, 1)
    assert sessions.send_user_message(session_id, "Thanks 📦") is True
    state = sessions.wait_for_completed_turns(session_id, 2)
    assert state.failed_turn_count == 0


def test_an_initial_message_that_cannot_be_encoded_starts_the_turn_with_replacement_characters(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """``start_flow`` has already returned when ``StartAgentSession`` runs, so it cannot refuse: each lone
    surrogate becomes U+FFFD and the session works as usual."""
    flow = create_agent_session_flow(scripted_runner(tmp_path, {}), unique_flow_type("UnencodableStart"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, UNPAIRED)

    sessions.wait_for_completed_turns(session_id, 1)
    assert [m.text for m in sessions.snapshot(session_id).messages] == [
        "Where is order 42? \ufffd", "echo: Where is order 42? \ufffd (1 messages)"]
    assert sessions.send_user_message(session_id, "And now?") is True
    assert sessions.wait_for_completed_turns(session_id, 2).failed_turn_count == 0


def test_a_tool_step_hands_the_runner_the_run_state_that_deferred_the_call(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    seen: list[str | None] = []

    async def lookup_order(execution: DeferredToolExecution) -> str:
        seen.append(execution.framework_run_state)
        return "order 42 ships today"

    script = {"Where is order 42?": (ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=42),)),
                                     ScriptedModelCall(text="It ships today."))}
    flow = create_agent_session_flow(scripted_runner(tmp_path, script, {"lookup_order": lookup_order}),
                                     unique_flow_type("ToolRunState"), tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, "Where is order 42?")
    sessions.wait_for_completed_turns(session_id, 1)

    [run_state] = seen
    assert run_state is not None
    assert json.loads(run_state)["next_call"] == 1  # the scripted runner's state after its first model call
