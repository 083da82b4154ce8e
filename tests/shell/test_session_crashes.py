"""The spec's crash tests for model calls, retried tools and approvals: the Worker runs in a child
process the test SIGKILLs at an exact point (a ``FileGate``), the Client stays in the test process,
and a new Worker child picks the session up.

Every test asserts in Step history and in committed values (AgentState, messages, AgentEvents), and
counts real tool runs with the cross-process tool log. No test sleeps for time to pass: each waits
on committed values, a gate or a Worker child's exit.
"""

from __future__ import annotations

from pathlib import Path

from pyrsistent import pvector

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.session import AgentStatus, MessageRole
from dex_agents.testing import WAIT_FOR_COMPLETED, poll_until
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.shell.agents import (
    GATED_LOOKUP_MESSAGE,
    GATED_MODEL_ANSWER,
    GATED_MODEL_MESSAGE,
    LOOKUP_ANSWER,
    LOOKUP_CALL_ID,
    LOOKUP_GATE,
    LOOKUP_THEN_GATED_MODEL_MESSAGE,
    MODEL_BEFORE_OUTPUT_GATE,
    MODEL_GATE,
    REFUND_ANSWER,
    REFUND_CALL_ID,
    REFUND_MESSAGE,
)
from tests.shell.crashes import CRASH_TIMEOUT, CrashLab, completed, live_text, new_session_id, texts_by_attempt, tool_key

LOOKUP_OUTPUT = "order 42 ships today"


