"""Every reducer's guards: an input that does not fit the state is rejected with a clear error (state
unchanged, no effects, ``FailAttempt`` or ``RefuseRpc``), or, where the spec says so, ends its branch
without effects."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyrsistent import pvector

from dex_agents.pure.machine.effects import SetAttribute
from dex_agents.pure.machine.endings import AnswerRpc, BuildUserMessage, WaitForResolution
from dex_agents.pure.machine.keys import MAX_MESSAGE_SEQUENCE
from dex_agents.pure.values.persistence import AGENT_USAGE, PENDING_INTERRUPTS, StepType
from dex_agents.pure.machine.reducers import reduce
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    ApprovalWaitEnded,
    HeartbeatSent,
    InitialMessage,
    ModelAttemptsExhausted,
    ModelCallFinished,
    QueuedMessage,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailureNote,
    UserMessageArrived,
    UserMessageBuilt,
)
from dex_agents.pure.values.session import AgentSessionStartInput, AgentUserMessage, ToolCallStatus, ToolEffect

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    assistant_message,
    completed,
    failure_of,
    invocation,
    is_dead_end,
    moves,
    recovery,
    requested,
    started_session,
    tool_call,
    user_message,
)

CONFIG = SessionConfig()


def rejected(state: SessionState, session_input: SessionInput) -> str:
    t = reduce(state, CONFIG, session_input)
    assert t.state == state
    return failure_of(t)


def built(message: object, purpose: object = None) -> UserMessageBuilt:
    return UserMessageBuilt(invocation=invocation(), purpose=purpose or QueuedMessage(), message=message)  # type: ignore[arg-type]


def waiting_session() -> Session:
    session = Session()
    session.start(None)
    return session


def full_sequence_state(state: SessionState) -> SessionState:
    assert state.agent_state is not None
    return replace(state, agent_state=replace(state.agent_state, message_count=MAX_MESSAGE_SEQUENCE))


def started(initial: str | None) -> SessionStarted:
    return SessionStarted(invocation=invocation(), start_input=AgentSessionStartInput(initial_message=initial))


def test_start_twice_is_rejected() -> None:
    state = waiting_session().state
    assert "already started" in rejected(state, started(None))
    assert "already started" in rejected(state, built(user_message("hi"), InitialMessage()))


@pytest.mark.parametrize("initial", [None, "", "  \n\t"])
def test_a_blank_initial_message_starts_no_turn_and_asks_for_no_message(initial: str | None) -> None:
    """The core decides whether the initial message is blank (the shell hands it the start input)."""
    t = reduce(SessionState.initial(), CONFIG, started(initial))
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]
    assert t.state.agent_state is not None and t.state.agent_state.turn_count == 0
    assert SetAttribute.of(AGENT_USAGE, t.state.usage) in t.effects


def test_a_non_blank_initial_message_asks_the_runner_for_its_user_message_first() -> None:
    t = reduce(SessionState.initial(), CONFIG, started(" Hi \ud800"))
    assert t.ending == BuildUserMessage(text=" Hi \ufffd", purpose=InitialMessage())
    assert t.state == SessionState.initial() and t.effects == pvector(), "nothing is initialized before the message"


def test_an_initial_message_that_is_not_a_user_message_is_rejected() -> None:
    assert "not 'user'" in rejected(SessionState.initial(), built(assistant_message("hi"), InitialMessage()))


def user_message_arrived(*texts: str) -> UserMessageArrived:
    return UserMessageArrived(invocation=invocation(), consumed=pvector(AgentUserMessage(text=t) for t in texts))


def test_a_user_message_before_the_start_or_during_a_turn_is_rejected() -> None:
    for arrived_or_built in (user_message_arrived("hi"), built(user_message("hi"))):
        assert "not started" in rejected(SessionState.initial(), arrived_or_built)
        assert "turn-1 is still running" in rejected(started_session().state, arrived_or_built)


@pytest.mark.parametrize("count", [0, 2])
def test_await_user_message_consuming_other_than_one_message_is_rejected(count: int) -> None:
    """The core checks what the wait delivered (the shell used to raise before reducing)."""
    texts = ["first", "second"][:count]
    error = f"AwaitUserMessage consumed {count} messages, expected 1"
    assert rejected(waiting_session().state, user_message_arrived(*texts)) == error


def test_a_consumed_message_asks_the_runner_for_its_user_message() -> None:
    t = reduce(waiting_session().state, CONFIG, user_message_arrived("Where is order 42?"))
    assert t.ending == BuildUserMessage(text="Where is order 42?", purpose=QueuedMessage())


def test_a_message_past_the_last_sequence_key_is_rejected() -> None:
    state = full_sequence_state(waiting_session().state)
    assert "message sequence would pass" in rejected(state, built(user_message("hi")))


def model_finished(outcome: object) -> ModelCallFinished:
    return ModelCallFinished(invocation=invocation(), outcome=outcome)  # type: ignore[arg-type]


def test_a_model_outcome_outside_a_running_model_call_is_rejected() -> None:
    assert "not started" in rejected(SessionState.initial(), model_finished(completed("x")))
    assert "no turn is running" in rejected(waiting_session().state, model_finished(completed("x")))
    session = started_session()
    session.model(requested(tool_call("a")))
    assert "status running_tools" in rejected(session.state, model_finished(completed("x")))


def test_a_final_answer_past_the_last_sequence_key_is_rejected() -> None:
    state = full_sequence_state(started_session().state)
    assert "message sequence would pass" in rejected(state, model_finished(completed("x")))


def test_an_approval_deadline_outside_the_calendar_is_rejected() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=1_000))
    session.now_ms = -(10**15)
    assert "cannot compute the approval deadline" in failure_of(session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED))))


def test_a_far_future_approval_deadline_is_clamped_to_the_last_instant() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=10**15))
    t = session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    assert t.state.pending_interrupts[0].deadline == "9999-12-31T23:59:59.999Z"


def unreadable_deadline_session() -> Session:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    broken = pvector([replace(i, deadline="tomorrow") for i in session.state.pending_interrupts])
    session.state = replace(session.state, pending_interrupts=broken)
    return session


def test_an_unreadable_stored_deadline_fires_at_once_and_rejects_the_call_instead_of_failing_forever() -> None:
    session = unreadable_deadline_session()
    session.now_ms = T0_MS
    assert session.wait_for("w") == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=0)
    fired = session.timer_fires("w")
    assert not fired.is_rejection
    record = fired.state.tool_calls["w"]
    assert record.status is ToolCallStatus.REJECTED
    assert record.rejection_message == "approval deadline unreadable: 'tomorrow'"
    assert fired.state.pending_interrupts == pvector()


def test_resolving_an_interrupt_with_an_unreadable_deadline_answers_false() -> None:
    session = unreadable_deadline_session()
    resolved = session.resolve("turn-1:w", True)
    assert (resolved.effects, resolved.ending) == (pvector(), AnswerRpc(output=False))


def test_a_tool_step_for_a_call_awaiting_approval_is_rejected_and_never_runs() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    for step_input in (
        ToolStepStarted(invocation=invocation(), tool_call_id="w", step_type=StepType.CALL_SINGLE_ATTEMPT_TOOL),
        HeartbeatSent(invocation=invocation(), tool_call_id="w"),
        ToolCallSucceeded(invocation=invocation(), tool_call_id="w", output="x"),
    ):
        assert "still awaits approval" in rejected(session.state, step_input)


@pytest.mark.parametrize("wrong", [StepType.CALL_SINGLE_ATTEMPT_TOOL, StepType.RUN_MODEL])
def test_a_tool_step_of_the_wrong_type_is_rejected(wrong: StepType) -> None:
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ)))
    tool_started = ToolStepStarted(invocation=invocation(), tool_call_id="r", step_type=wrong)
    assert "runs in CallTool" in rejected(session.state, tool_started)


def test_tool_inputs_for_an_unknown_call_end_without_effects() -> None:
    session = started_session()
    session.model(requested(tool_call("r")))
    for t in (
        session.tool_started("ghost", StepType.CALL_TOOL),
        session.feed_step(HeartbeatSent(invocation=invocation(), tool_call_id="ghost")),
        session.tool_succeeds("ghost"),
        session.tool_raises_execution_error("ghost", "x"),
        session.attempts_exhausted("ghost", "x"),
        session.single_attempt_failed("ghost", "x"),
    ):
        assert is_dead_end(t) and len(t.effects) == 0


def results_arrived(expected: int = 1) -> ToolResultsArrived:
    return ToolResultsArrived(invocation=invocation(), expected=expected)


def test_resume_turn_outside_running_tools_is_rejected() -> None:
    assert "not started" in rejected(SessionState.initial(), results_arrived())
    assert "no turn is running" in rejected(waiting_session().state, results_arrived())
    assert "status running_model" in rejected(started_session().state, results_arrived())


def note_built(message: object) -> UserMessageBuilt:
    return built(message, TurnFailureNote(error="x", recorded_usage=None))


def test_record_turn_failure_outside_a_turn_is_rejected() -> None:
    session = waiting_session()
    for state, error in ((SessionState.initial(), "not started"), (session.state, "no turn is running")):
        assert error in failure_of(Session(state=state).turn_fails("x"))
        assert error in rejected(state, note_built(user_message("n")))


def final_records_session() -> Session:
    session = started_session()
    session.model(requested(tool_call("a")))
    session.run_tool("a")
    session.results_arrive(1)
    return session


def test_a_turn_failure_note_that_is_not_due_or_not_a_user_message_is_rejected() -> None:
    assert "no tool call of the turn is final" in rejected(started_session().state, note_built(user_message("n")))
    assert "not 'user'" in rejected(final_records_session().state, note_built(assistant_message("n")))


def test_record_turn_failure_rejects_a_note_past_the_last_sequence_key() -> None:
    state = full_sequence_state(final_records_session().state)
    assert "message sequence would pass" in rejected(state, note_built(user_message("note")))


def test_record_turn_failure_asks_for_the_note_only_when_a_record_is_final() -> None:
    """The core computes the note once and asks the runner to build it; the shell no longer computes it."""
    due = final_records_session()
    asked = due.feed_step(ModelAttemptsExhausted(invocation=invocation(), recovery_error=recovery("boom")))
    assert isinstance(asked.ending, BuildUserMessage) and asked.ending.text.startswith("[Dex] The previous turn failed")
    assert asked.ending.purpose == TurnFailureNote(error="boom", recorded_usage=None)
    not_due = started_session()
    failed = not_due.feed_step(ModelAttemptsExhausted(invocation=invocation(), recovery_error=recovery("boom")))
    assert moves(failed) == [(StepType.AWAIT_USER_MESSAGE, None)]


@pytest.mark.parametrize(
    ("flow_id", "attempt", "error"), [("", 1, "empty flow ID"), ("s", 0, "one-based")], ids=["flow-id", "attempt"]
)
def test_an_unusable_invocation_is_rejected_before_any_reducer(flow_id: str, attempt: int, error: str) -> None:
    unusable = SessionStarted(
        invocation=invocation(flow_id=flow_id, attempt=attempt), start_input=AgentSessionStartInput(initial_message=None)
    )
    assert error in rejected(SessionState.initial(), unusable)


def test_session_config_rejects_a_negative_deadline() -> None:
    with pytest.raises(ValueError, match="interrupt_deadline_ms"):
        SessionConfig(interrupt_deadline_ms=-1)


def test_clearing_a_turn_also_drops_an_interrupt_of_the_turn_left_pending() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED), tool_call("r")))
    session.run_tool("r")
    t = session.turn_fails("stopped")
    assert len(t.state.pending_interrupts) == 0 and t.state.tool_calls == {}
    assert SetAttribute(attribute=PENDING_INTERRUPTS, value=pvector()) in t.effects


def test_current_turn_id_follows_the_turn() -> None:
    assert SessionState.initial().current_turn_id is None
    session = started_session()
    assert session.state.current_turn_id == "turn-1"
    session.model(completed("done"))
    assert session.state.current_turn_id is None


@pytest.mark.parametrize("bad_id", ["", "a/b"])
def test_tool_inputs_with_an_unusable_tool_call_id_are_rejected(bad_id: str) -> None:
    state = started_session().state
    inputs: list[StepInput] = [
        ApprovalWaitEnded(invocation=invocation(), tool_call_id=bad_id, timer_fired=False, resolutions=pvector()),
        ToolStepStarted(invocation=invocation(), tool_call_id=bad_id, step_type=StepType.CALL_TOOL),
        HeartbeatSent(invocation=invocation(), tool_call_id=bad_id),
        ToolCallSucceeded(invocation=invocation(), tool_call_id=bad_id, output="x"),
        ToolExecutionFailed(invocation=invocation(), tool_call_id=bad_id, error="x"),
        ToolAttemptsExhausted(invocation=invocation(), tool_call_id=bad_id, recovery_error=recovery("x")),
        SingleAttemptToolFailed(invocation=invocation(), tool_call_id=bad_id, recovery_error=recovery("x")),
    ]
    for session_input in inputs:
        assert "empty or contains '/'" in rejected(state, session_input)


def test_resume_turn_expecting_no_result_is_rejected() -> None:
    assert "at least 1 result" in rejected(started_session().state, results_arrived(0))


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"turn_count": -1}, "negative count"),
        ({"message_count": MAX_MESSAGE_SEQUENCE + 1}, "past the last sequence key"),
        ({"current_turn_id": "turn-7"}, "is not turn-1"),
        ({"current_turn_id": "a/b"}, "is not turn-1"),
    ],
)
def test_an_inconsistent_agent_state_is_rejected_before_any_step_reducer(change: dict[str, object], error: str) -> None:
    state = started_session().state
    assert state.agent_state is not None
    broken = replace(state, agent_state=replace(state.agent_state, **change))  # type: ignore[arg-type]
    assert error in rejected(broken, model_finished(completed("x")))
