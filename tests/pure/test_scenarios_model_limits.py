"""Named scenarios of the guards around model calls and user text: the per-turn cap on model calls
(``TurnModelCallCount``), a model call that raised (``ModelCallFailed``, retryable or not), text that
cannot be encoded, and the run state a tool Step hands the runner."""

from __future__ import annotations

import pytest
from pyrsistent import pvector

from dex_agents.pure.machine.effects import DeleteAttribute, SetAttribute, WriteEvent
from dex_agents.pure.machine.endings import BuildUserMessage, CallModel, ExecuteDeferredToolCall, FailAttempt
from dex_agents.pure.machine.events import MODEL_CALL_FAILED
from dex_agents.pure.values.persistence import TURN_MODEL_CALL_COUNT, StepType
from dex_agents.pure.machine.reducers.session import initial_message_text
from dex_agents.pure.machine.reducers.turn import turn_failure_note
from dex_agents.pure.machine.state import DEFAULT_MAX_MODEL_CALLS_PER_TURN, SessionConfig
from dex_agents.pure.machine.step_inputs import ModelCallFailed, ModelStepStarted, TurnFailureNote
from dex_agents.pure.machine.transition import StepTransition
from dex_agents.pure.values.session import AgentSessionStartInput, AgentStatus, AgentUsage, MessageRole

from tests.pure.scenario_support import (
    Session,
    completed,
    event_types,
    events_of,
    failure_of,
    moves,
    of_type,
    requested,
    started_session,
    tool_call,
)

CAP_2_ERROR = "the turn reached its cap of 2 model calls (max_model_calls_per_turn) without a final answer"


def _capped(cap: int) -> Session:
    return started_session(config=SessionConfig(max_model_calls_per_turn=cap))


def _resumed_after(session: Session, tool_call_id: str) -> None:
    session.run_tool(tool_call_id)
    session.results_arrive(1)


def _failed(session: Session, error: str, retryable: bool, attempt: int = 1) -> StepTransition:
    return session.model_fails(error, retryable, attempt)


def _asked(session: Session) -> StepTransition:
    """The transition of the last attempt that asked for the model's outcome's follow-up (the one before
    the note's ``UserMessageBuilt``)."""
    assert len(session.attempt) == 3, f"expected CallModel, the note request, the note: {session.attempt}"
    return session.attempt[1]


def test_the_default_cap_is_50_and_a_cap_below_one_is_refused() -> None:
    assert SessionConfig().max_model_calls_per_turn == DEFAULT_MAX_MODEL_CALLS_PER_TURN == 50
    with pytest.raises(ValueError, match="max_model_calls_per_turn must be >= 1, got 0"):
        SessionConfig(max_model_calls_per_turn=0)


def test_each_model_call_that_defers_tools_commits_the_turns_count() -> None:
    session = _capped(3)
    first = session.model(requested(tool_call("a")))
    assert SetAttribute.of(TURN_MODEL_CALL_COUNT, 1) in first.effects and first.state.turn_model_call_count == 1
    _resumed_after(session, "a")
    second = session.model(requested(tool_call("b"), run_state="rs-2"))
    assert SetAttribute.of(TURN_MODEL_CALL_COUNT, 2) in second.effects and second.state.turn_model_call_count == 2


