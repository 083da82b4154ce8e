"""An operator's cancellations (issue 25, item 2): ``cancel_turn`` and ``cancel_tool_call`` commit the
request with its audit (never a value a Step writes), the Steps Dex cancels and the Step that finishes
the job; ``CancelTurn`` then makes the records final and ends the turn canceled with a note for the
model, ``RecordToolCancellation`` hands the turn the call's result (or keeps the outcome the call
committed first). Every branch of ``reducers.cancel`` is walked here."""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pmap, pvector

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import PublishToChannelInstance, SetMapInstance
from dex_agents.pure.machine.endings import AnswerRpc, BuildUserMessage
from dex_agents.pure.machine.reducers.cancel import NO_CANCELLATION, TURN_STEPS
from dex_agents.pure.machine.reducers.common import set_agent_state
from dex_agents.pure.machine.rpc_calls import CancelToolCallCalled, CancelTurnCalled
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelNote,
    TurnCancelStarted,
    UserMessageBuilt,
)
from dex_agents.pure.machine.transition import StepTransition
from dex_agents.pure.machine.texts import TURN_CANCEL_NOTE_HEADER, describe_tool_call_outcome
from dex_agents.pure.machine.effects import DeleteAttribute, SetAttribute
from dex_agents.pure.machine.endings import GoToSteps
from dex_agents.pure.values.persistence import (
    TOOL_CALL_CANCELLATIONS,
    TURN_CANCELLATION,
    UNKNOWN_TOOL_OUTCOMES,
    StepType,
)
from dex_agents.pure.values.rpc import CancelToolCallInput, CancelTurnInput
from dex_agents.pure.values.session import (
    AgentStatus,
    AgentToolCall,
    ToolCallCancellation,
    ToolCallStatus,
    ToolEffect,
    TurnCancellation,
)

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


def _cancellation(session: Session) -> TurnCancellation:
    return TurnCancellation(turn_id="turn-1", reason=REASON, requested_at=format_instant(session.now_ms))


def ending_of_decision(t: object) -> object:
    end = t.ending  # type: ignore[attr-defined]
    assert isinstance(end, GoToSteps)
    return end.cancel_steps


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


def test_cancel_turn_commits_the_request_alone_and_cancels_the_turns_steps() -> None:
    session = four_calls()
    before = session.record
    t = cancel_turn(session)
    assert answer_of(t) is True  # type: ignore[arg-type]
    end = ending(t)
    assert set(end.cancel_steps) == set(TURN_STEPS)
    assert StepType.AWAIT_USER_MESSAGE not in end.cancel_steps and StepType.CANCEL_TURN not in end.cancel_steps
    assert [m.step_type for m in end.next_steps] == [StepType.CANCEL_TURN]
    (write,) = t.effects  # type: ignore[attr-defined]
    assert isinstance(write, SetAttribute) and write.attribute is TURN_CANCELLATION, "the RPC writes no record"
    assert write.value == TurnCancellation(turn_id="turn-1", reason=REASON, requested_at=format_instant(session.now_ms))
    assert session.record == before and session.state.agent_state is not None
    assert t.record is not None, "the call's clock is recorded"  # type: ignore[attr-defined]


def test_cancel_turn_makes_every_open_record_final_from_a_fresh_read() -> None:
    session = four_calls()
    cancel_turn(session)
    session.run_step(TurnCancelStarted(invocation=session.inv()))
    statuses = {e.payload["tool_call_id"]: e.payload["status"] for e in session.attempt_events()
                if e.type == "tool_call_finished"}
    assert statuses == {"r": "canceled", "i": "canceled", "w": "outcome_unknown", "a": "rejected"}
    note = session.state.messages[-1].text or ""
    assert f"- tool_r {{}} -> canceled: cancelled by the user: {REASON}" in note
    assert f"- tool_a {{}} -> rejected: The tool call was rejected: cancelled by the user: {REASON}" in note
    (kept,) = [e for t in session.attempt for e in t.effects
               if isinstance(e, SetMapInstance) and e.map is UNKNOWN_TOOL_OUTCOMES]
    record = kept.value
    assert isinstance(record, AgentToolCall) and record.tool_call_id == "w", "kept for resolve_tool_outcome"
    assert record.status is ToolCallStatus.OUTCOME_UNKNOWN and "will not run again" in (record.error or "")
    assert record.cancellation is not None
    assert (record.cancellation.reason, record.cancellation.scope) == (REASON, "turn")
    assert record.cancellation.canceled_at == format_instant(session.now_ms)