def test_a_sigkill_before_model_output_reruns_only_that_model_call(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    """The turn's second model call is held before any output and its Worker SIGKILLed: Dex
    re-delivers that attempt (same attempt number, it sent nothing) to the next Worker, and nothing
    before it runs again: the first model call, the lookup and ResumeTurn stay single in history."""
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    worker = lab.start_worker()
    session_id = new_session_id()
    gate = lab.gate(MODEL_BEFORE_OUTPUT_GATE)

    lab.sessions.start_session(session_id, LOOKUP_THEN_GATED_MODEL_MESSAGE)
    gate.wait_until_reached()
    before = [completed(StepType.START_AGENT_SESSION), completed(StepType.RUN_MODEL), completed(StepType.CALL_TOOL),
              completed(StepType.RESUME_TURN)]
    assert lab.executions(session_id) == before
    held = lab.sessions.read_agent_state(session_id)
    assert held is not None and held.status is AgentStatus.RUNNING_MODEL
    assert held.message_count == 1  # a turn's messages are stored only when it completes
    lab.kill_at(worker, gate)

    state = lab.sessions.wait_for_completed_turns(session_id, 1)
    assert state.status is AgentStatus.WAITING_FOR_USER_MESSAGE and state.message_count == 4
    assert lab.executions(session_id) == [*before, completed(StepType.RUN_MODEL, attempt=1)]
    run_models = [entry.step_execution_id for entry in lab.history(session_id)
                  if entry.event_type == "step_execute_pending" and entry.step_type == StepType.RUN_MODEL.value]
    assert run_models == ["RunModel-1", "RunModel-2"]  # the crashed call was re-delivered, not moved to again
    assert lab.tools.entries() == [tool_key(session_id, "lookup_order", LOOKUP_CALL_ID)]

    messages = lab.sessions.snapshot(session_id).messages
    assert [(m.sequence, m.role, m.text, m.tool_output) for m in messages] == [
        (1, MessageRole.USER, LOOKUP_THEN_GATED_MODEL_MESSAGE, None), (2, MessageRole.ASSISTANT, None, None),
        (3, MessageRole.TOOL, None, LOOKUP_OUTPUT), (4, MessageRole.ASSISTANT, LOOKUP_ANSWER, None)]
    events = lab.events(session_id)
    assert texts_by_attempt(events, "RunModel-2") == {1: LOOKUP_ANSWER}  # the killed attempt wrote nothing
    assert [e.type for e in events].count("usage_recorded") == 2
    assert events[-1].type == "turn_completed" and events[-1].step_execution_id == "RunModel-2"


def test_a_sigkill_after_model_output_reruns_the_model_call_as_a_new_attempt(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    """The model call is held after streaming its answer; once Dex has committed that text (so the
    attempt sent output) the Worker is SIGKILLed. The attempt fails and the call reruns as attempt 2:
    both attempts' text is in AgentEvents under one step_execution_id, and the spec's grouping rule
    (keep the highest attempt) shows the answer once."""
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    worker = lab.start_worker()
    session_id = new_session_id()
    gate = lab.gate(MODEL_GATE)

    lab.sessions.start_session(session_id, GATED_MODEL_MESSAGE)
    gate.wait_until_reached()
    lab.wait_for_event(session_id, lambda e: e.type == "text_delta" and e.attempt == 1,
                       "the first attempt's streamed text")
    lab.kill_at(worker, gate)

    state = lab.sessions.wait_for_completed_turns(session_id, 1)
    assert state.message_count == 2
    # Dex records a retried method once, with its final attempt; attempt 1's failure is not an event.
    assert lab.executions(session_id) == [completed(StepType.START_AGENT_SESSION),
                                          completed(StepType.RUN_MODEL, attempt=2)]
    snapshot = lab.sessions.snapshot(session_id)
    assert [(m.role, m.text) for m in snapshot.messages] == [
        (MessageRole.USER, GATED_MODEL_MESSAGE), (MessageRole.ASSISTANT, GATED_MODEL_ANSWER)]
    assert snapshot.usage.requests == 1  # only the committed attempt's usage counts

    events = lab.events(session_id)
    assert texts_by_attempt(events, "RunModel-1") == {1: GATED_MODEL_ANSWER, 2: GATED_MODEL_ANSWER}
    assert live_text(events, "turn-1") == GATED_MODEL_ANSWER  # not the text twice
    finished = [(e.type, e.attempt) for e in events if e.type in ("usage_recorded", "turn_completed")]
    assert finished == [("usage_recorded", 2), ("turn_completed", 2)]


def test_a_sigkill_during_call_tool_retries_with_the_same_idempotency_key(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    """The read tool is held after its run was logged; its Worker is SIGKILLed. CallTool's attempt
    failed (it had sent output), so Dex retries it as attempt 2 on the next Worker, with the same
    idempotency key; the call ends ``succeeded`` and the turn completes."""
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    worker = lab.start_worker()
    session_id = new_session_id()
    gate = lab.gate(LOOKUP_GATE)

    lab.sessions.start_session(session_id, GATED_LOOKUP_MESSAGE)
    gate.wait_until_reached()
    key = tool_key(session_id, "lookup_order", LOOKUP_CALL_ID)
    assert lab.tools.entries() == [key]
    lab.wait_for_event(session_id, lambda e: e.type == "tool_call_started", "the first attempt's tool_call_started")
    lab.kill_at(worker, gate)

    state = lab.sessions.wait_for_completed_turns(session_id, 1)
    assert state.message_count == 4
    assert lab.tools.entries() == [key, key]
    assert lab.executions(session_id) == [
        completed(StepType.START_AGENT_SESSION), completed(StepType.RUN_MODEL),
        completed(StepType.CALL_TOOL, attempt=2), completed(StepType.RESUME_TURN), completed(StepType.RUN_MODEL)]

    messages = lab.sessions.snapshot(session_id).messages
    assert [(m.role, m.tool_call_id, m.tool_output) for m in messages if m.role is MessageRole.TOOL] == [
        (MessageRole.TOOL, LOOKUP_CALL_ID, LOOKUP_OUTPUT)]
    assert messages[-1].text == LOOKUP_ANSWER
    tool_events = [(e.type, e.attempt, e.payload.get("status")) for e in lab.events(session_id)
                   if e.step_execution_id == "CallTool-1"]
    assert tool_events == [("tool_call_started", 1, None), ("tool_call_started", 2, None),
                           ("tool_call_finished", 2, "succeeded")]


def test_an_approval_survives_a_sigkilled_worker(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    """The Worker child raises the refund's interrupt and is SIGKILLed while the session waits for
    the approval (no Step method running); a new child serves the approval, the refund runs once and
    the turn completes."""
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    worker = lab.start_worker()
    session_id = new_session_id()

    lab.sessions.start_session(session_id, REFUND_MESSAGE)
    interrupt = lab.sessions.wait_for_pending_interrupt(session_id, "refund")
    lab.sessions.wait_for_status(session_id, AgentStatus.RUNNING_TOOLS)
    waiting = {StepType.AWAIT_TOOL_APPROVAL.value, StepType.RESUME_TURN.value}

    def both_wait_on_dex() -> bool | None:  # their wait_for methods returned: no Step method is running
        returned = {e.step_type for e in lab.history(session_id) if e.event_type == WAIT_FOR_COMPLETED}
        return True if returned == waiting else None

    poll_until(both_wait_on_dex, timeout=CRASH_TIMEOUT, description="AwaitToolApproval and ResumeTurn to wait")
    assert [e for e in lab.executions(session_id) if e[0] in waiting] == []
    worker.kill()
    assert worker.returncode == -9
    assert lab.sessions.read_pending_interrupts(session_id) == pvector([interrupt])  # committed, no Worker
    lab.start_worker()

    assert lab.sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    state = lab.sessions.wait_for_completed_turns(session_id, 1)
    assert state.message_count == 4
    assert lab.tools.entries() == [tool_key(session_id, "refund", REFUND_CALL_ID)]
    assert lab.executions(session_id) == [
        completed(StepType.START_AGENT_SESSION), completed(StepType.RUN_MODEL),
        completed(StepType.AWAIT_TOOL_APPROVAL), completed(StepType.CALL_SINGLE_ATTEMPT_TOOL),
        completed(StepType.RESUME_TURN), completed(StepType.RUN_MODEL)]
    messages = lab.sessions.snapshot(session_id).messages
    assert [m.tool_output for m in messages if m.role is MessageRole.TOOL] == ["order 42 refunded"]
    assert messages[-1].text == REFUND_ANSWER
    assert lab.sessions.read_pending_interrupts(session_id) == pvector()
