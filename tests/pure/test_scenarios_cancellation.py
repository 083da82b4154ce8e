"""An operator's cancellations (issue 25, item 2): ``cancel_turn`` and ``cancel_tool_call`` decide in
the RPC's commit (records final with their audit, the Steps Dex cancels, the Step that finishes the
job), then ``CancelTurn`` ends the turn canceled with a note for the model and
``RecordToolCancellation`` hands the turn the call's result. Every branch of
``reducers.cancel`` is walked here."""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import AnswerRpc, BuildUserMessage, PublishToChannelInstance, SetMapInstance
from dex_agents.pure.machine.reducers.cancel import NO_CANCELLATION, TURN_STEPS
from dex_agents.pure.machine.step_inputs import (
    CancelToolCallCalled,
    CancelTurnCalled,
    ToolCancellationStarted,
    TurnCancelNote,
    TurnCancelStarted,
    UserMessageBuilt,
)
from dex_agents.pure.machine.texts import TURN_CANCEL_NOTE_HEADER, describe_tool_call_outcome
from dex_agents.pure.values.persistence import AGENT_TOOL_CALLS, StepType
from dex_agents.pure.values.rpc import CancelToolCallInput, CancelTurnInput
from dex_agents.pure.values.session import AgentStatus, ToolCallStatus, ToolEffect

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    answer_of,
    assistant_message,
    completed,
    completions_of,
    event_types,
    failure_of,
    invocation,
    is_dead_end,
    moves,
    requested,
    started_session,
    tool_call,
    user_message,
)

REASON = "wrong customer"


def cancel_turn(session: Session, turn_id: str = "turn-1", reason: str = REASON) -> object:
    return session.feed_rpc(CancelTurnCalled(input=CancelTurnInput(turn_id=turn_id, reason=reason), now_ms=session.now_ms))


def cancel_call(session: Session, tool_call_id: str, reason: str = REASON) -> object:
    return session.feed_rpc(CancelToolCallCalled(input=CancelToolCallInput(tool_call_id=tool_call_id, reason=reason),
                                                 now_ms=session.now_ms))


def ending(t: object) -> AnswerRpc:
    end = t.ending  # type: ignore[attr-defined]
    assert isinstance(end, AnswerRpc)
    return end


def four_calls() -> Session:
    """turn-1 running tools: a read, an idempotent write, a single-attempt write, and an approval."""
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ), tool_call("i", ToolEffect.IDEMPOTENT_WRITE),
                            tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
                            tool_call("a", ToolEffect.NON_IDEMPOTENT_WRITE)))
    return session


def test_cancel_turn_finishes_every_open_record_in_the_rpcs_commit_and_cancels_the_turns_steps() -> None:
    session = four_calls()
    t = cancel_turn(session)
    assert answer_of(t) is True  # type: ignore[arg-type]
    end = ending(t)
    assert set(end.cancel_steps) == set(TURN_STEPS)
    assert StepType.AWAIT_USER_MESSAGE not in end.cancel_steps and StepType.CANCEL_TURN not in end.cancel_steps
    assert [m.step_type for m in end.next_steps] == [StepType.CANCEL_TURN]
    records = session.record
    assert records["r"].status is ToolCallStatus.CANCELED and records["i"].status is ToolCallStatus.CANCELED
    assert records["r"].error == f"cancelled by the user: {REASON}"
    assert records["w"].status is ToolCallStatus.OUTCOME_UNKNOWN, "a single-attempt write may have started"
    assert records["w"].error is not None and "will not run again" in records["w"].error
    assert records["a"].status is ToolCallStatus.REJECTED
    assert records["a"].rejection_message == f"cancelled by the user: {REASON}"
    for record in records.values():
        assert record.cancellation is not None
        assert (record.cancellation.reason, record.cancellation.scope) == (REASON, "turn")
        assert record.cancellation.canceled_at == format_instant(session.now_ms)
    writes = [e for e in t.effects if isinstance(e, SetMapInstance) and e.map is AGENT_TOOL_CALLS]  # type: ignore[attr-defined]
    assert len(writes) == 4, "the audit is written in the RPC's own commit"
    assert session.state.pending_interrupts == pvector()
    agent_state = session.state.agent_state
    assert agent_state is not None and agent_state.cancellation is not None
    assert (agent_state.cancellation.turn_id, agent_state.cancellation.reason) == ("turn-1", REASON)
    assert t.record is not None, "the call's clock is recorded"  # type: ignore[attr-defined]


def test_a_record_that_finished_before_the_cancellation_keeps_its_outcome() -> None:
    session = four_calls()
    session.run_tool("r", output="found it")
    cancel_turn(session)
    assert session.record["r"].status is ToolCallStatus.SUCCEEDED and session.record["r"].cancellation is None