def test_a_record_that_finished_before_the_cancellation_keeps_its_outcome() -> None:
    session = four_calls()
    cancel_turn(session)  # the RPC's read saw "r" pending; its Step committed before the cancellation
    session.run_tool("r", output="found it")
    session.run_step(TurnCancelStarted(invocation=session.inv()))
    assert "- tool_r {} -> succeeded: found it" in (session.state.messages[-1].text or "")


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
    assert (agent_state.canceled_turn_count, agent_state.last_turn_error) == (1, None)
    assert session.state.turn_cancellation is None, "the request is deleted"
    assert any(isinstance(e, DeleteAttribute) and e.attribute is TURN_CANCELLATION for e in t.effects)
    assert ending_of_decision(t) == pvector(TURN_STEPS), "whatever Step of the turn still runs is cancelled"
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
    assert answer_of(cancel_call(session, "r")) is False, "asked already"  # type: ignore[arg-type]
    end = ending(t)
    assert list(end.cancel_steps) == [StepType.CALL_TOOL, StepType.RECORD_TOOL_FAILURE]
    assert [(m.step_type, m.input) for m in end.next_steps] == [(StepType.RECORD_TOOL_CANCELLATION, "r")]
    (write,) = t.effects  # type: ignore[attr-defined]
    assert isinstance(write, SetMapInstance) and write.map is TOOL_CALL_CANCELLATIONS and write.key == "r"
    assert session.record["r"].status is ToolCallStatus.PENDING, "the RPC writes no record"
    finished = session.run_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="r"))
    assert is_dead_end(finished) and completions_of(finished) == ["r"]
    assert event_types(finished) == ["tool_call_finished"]
    record = session.record["r"]
    assert record.status is ToolCallStatus.CANCELED and record.cancellation is not None
    assert record.cancellation.scope == "tool_call"
    assert describe_tool_call_outcome(record) == "cancelled by the user: too slow"
    assert session.state.tool_call_cancellations == pmap(), "the request is deleted"
    resumed = session.results_arrive(1)
    assert moves(resumed) == [(StepType.RUN_MODEL, None)], "the turn goes on; the model reads the result"


def test_cancel_tool_call_of_a_single_attempt_write_leaves_its_outcome_unknown() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    t = cancel_call(session, "w")
    assert list(ending(t).cancel_steps) == [StepType.CALL_SINGLE_ATTEMPT_TOOL, StepType.RECORD_TOOL_OUTCOME_UNKNOWN]
    finished = session.run_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="w"))
    assert [e.key for e in finished.effects if isinstance(e, SetMapInstance) and e.map is UNKNOWN_TOOL_OUTCOMES] == ["w"]
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
    assert answer_of(cancel_call(session, "w")) is False, "its tool runs no more: nothing to cancel"  # type: ignore[arg-type]
    cancel_turn(session)
    session.run_step(TurnCancelStarted(invocation=session.inv()))
    assert "-> outcome_unknown: The tool call's outcome is unknown: Worker lost" in (session.state.messages[-1].text or "")


def test_the_finishing_steps_reject_inputs_that_do_not_fit() -> None:
    session = four_calls()
    assert failure_of(session.feed_step(TurnCancelStarted(invocation=session.inv()))) == NO_CANCELLATION
    second = session.feed_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="r"))
    assert is_dead_end(second) and second.effects == pvector(), "a second request's Step: the first did the job"
    asked = ToolCallCancellation(reason=REASON, canceled_at="2026-01-01T00:00:00.000Z", scope="tool_call")
    session.state = replace(session.state, tool_call_cancellations=pmap({"a": asked}))
    assert "awaits approval" in failure_of(session.feed_step(ToolCancellationStarted(invocation=session.inv(),
                                                                                     tool_call_id="a")))
    idle = Session()
    idle.state = replace(idle.state, turn_cancellation=_cancellation(idle))
    assert failure_of(idle.feed_step(TurnCancelStarted(invocation=idle.inv())))


def test_a_request_the_call_or_the_turn_outran_is_only_deleted() -> None:
    session = started_session()
    session.model(requested(tool_call("r"), tool_call("gone")))
    cancel_call(session, "r")
    session.run_tool("r", output="found it")  # its Step committed before the cancellation took effect
    late = session.run_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="r"))
    assert is_dead_end(late) and completions_of(late) == [] and event_types(late) == []
    assert session.record["r"].status is ToolCallStatus.SUCCEEDED and session.state.tool_call_cancellations == pmap()
    asked = ToolCallCancellation(reason=REASON, canceled_at="2026-01-01T00:00:00.000Z", scope="tool_call")
    session.state = replace(session.state, tool_call_cancellations=pmap({"missing": asked}))
    assert is_dead_end(session.run_step(ToolCancellationStarted(invocation=session.inv(), tool_call_id="missing")))

    waiting = started_session()
    waiting.model(completed("done"))
    waiting.state = replace(waiting.state, turn_cancellation=_cancellation(waiting),
                            tool_call_cancellations=pmap({"x": asked}))
    ended = waiting.run_step(TurnCancelStarted(invocation=waiting.inv()))
    assert is_dead_end(ended), "the turn ended as the request came: no AwaitUserMessage twice"
    assert {type(e).__name__ for e in ended.effects} == {"DeleteAttribute", "DeleteMapInstance"}
    assert waiting.state.turn_cancellation is None and waiting.state.agent_state is not None
    assert waiting.state.agent_state.canceled_turn_count == 0


