"""Named scenarios, one or more per row of the spec's Step table and per line of its Flow shape."""

from __future__ import annotations

from pyrsistent import pvector

from dex_agents.pure.machine.effects import DeleteAttribute, DeleteMapInstance, SetAttribute, SetMapInstance, WriteEvent
from dex_agents.pure.machine.endings import ExecuteDeferredToolCall, SendHeartbeat
from dex_agents.pure.values.persistence import (
    AGENT_MESSAGES,
    AGENT_STATE,
    AGENT_TOOL_CALLS,
    AGENT_USAGE,
    FRAMEWORK_RUN_STATE,
    PENDING_INTERRUPTS,
    TURN_MODEL_CALL_COUNT,
    StepType,
)
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.texts import approval_deadline_passed_message, outcome_unknown_tool_result
from dex_agents.pure.values.session import AgentStatus, AgentUsage, ToolCallStatus, ToolEffect

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    completed,
    completions_of,
    event_types,
    is_dead_end,
    moves,
    of_type,
    requested,
    started_session,
    tool_call,
)


def test_start_agent_session_without_initial_message_initializes_and_awaits_a_user_message() -> None:
    session = Session()
    t = session.start(None)
    state = t.state.agent_state
    assert state is not None
    assert (state.status, state.turn_count, state.message_count, state.current_turn_id) == (
        AgentStatus.WAITING_FOR_USER_MESSAGE,
        0,
        0,
        None,
    )
    written = {effect.attribute for effect in of_type(t.effects, SetAttribute)}
    assert written == {AGENT_STATE, AGENT_USAGE, PENDING_INTERRUPTS}
    assert t.state.usage == AgentUsage()
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]
    assert event_types(t) == []


def test_start_agent_session_with_initial_message_starts_turn_1_and_runs_the_model() -> None:
    session = Session()
    t = session.start("Where is order 42?")
    state = t.state.agent_state
    assert state is not None
    assert (state.status, state.turn_count, state.current_turn_id, state.current_turn_sequence) == (
        AgentStatus.RUNNING_MODEL,
        1,
        "turn-1",
        1,
    )
    assert [m.text for m in t.state.messages] == ["Where is order 42?"]
    assert of_type(t.effects, SetMapInstance)[0].key == "000000000001"
    assert event_types(t) == ["turn_started"]
    assert moves(t) == [(StepType.RUN_MODEL, None)]


def test_await_user_message_appends_the_message_and_starts_the_next_turn() -> None:
    session = Session()
    session.start(None)
    session.send("hello")
    t = session.user_message_arrives("hello")
    state = t.state.agent_state
    assert state is not None
    assert (state.turn_count, state.current_turn_id, state.message_count) == (1, "turn-1", 1)
    assert t.state.queued_message_count == 0
    assert t.state.messages[-1].turn_id == "turn-1"
    assert moves(t) == [(StepType.RUN_MODEL, None)]


def test_run_model_turn_completed_appends_the_messages_and_clears_the_turn() -> None:
    session = started_session()
    t = session.model(completed("It ships today."))
    state = t.state.agent_state
    assert state is not None
    assert (state.status, state.current_turn_id, state.completed_turn_count, state.message_count) == (
        AgentStatus.WAITING_FOR_USER_MESSAGE,
        None,
        1,
        2,
    )
    assert [m.text for m in t.state.messages] == ["Where is order 42?", "It ships today."]
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_run_model_tool_calls_requested_stores_run_state_records_and_interrupts_then_fans_out() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=60_000))
    t = session.model(requested(tool_call("a", ToolEffect.READ), tool_call("b", ToolEffect.NON_IDEMPOTENT_WRITE)))
    assert t.state.framework_run_state == "run-state"
    assert set(t.state.tool_calls) == {"a", "b"}
    assert [i.tool_call_id for i in t.state.pending_interrupts] == ["b"]
    assert t.state.agent_state is not None and t.state.agent_state.status is AgentStatus.RUNNING_TOOLS
    assert moves(t) == [(StepType.CALL_TOOL, "a"), (StepType.AWAIT_TOOL_APPROVAL, "b"), (StepType.RESUME_TURN, 2)]


def test_run_model_failure_routes_to_record_turn_failure_then_awaits_a_user_message() -> None:
    session = started_session()
    t = session.turn_fails("model unavailable")
    state = t.state.agent_state
    assert state is not None
    assert (state.last_turn_error, state.failed_turn_count, state.current_turn_id) == ("model unavailable", 1, None)
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_await_tool_approval_approved_moves_to_the_calls_tool_step() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    session.resolve("turn-1:w", True)
    t = session.resolution_arrives("w", True)
    assert t.state.tool_calls["w"].status is ToolCallStatus.PENDING
    assert moves(t) == [(StepType.CALL_SINGLE_ATTEMPT_TOOL, "w")]


def test_await_tool_approval_rejected_records_rejected_and_dead_ends_after_publishing() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    session.resolve("turn-1:w", False, "not now")
    t = session.resolution_arrives("w", False, "not now")
    record = t.state.tool_calls["w"]
    assert (record.status, record.rejection_message) == (ToolCallStatus.REJECTED, "not now")
    assert completions_of(t) == ["w"]
    assert is_dead_end(t)


def test_await_tool_approval_expired_records_rejected_with_the_deadline_text() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=1_000))
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    session.now_ms = T0_MS + 1_000
    t = session.timer_fires("w")
    record = t.state.tool_calls["w"]
    assert (record.status, record.rejection_message) == (ToolCallStatus.REJECTED, approval_deadline_passed_message)
    assert completions_of(t) == ["w"] and is_dead_end(t)


