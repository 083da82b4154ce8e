"""Whole-turn scenarios: parallel calls (a read runs while a sibling write awaits approval),
ToolExecutionError, exhausted retries, crashes, turn failures and their note, multi-response turns."""

from __future__ import annotations

from dex_agents.pure.machine.effects import DeleteMapInstance, SetAttribute
from dex_agents.pure.values.persistence import AGENT_TOOL_CALLS, FRAMEWORK_RUN_STATE, StepType
from dex_agents.pure.machine.reducers.turn import turn_failure_note
from dex_agents.pure.machine.texts import outcome_unknown_tool_result
from dex_agents.pure.values.session import AgentStatus, ToolCallStatus, ToolEffect

from tests.pure.scenario_support import (
    completed,
    completions_of,
    is_dead_end,
    moves,
    of_type,
    requested,
    started_session,
    tool_call,
)


def test_parallel_calls_a_read_runs_while_a_sibling_write_awaits_approval() -> None:
    session = started_session()
    t = session.model(requested(tool_call("r", ToolEffect.READ), tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE)))
    assert moves(t) == [(StepType.CALL_TOOL, "r"), (StepType.AWAIT_TOOL_APPROVAL, "w"), (StepType.RESUME_TURN, 2)]
    read_done = session.run_tool("r", "found")
    assert read_done.state.tool_calls["w"].status is ToolCallStatus.AWAITING_APPROVAL
    assert [i.tool_call_id for i in read_done.state.pending_interrupts] == ["w"]
    waiting = session.results_arrive(2)
    assert moves(waiting) == [(StepType.RESUME_TURN, 1)], "one result must not resume the turn"
    session.resolve("turn-1:w", True)
    session.resolution_arrives("w", True)
    write_done = session.run_tool("w", "written")
    assert completions_of(write_done) == ["w"]
    resumed = session.results_arrive(1)
    assert moves(resumed) == [(StepType.RUN_MODEL, None)]
    final = session.model(completed("both done"))
    assert final.state.tool_calls == {} and final.state.agent_state is not None
    assert final.state.agent_state.status is AgentStatus.WAITING_FOR_USER_MESSAGE


def test_tool_execution_error_records_failed_and_is_not_retried() -> None:
    session = started_session()
    session.model(requested(tool_call("r")))
    session.tool_started("r")
    t = session.tool_raises_execution_error("r", "order not found")
    record = t.state.tool_calls["r"]
    assert (record.status, record.error, record.output) == (ToolCallStatus.FAILED, "order not found", None)
    assert completions_of(t) == ["r"] and is_dead_end(t)
    rerun = session.tool_started("r")
    assert is_dead_end(rerun) and len(rerun.effects) == 0, "a final record ends its Step without running"


def test_exhausted_retries_after_a_success_was_recorded_change_nothing() -> None:
    session = started_session()
    session.model(requested(tool_call("r")))
    session.run_tool("r", "fine")
    t = session.attempts_exhausted("r", "late failure")
    assert is_dead_end(t) and len(t.effects) == 0
    assert t.state.tool_calls["r"].status is ToolCallStatus.SUCCEEDED


def test_a_single_attempt_call_crashing_records_outcome_unknown_and_the_model_sees_it() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, tool_name="send_email", requires_approval=False)))
    session.tool_started("w")
    crashed = session.single_attempt_failed("w", "worker SIGKILL")
    assert crashed.state.tool_calls["w"].status is ToolCallStatus.OUTCOME_UNKNOWN
    again = session.tool_started("w")
    assert is_dead_end(again) and len(again.effects) == 0, "a single-attempt call never runs twice"
    assert moves(session.results_arrive(1)) == [(StepType.RUN_MODEL, None)]


def test_turn_failure_without_final_records_appends_no_note() -> None:
    session = started_session()
    t = session.turn_fails("model down")
    assert [m.sequence for m in t.state.messages] == [1]
    assert t.state.agent_state is not None and t.state.agent_state.message_count == 1


def test_turn_failure_note_lists_final_records_in_deferral_order_across_responses() -> None:
    session = started_session()
    session.model(requested(tool_call("e", ToolEffect.IDEMPOTENT_WRITE, tool_name="send_email", arguments='{"to":"ops"}')))
    session.run_tool("e", "email sent")
    session.results_arrive(1)
    session.model(
        requested(
            tool_call("c", ToolEffect.NON_IDEMPOTENT_WRITE, tool_name="charge_card", arguments='{"amount":5}', requires_approval=False),
            run_state="run-state-2",
        )
    )
    assert session.state.tool_calls["c"].deferral_order == 1
    session.single_attempt_failed("c", "worker lost")
    session.results_arrive(1)
    note = turn_failure_note(session.state)
    assert note == (
        "[Dex] The previous turn failed after these tool calls ran:\n"
        '- send_email {"to":"ops"} -> succeeded: email sent\n'
        '- charge_card {"amount":5} -> outcome_unknown: ' + outcome_unknown_tool_result("worker lost") + "\n"
        "Do not repeat these tool calls unless the user asks again."
    )
    t = session.turn_fails("RunModel attempts exhausted")
    assert t.state.messages[-1].text == note
    assert [m.turn_id for m in t.state.messages] == ["turn-1", "turn-1"]
    deleted = {e.key for e in of_type(t.effects, DeleteMapInstance) if e.map == AGENT_TOOL_CALLS}
    assert deleted == {"e", "c"}


def test_the_next_turn_after_a_failed_turn_starts_clean_and_keeps_the_error_until_a_turn_completes() -> None:
    session = started_session()
    session.turn_fails("boom")
    session.send("retry please")
    t = session.user_message_arrives("retry please")
    assert t.state.agent_state is not None
    assert (t.state.agent_state.current_turn_id, t.state.agent_state.last_turn_error) == ("turn-2", "boom")
    done = session.model(completed("ok"))
    assert done.state.agent_state is not None and done.state.agent_state.last_turn_error is None
    assert (done.state.agent_state.completed_turn_count, done.state.agent_state.failed_turn_count) == (1, 1)


def test_a_resumed_turn_keeps_the_run_state_until_the_final_answer_deletes_it() -> None:
    session = started_session()
    session.model(requested(tool_call("a"), run_state="rs-1"))
    session.run_tool("a")
    session.results_arrive(1)
    assert session.state.framework_run_state == "rs-1"
    session.model(requested(tool_call("b"), run_state="rs-2"))
    assert session.state.framework_run_state == "rs-2"
    assert [r.deferral_order for r in session.state.records_in_deferral_order()] == [0, 1]
    session.run_tool("b")
    session.results_arrive(1)
    t = session.model(completed("done"))
    assert t.state.framework_run_state is None
    assert SetAttribute(attribute=FRAMEWORK_RUN_STATE, value="rs-2") not in t.effects