def test_cancel_turn_end_to_end_tells_the_next_model_call_and_keeps_queued_messages() -> None:
    session = four_calls()
    session.send("and another thing")
    cancel_turn(session)
    t = session.run_step(TurnCancelStarted(invocation=session.inv()))
    first = session.attempt[0]
    assert isinstance(first.ending, BuildUserMessage) and isinstance(first.ending.purpose, TurnCancelNote)
    note = first.ending.text
    assert note.startswith(TURN_CANCEL_NOTE_HEADER) and f"Reason: {REASON}" in note
    assert f"-> canceled: cancelled by the user: {REASON}" in note
    types = [e.type for e in session.attempt_events()]
    assert types.count("tool_call_finished") == 4 and types.count("interrupt_resolved") == 1
    assert types[-1] == "dex_agents.turn_canceled"
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]
    agent_state = session.state.agent_state
    assert agent_state is not None
    assert agent_state.status is AgentStatus.WAITING_FOR_USER_MESSAGE and agent_state.current_turn_id is None
    assert (agent_state.canceled_turn_count, agent_state.cancellation, agent_state.last_turn_error) == (1, None, None)
    assert agent_state.ended_turn_count == agent_state.turn_count == 1
    assert session.state.tool_calls.keys() == set(), "the turn's records are cleared"
    assert session.state.messages[-1].text == note, "the note is the canceled turn's last message"
    assert session.state.queued_message_count == 1, "queued messages are kept for the next turn"
    session.user_message_arrives("and another thing")
    assert session.state.current_turn_id == "turn-2"


def test_cancel_turn_answers_false_for_another_turn_no_turn_or_a_cancellation_under_way() -> None:
    waiting = started_session()
    waiting.model(completed("hi"))
    assert answer_of(cancel_turn(waiting)) is False  # type: ignore[arg-type]
    session = four_calls()
    assert answer_of(cancel_turn(session, turn_id="turn-7")) is False  # type: ignore[arg-type]
    assert answer_of(cancel_turn(session)) is True  # type: ignore[arg-type]
    again = cancel_turn(session)
    assert answer_of(again) is False and again.effects == pvector()  # type: ignore[arg-type, attr-defined]
    assert answer_of(cancel_call(session, "r")) is False, "no single call while the turn is being canceled"  # type: ignore[arg-type]


def test_cancel_turn_before_the_session_started_answers_false() -> None:
    session = Session()
    assert answer_of(cancel_turn(session)) is False  # type: ignore[arg-type]


def test_a_blank_or_unencodable_reason_is_refused_and_changes_nothing() -> None:
    session = four_calls()
    before = session.state
    assert "blank" in failure_of(cancel_turn(session, reason="  "))  # type: ignore[arg-type]
    assert "surrogate" in failure_of(cancel_turn(session, reason="\ud800"))  # type: ignore[arg-type]
    assert "blank" in failure_of(cancel_call(session, "r", reason=""))  # type: ignore[arg-type]
    assert "surrogate" in failure_of(cancel_call(session, "r\ud800"))  # type: ignore[arg-type]
    assert session.state == before


def test_cancel_tool_call_of_a_running_read_finishes_it_and_the_turn_goes_on() -> None:
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ)))
    t = cancel_call(session, "r", reason="too slow")
    assert answer_of(t) is True  # type: ignore[arg-type]
    end = ending(t)
    assert list(end.cancel_steps) == [StepType.CALL_TOOL]
    assert [(m.step_type, m.input) for m in end.next_steps] == [(StepType.RECORD_TOOL_CANCELLATION, "r")]
    record = session.record["r"]
    assert record.status is ToolCallStatus.CANCELED and record.cancellation is not None
    assert record.cancellation.scope == "tool_call"
    assert describe_tool_call_outcome(record) == "cancelled by the user: too slow"
    finished = session.run_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="r"))
    assert is_dead_end(finished) and completions_of(finished) == ["r"]
    assert event_types(finished) == ["tool_call_finished"]
    resumed = session.results_arrive(1)
    assert moves(resumed) == [(StepType.RUN_MODEL, None)], "the turn goes on; the model reads the result"


def test_cancel_tool_call_of_a_single_attempt_write_leaves_its_outcome_unknown() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    t = cancel_call(session, "w")
    assert list(ending(t).cancel_steps) == [StepType.CALL_SINGLE_ATTEMPT_TOOL]
    record = session.record["w"]
    assert record.status is ToolCallStatus.OUTCOME_UNKNOWN
    assert describe_tool_call_outcome(record).endswith(f"cancelled by the user: {REASON} (the write may have started; "
                                                       "whether it took effect is unknown, and it will not run again)")


def test_cancelling_one_of_several_reads_runs_the_others_again_under_their_keys() -> None:
    session = started_session()
    session.model(requested(tool_call("r1"), tool_call("r2"), tool_call("r3")))
    session.run_tool("r3")
    t = cancel_call(session, "r1")
    assert [(m.step_type, m.input) for m in ending(t).next_steps] == [
        (StepType.RECORD_TOOL_CANCELLATION, "r1"), (StepType.CALL_TOOL, "r2")]