def test_call_tool_runs_a_read_call_and_dead_ends_after_publishing() -> None:
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ)))
    started = session.tool_started("r")
    assert [type(t.ending) for t in session.attempt] == [ExecuteDeferredToolCall], (
        "a retried call needs no heartbeat proof before it runs: a re-delivery is one more run, which its effect allows")
    assert [type(e) for e in started.effects] == [WriteEvent]
    t = session.tool_succeeds("r", "order 42: shipped")
    assert t.state.tool_calls["r"].output == "order 42: shipped"
    assert completions_of(t) == ["r"] and is_dead_end(t)


def test_call_single_attempt_tool_runs_an_unapproved_non_idempotent_write() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    assert moves(session.attempt[-1])[0] == (StepType.CALL_SINGLE_ATTEMPT_TOOL, "w")
    session.tool_started("w")
    announced, ran = session.attempt
    assert ([type(e) for e in announced.effects], announced.ending) == ([WriteEvent], SendHeartbeat(tool_call_id="w")), (
        "the heartbeat proof ends Dex's re-delivery of the attempt before the tool runs")
    assert isinstance(ran.ending, ExecuteDeferredToolCall) and ran.effects == pvector()
    t = session.tool_succeeds("w", "sent")
    assert t.state.tool_calls["w"].status is ToolCallStatus.SUCCEEDED


def test_record_tool_failure_records_failed_for_a_read_and_outcome_unknown_for_a_write() -> None:
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ), tool_call("i", ToolEffect.IDEMPOTENT_WRITE)))
    read = session.attempts_exhausted("r", "timeout")
    write = session.attempts_exhausted("i", "connection reset")
    assert (read.state.tool_calls["r"].status, read.state.tool_calls["r"].error) == (ToolCallStatus.FAILED, "timeout")
    assert (write.state.tool_calls["i"].status, write.state.tool_calls["i"].error) == (
        ToolCallStatus.OUTCOME_UNKNOWN,
        "connection reset",
    )


def test_record_tool_outcome_unknown_records_outcome_unknown_with_the_recovery_error() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    t = session.single_attempt_failed("w", "worker lost")
    record = t.state.tool_calls["w"]
    assert (record.status, record.error) == (ToolCallStatus.OUTCOME_UNKNOWN, "worker lost")
    assert completions_of(t) == ["w"] and is_dead_end(t)


def test_resume_turn_waits_again_for_open_records_then_moves_to_run_model() -> None:
    session = started_session()
    session.model(requested(tool_call("a"), tool_call("b")))
    session.run_tool("a")
    early = session.results_arrive(2)
    assert moves(early) == [(StepType.RESUME_TURN, 1)]
    session.run_tool("b")
    t = session.results_arrive(1)
    assert moves(t) == [(StepType.RUN_MODEL, None)]
    assert t.state.agent_state is not None and t.state.agent_state.status is AgentStatus.RUNNING_MODEL


def test_record_turn_failure_appends_the_note_first_when_the_turn_has_final_records() -> None:
    session = started_session()
    session.model(requested(tool_call("c", ToolEffect.IDEMPOTENT_WRITE, tool_name="charge_card", arguments='{"amount":5}')))
    session.attempts_exhausted("c", "gateway timeout")
    session.results_arrive(1)
    assert session.state.turn_model_call_count == 1
    t = session.turn_fails("model unavailable")
    note = t.state.messages[-1]
    assert note.turn_id == "turn-1" and note.sequence == 2
    assert note.text == (
        "[Dex] The previous turn failed after these tool calls ran:\n"
        '- charge_card {"amount":5} -> outcome_unknown: ' + outcome_unknown_tool_result("gateway timeout") + "\n"
        "Do not repeat these tool calls unless the user asks again."
    )
    message_writes = [e for e in of_type(t.effects, SetMapInstance) if e.map == AGENT_MESSAGES]
    assert t.effects.index(message_writes[0]) == 0, "the note is written first"
    assert of_type(t.effects, DeleteAttribute) == [
        DeleteAttribute(attribute=FRAMEWORK_RUN_STATE), DeleteAttribute(attribute=TURN_MODEL_CALL_COUNT)]
    assert of_type(t.effects, DeleteMapInstance) == [DeleteMapInstance(map=AGENT_TOOL_CALLS, key="c")]
    assert t.state.tool_calls == {} and t.state.framework_run_state is None and t.state.turn_model_call_count == 0


def test_flow_shape_one_read_tool_and_a_final_answer_runs_run_model_call_tool_resume_turn_run_model() -> None:
    session = Session()
    steps: list[StepType] = []
    t = session.start("Where is order 42?")
    steps.extend(step for step, _ in moves(t))
    t = session.model(requested(tool_call("r", ToolEffect.READ)))
    steps.extend(step for step, _ in moves(t))
    session.run_tool("r", "shipped")
    t = session.results_arrive(1)
    steps.extend(step for step, _ in moves(t))
    t = session.model(completed("It shipped."))
    steps.extend(step for step, _ in moves(t))
    assert steps == [
        StepType.RUN_MODEL,
        StepType.CALL_TOOL,
        StepType.RESUME_TURN,
        StepType.RUN_MODEL,
        StepType.AWAIT_USER_MESSAGE,
    ]