def test_the_model_call_at_the_cap_that_asks_for_tools_fails_the_turn_with_its_note() -> None:
    session = _capped(2)
    session.model(requested(tool_call("a", tool_name="lookup", arguments='{"n":1}')))
    _resumed_after(session, "a")
    note = turn_failure_note(session.state)
    assert note is not None

    before = session.state
    failed = session.model(requested(tool_call("b")))
    asked = _asked(session)
    recorded = AgentUsage(requests=1, input_tokens=10)
    assert asked.ending == BuildUserMessage(text=note, purpose=TurnFailureNote(error=CAP_2_ERROR, recorded_usage=recorded))
    assert asked.effects == pvector() and asked.state == before, "asking for the note changes nothing"
    assert "b" not in failed.state.tool_calls and failed.state.usage.requests == 2, "no tool is deferred"
    assert [e.type for e in session.attempt_events()] == ["usage_recorded", "turn_failed"]

    agent_state = failed.state.agent_state
    assert agent_state is not None
    assert (agent_state.status, agent_state.failed_turn_count, agent_state.last_turn_error) == (
        AgentStatus.WAITING_FOR_USER_MESSAGE, 1, CAP_2_ERROR)
    assert [(m.role, m.text) for m in failed.state.messages][-1] == (MessageRole.USER, note)
    assert DeleteAttribute.of(TURN_MODEL_CALL_COUNT) in failed.effects and failed.state.turn_model_call_count == 0
    assert [e.payload["error"] for e in events_of(failed) if e.type == "turn_failed"] == [CAP_2_ERROR]
    assert moves(failed) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_a_cap_of_one_fails_the_first_tool_request_at_once_without_a_note() -> None:
    session = _capped(1)
    t = session.model(requested(tool_call("a")))
    error = "the turn reached its cap of 1 model calls (max_model_calls_per_turn) without a final answer"
    assert event_types(t) == ["usage_recorded", "turn_failed"]
    assert t.state.agent_state is not None and t.state.agent_state.last_turn_error == error
    assert [m.sequence for m in t.state.messages] == [1] and t.state.tool_calls == {}
    assert of_type(t.effects, DeleteAttribute) == [], "nothing of the turn was stored to delete"
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_a_final_answer_at_the_cap_completes_and_deletes_the_count() -> None:
    session = _capped(2)
    session.model(requested(tool_call("a")))
    _resumed_after(session, "a")
    t = session.model(completed("done"))
    assert event_types(t)[-1] == "turn_completed"
    assert DeleteAttribute.of(TURN_MODEL_CALL_COUNT) in t.effects and t.state.turn_model_call_count == 0


def test_record_turn_failure_deletes_the_count() -> None:
    session = started_session()
    session.model(requested(tool_call("a")))
    _resumed_after(session, "a")
    t = session.turn_fails("out of attempts")
    assert DeleteAttribute.of(TURN_MODEL_CALL_COUNT) in t.effects and t.state.turn_model_call_count == 0


@pytest.mark.parametrize(("attempt", "retrying"), [(1, True), (2, True), (3, False)])
def test_a_retryable_failure_writes_its_event_then_fails_the_attempt(attempt: int, retrying: bool) -> None:
    session = started_session()
    before = session.state
    t = _failed(session, "503 Service Unavailable", retryable=True, attempt=attempt)
    assert t.state == before and not t.is_rejection and t.fails_attempt
    [written] = t.effects
    failure = t.ending
    assert isinstance(written, WriteEvent) and isinstance(failure, FailAttempt)
    assert (written.event.type, written.event.turn_id, written.event.attempt) == (MODEL_CALL_FAILED, "turn-1", attempt)
    assert dict(written.event.payload) == {"error": "503 Service Unavailable", "retrying": retrying}
    assert failure.error == "503 Service Unavailable", "Dex records the runner's error text"