def test_a_single_attempt_write_beside_another_running_one_is_refused() -> None:
    session = started_session()
    session.model(requested(tool_call("w1", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
                            tool_call("w2", ToolEffect.UNCLASSIFIED, requires_approval=False)))
    assert "cancel the turn instead" in failure_of(cancel_call(session, "w1"))  # type: ignore[arg-type]
    assert session.record["w1"].status is ToolCallStatus.PENDING


def test_cancel_tool_call_of_a_pending_approval_rejects_it_through_its_resolution() -> None:
    session = started_session()
    session.model(requested(tool_call("a", ToolEffect.NON_IDEMPOTENT_WRITE)))
    t = cancel_call(session, "a", reason="not today")
    assert answer_of(t) is True and not ending(t).cancel_steps  # type: ignore[arg-type]
    (publish,) = [e for e in t.effects if isinstance(e, PublishToChannelInstance)]  # type: ignore[attr-defined]
    assert publish.key == "turn-1:a"
    assert (publish.value.approved, publish.value.rejection_message) == (False, "cancelled by the user: not today")
    assert session.state.pending_interrupts == pvector()
    rejected = session.resolution_arrives("a", False, "cancelled by the user: not today")
    assert session.record["a"].status is ToolCallStatus.REJECTED and completions_of(rejected) == ["a"]


def test_cancel_tool_call_answers_false_when_there_is_nothing_to_cancel() -> None:
    session = started_session()
    session.model(requested(tool_call("r"), tool_call("w", ToolEffect.IDEMPOTENT_WRITE)))
    session.run_tool("r")
    assert answer_of(cancel_call(session, "r")) is False, "already final"  # type: ignore[arg-type]
    assert answer_of(cancel_call(session, "nope")) is False, "unknown"  # type: ignore[arg-type]
    session.attempts_exhausted("w", "boom")
    assert session.record["w"].unknown_error is not None or session.record["w"].status.is_final
    assert answer_of(cancel_call(session, "w")) is False, "being reconciled or final"  # type: ignore[arg-type]
    assert answer_of(cancel_call(Session(), "r")) is False, "no session"  # type: ignore[arg-type]


def test_an_approval_already_resolved_meanwhile_answers_false() -> None:
    session = started_session()
    session.model(requested(tool_call("a", ToolEffect.NON_IDEMPOTENT_WRITE)))
    session.resolve("turn-1:a", True)
    assert answer_of(cancel_call(session, "a")) is False  # type: ignore[arg-type]


def test_a_reconciling_write_canceled_with_its_turn_stays_outcome_unknown() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.IDEMPOTENT_WRITE)))
    reconciling = replace(session.record["w"], unknown_error="Worker lost")  # its reconcile is being asked
    session.state = replace(session.state, tool_calls=session.state.tool_calls.set("w", reconciling))
    cancel_turn(session)
    assert (session.record["w"].status, session.record["w"].error) == (ToolCallStatus.OUTCOME_UNKNOWN, "Worker lost")


def test_the_finishing_steps_reject_inputs_that_do_not_fit() -> None:
    session = four_calls()
    assert failure_of(session.feed_step(TurnCancelStarted(invocation=session.inv()))) == NO_CANCELLATION
    assert "not cancelled by cancel_tool_call" in failure_of(
        session.feed_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="r")))
    assert "no record" in failure_of(session.feed_step(ToolCancellationStarted(invocation=session.inv(),
                                                                               tool_call_id="zz")))
    idle = Session()
    assert failure_of(idle.feed_step(TurnCancelStarted(invocation=idle.inv())))
    waiting = started_session()
    waiting.model(completed("done"))
    assert failure_of(waiting.feed_step(TurnCancelStarted(invocation=waiting.inv())))


def test_a_cancel_note_the_runner_built_badly_fails_the_attempt() -> None:
    session = four_calls()
    cancel_turn(session)
    t = session.feed_step(TurnCancelStarted(invocation=session.inv()))
    bad = UserMessageBuilt(invocation=invocation(now_ms=T0_MS), purpose=TurnCancelNote(),
                           message=assistant_message("not a user message"))
    assert failure_of(session.feed_step(bad, previous=t))


def test_cancel_turn_announces_only_the_records_it_finished() -> None:
    session = started_session()
    session.model(requested(tool_call("r1"), tool_call("r2")))
    session.run_tool("r1", output="done")
    cancel_turn(session)
    session.run_step(TurnCancelStarted(invocation=session.inv()))
    finished = [e.payload["tool_call_id"] for e in session.attempt_events() if e.type == "tool_call_finished"]
    assert finished == ["r2"], "r1 announced its own end when it finished"
    assert "-> succeeded: done" in session.state.messages[-1].text  # type: ignore[operator]


def test_a_cancel_note_without_a_cancellation_under_way_is_rejected() -> None:
    session = four_calls()
    note = UserMessageBuilt(invocation=invocation(now_ms=T0_MS), purpose=TurnCancelNote(),
                            message=user_message("[Dex] note"))
    assert failure_of(session.feed_step(note)) == NO_CANCELLATION