def _request_outran_by_turn_2(session: Session) -> None:
    """turn-1 ended and turn-2 began as the request to cancel turn-1 committed: Dex cancelled the Steps
    running then, turn-2's."""
    session.state = replace(session.state, turn_cancellation=_cancellation(session))


def _turn_2_carried_on(session: Session, t: StepTransition) -> None:
    agent_state = session.state.agent_state
    assert agent_state is not None and agent_state.current_turn_id == "turn-2"
    assert agent_state.canceled_turn_count == 0 and session.state.turn_cancellation is None
    assert event_types(t) == [] and completions_of(t) == []
    assert DeleteAttribute.of(TURN_CANCELLATION) in t.effects


def test_a_newer_turn_the_cancellation_stopped_at_its_model_call_carries_on() -> None:
    session = started_session()
    session.model(completed("done"))
    session.user_message_arrives("next")
    _request_outran_by_turn_2(session)
    t = session.feed_step(TurnCancelStarted(invocation=session.inv()))
    _turn_2_carried_on(session, t)
    assert moves(t) == [(StepType.RUN_MODEL, None)], "its cancelled model call starts again"


def test_a_newer_turn_the_cancellation_stopped_in_its_tool_calls_carries_on() -> None:
    session = started_session()
    session.model(completed("done"))
    session.user_message_arrives("next")
    session.model(requested(tool_call("r", ToolEffect.READ), tool_call("i", ToolEffect.IDEMPOTENT_WRITE),
                            tool_call("a", ToolEffect.NON_IDEMPOTENT_WRITE), tool_call("done"),
                            tool_call("u", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    session.run_tool("done")
    asked = ToolCallCancellation(reason="slow", canceled_at=format_instant(session.now_ms), scope="tool_call")
    reconciling = replace(session.record["u"], unknown_error="the Worker died")  # its reconcile check ran
    session.state = replace(session.state, tool_call_cancellations=pmap({"i": asked}),
                            tool_calls=session.state.tool_calls.set("u", reconciling))
    _request_outran_by_turn_2(session)
    t = session.feed_step(TurnCancelStarted(invocation=session.inv()))
    _turn_2_carried_on(session, t)
    assert moves(t) == [(StepType.CALL_TOOL, "r"), (StepType.RECORD_TOOL_CANCELLATION, "i"),
                        (StepType.AWAIT_TOOL_APPROVAL, "a"), (StepType.RECONCILE_TOOL_OUTCOME, "u"),
                        (StepType.RESUME_TURN, 4)]
    assert session.state.tool_call_cancellations == pmap({"i": asked}), "the call's own request still stands"
    assert all(record.status is not ToolCallStatus.CANCELED for record in session.record.values())


def test_a_newer_turn_whose_tool_calls_all_finished_goes_back_to_its_model() -> None:
    session = started_session()
    session.model(completed("done"))
    session.user_message_arrives("next")
    session.model(requested(tool_call("r", ToolEffect.READ)))
    session.state = replace(session.state, tool_calls=session.state.tool_calls.set(
        "r", replace(session.record["r"], status=ToolCallStatus.SUCCEEDED, output="ok")))
    _request_outran_by_turn_2(session)
    t = session.feed_step(TurnCancelStarted(invocation=session.inv()))
    _turn_2_carried_on(session, t)
    assert moves(t) == [(StepType.RUN_MODEL, None)]
    agent_state = session.state.agent_state
    assert agent_state is not None and agent_state.status is AgentStatus.RUNNING_MODEL
    assert set_agent_state(agent_state) in t.effects


def test_a_newer_turn_with_a_write_that_cannot_run_again_ends_canceled() -> None:
    session = started_session()
    session.model(completed("done"))
    session.user_message_arrives("next")
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    _request_outran_by_turn_2(session)
    session.run_step(TurnCancelStarted(invocation=session.inv()))
    agent_state = session.state.agent_state
    assert agent_state is not None and agent_state.canceled_turn_count == 1 and agent_state.current_turn_id is None
    assert session.state.unknown_tool_outcomes["w"].status is ToolCallStatus.OUTCOME_UNKNOWN, "it may have started"


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


def test_a_cancel_note_with_no_session_or_no_turn_is_rejected() -> None:
    note = UserMessageBuilt(invocation=invocation(now_ms=T0_MS), purpose=TurnCancelNote(),
                            message=user_message("[Dex] note"))
    idle = Session()
    idle.state = replace(idle.state, turn_cancellation=_cancellation(idle))
    assert failure_of(idle.feed_step(note))
    waiting = started_session()
    waiting.model(completed("done"))
    waiting.state = replace(waiting.state, turn_cancellation=_cancellation(waiting))
    assert failure_of(waiting.feed_step(note))