def test_a_non_retryable_failure_without_final_records_fails_the_turn_at_once() -> None:
    session = started_session()
    t = _failed(session, "invalid API key", retryable=False)
    assert event_types(t) == [MODEL_CALL_FAILED, "turn_failed"]
    assert [dict(e.payload) for e in events_of(t)] == [{"error": "invalid API key", "retrying": False},
                                                       {"error": "invalid API key"}]
    agent_state = t.state.agent_state
    assert agent_state is not None and (agent_state.failed_turn_count, agent_state.last_turn_error) == (
        1, "invalid API key")
    assert moves(t) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_a_non_retryable_failure_after_tools_asks_for_the_note_then_fails_the_turn() -> None:
    session = started_session()
    session.model(requested(tool_call("a")))
    _resumed_after(session, "a")
    before = session.state
    failed = _failed(session, "context window exceeded", retryable=False)
    asked = _asked(session)
    assert event_types(asked) == [MODEL_CALL_FAILED]
    assert isinstance(asked.ending, BuildUserMessage) and asked.state == before
    assert asked.ending.purpose == TurnFailureNote(error="context window exceeded", recorded_usage=None)
    assert failed.state.agent_state is not None and failed.state.agent_state.last_turn_error == "context window exceeded"
    assert failed.state.tool_calls == {} and failed.state.framework_run_state is None
    assert moves(failed) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_a_model_failure_outside_a_running_model_call_is_rejected() -> None:
    session = Session()
    session.start(None)
    raised = ModelCallFailed(invocation=session.inv(), error="boom", retryable=True)
    assert failure_of(session.feed_step(raised)) == "no turn is running"
    running = started_session()
    running.model(requested(tool_call("a")))
    raised = ModelCallFailed(invocation=running.inv(), error="boom", retryable=False)
    assert "the model does not run now" in failure_of(running.feed_step(raised))


def test_run_model_outside_a_running_model_call_is_rejected_before_any_model_call() -> None:
    """The core, not the shell, refuses a ``RunModel`` with no turn to run: no ``CallModel`` is asked."""
    session = Session()
    session.start(None)
    assert failure_of(session.feed_step(ModelStepStarted(invocation=session.inv()))) == "no turn is running"
    assert failure_of(Session().feed_step(ModelStepStarted(invocation=session.inv()))) == "the session has not started"
    running = started_session()
    running.model(requested(tool_call("a")))
    assert "the model does not run now (status running_tools)" in failure_of(
        running.feed_step(ModelStepStarted(invocation=running.inv())))


def test_run_model_asks_for_the_model_call_with_the_turns_view() -> None:
    """What the runner sees is part of the request: every stored message, the turn's run state and its
    records in deferral order."""
    session = started_session()
    session.model(requested(tool_call("b"), tool_call("a"), run_state="rs-1"))
    session.run_tool("a")
    session.run_tool("b")
    session.results_arrive(2)
    asked = session.feed_step(ModelStepStarted(invocation=session.inv()))
    assert asked.ending == CallModel(
        turn_id="turn-1",
        messages=session.state.messages,
        framework_run_state="rs-1",
        tool_calls=pvector([session.state.tool_calls["b"], session.state.tool_calls["a"]]),
    )
    assert asked.effects == pvector() and asked.state == session.state


def test_send_user_message_refuses_text_with_a_lone_surrogate() -> None:
    session = Session()
    session.start(None)
    t = session.send("Hi \ud800!")
    assert failure_of(t) == "text contains a lone surrogate U+D800 at index 3; it cannot be encoded as UTF-8"
    assert t.state.queued_message_count == 0


def test_resolve_interrupt_refuses_a_rejection_message_with_a_lone_surrogate() -> None:
    session = started_session()
    session.model(requested(tool_call("w", requires_approval=True)))
    t = session.resolve("turn-1:w", False, "no \udfff")
    assert failure_of(t) == (
        "rejection_message contains a lone surrogate U+DFFF at index 3; it cannot be encoded as UTF-8")
    assert [i.interrupt_id for i in t.state.pending_interrupts] == ["turn-1:w"]


@pytest.mark.parametrize(
    ("initial", "text"),
    [(None, None), ("  ", None), ("Hi", "Hi"), ("Hi \ud83d", "Hi \ufffd"), ("\udc00\ud800x", "\ufffd\ufffdx")],
)
def test_the_initial_message_text_is_none_when_blank_and_has_lone_surrogates_replaced(
        initial: str | None, text: str | None) -> None:
    assert initial_message_text(AgentSessionStartInput(initial_message=initial)) == text


def test_a_tool_step_runs_the_call_with_the_turns_run_state() -> None:
    session = started_session()
    session.model(requested(tool_call("a"), run_state="rs-1"))
    started = session.tool_started("a")
    run = started.ending
    assert isinstance(run, ExecuteDeferredToolCall) and run.framework_run_state == "rs-1"
