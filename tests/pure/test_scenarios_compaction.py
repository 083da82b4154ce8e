"""Named scenarios of history compaction: reactive (the model refused an input longer than its context
window), proactive (the estimate passed ``trigger_tokens``), requested (``compact_history``), a second
compaction over the first, a recent part too long to help, and a summarization that fails."""

from __future__ import annotations

import pytest
from pyrsistent import pvector

from dex_agents.pure.machine.compaction import (
    TRANSCRIPT_HEADER,
    CompactionPolicy,
    compaction_span,
    estimated_input_tokens,
    render_transcript,
    summary_message_text,
)
from dex_agents.pure.machine.effects import DeleteAttribute, SetAttribute
from dex_agents.pure.machine.endings import CallModel, FailAttempt, SummarizeHistory
from dex_agents.pure.machine.events import HISTORY_COMPACTED, MODEL_CALL_FAILED, USAGE_RECORDED
from dex_agents.pure.values.persistence import COMPACTION_REQUESTED, HISTORY_SUMMARY, StepType
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.endings import Request
from dex_agents.pure.machine.rpc_calls import CompactHistoryCalled
from dex_agents.pure.machine.step_inputs import (
    Invocation,
    CompactionStarted,
    HistorySummarized,
    ModelCallFailed,
    ModelStepStarted,
    SummarizationFailed,
)
from dex_agents.pure.machine.transition import RpcTransition, StepTransition
from dex_agents.pure.values.session import AgentStatus, AgentUsage, HistorySummary, MessageRole

from tests.pure.scenario_support import (
    Session,
    answer_of,
    completed,
    event_types,
    events_of,
    failure_of,
    moves,
    requested,
    started_session,
    tool_call,
)

SUMMARY_USAGE = AgentUsage(requests=1, input_tokens=900, output_tokens=120)
TOO_LONG = "ContextWindowExceededError: context_length_exceeded"


DEFAULT_POLICY = CompactionPolicy()


def _session(policy: CompactionPolicy | None = DEFAULT_POLICY, turns: int = 4) -> Session:
    """A session with ``turns`` completed turns (a user message and an answer each), then the next
    turn running its first model call."""
    session = started_session("question 1", config=SessionConfig(compaction=policy))
    for turn in range(1, turns + 1):
        session.model(completed(f"answer {turn}"))
        session.user_message_arrives(f"question {turn + 1}")
    return session


def _refused(session: Session) -> StepTransition:
    """``RunModel``: the model refuses the input as longer than its context window."""
    def answer(request: Request, now: Invocation) -> ModelCallFailed | None:
        if isinstance(request, CallModel):
            return ModelCallFailed(invocation=now, error=TOO_LONG, retryable=False,
                                   context_window_exceeded=True)
        return None

    return session.run_step(ModelStepStarted(invocation=session.inv()), answer)


def _compact(session: Session, trigger: str, text: str = "the summary") -> StepTransition:
    started = session.run_step(CompactionStarted(invocation=session.inv(), trigger=trigger))
    assert isinstance(started.ending, SummarizeHistory), started.ending
    return session.run_step(HistorySummarized(invocation=session.inv(), trigger=trigger, text=text,
                                              usage=SUMMARY_USAGE))


def _call_model(session: Session) -> CallModel:
    t = session.run_step(ModelStepStarted(invocation=session.inv()))
    assert isinstance(t.ending, CallModel), t.ending
    return t.ending


def test_a_refused_call_compacts_the_oldest_turns_and_the_call_runs_again_on_the_summary() -> None:
    session = _session()
    requests_before = session.state.usage.requests
    refused = _refused(session)
    assert moves(refused) == [(StepType.COMPACT_HISTORY, "reactive")]
    assert [(e.type, e.payload["retrying"]) for e in events_of(refused)] == [(MODEL_CALL_FAILED, True)]
    assert refused.state == session.state and session.state.agent_state is not None
    assert session.state.agent_state.status is AgentStatus.RUNNING_MODEL

    started = session.run_step(CompactionStarted(invocation=session.inv(), trigger="reactive"))
    request = started.ending
    assert isinstance(request, SummarizeHistory)
    # turns 1-3 are summarized; turns 4 and 5 (the running one) stay whole
    assert [m.turn_id for m in request.messages] == ["turn-1", "turn-1", "turn-2", "turn-2", "turn-3", "turn-3"]
    assert request.previous_summary is None

    done = session.run_step(HistorySummarized(invocation=session.inv(), trigger="reactive", text="S1",
                                              usage=SUMMARY_USAGE))
    summary = HistorySummary(text="S1", through_sequence=6, summarized_messages=6, trigger="reactive",
                             turn_id="turn-5", compactions=1)
    assert SetAttribute.of(HISTORY_SUMMARY, summary) in done.effects
    assert event_types(done) == [USAGE_RECORDED, HISTORY_COMPACTED]
    assert events_of(done)[1].payload == {"through_sequence": 6, "summarized_messages": 6, "summary_chars": 2,
                                         "trigger": "reactive"}
    assert session.state.usage.requests == requests_before + 1
    assert moves(done) == [(StepType.RUN_MODEL, None)]

    call = _call_model(session)
    assert call.history_summary == "S1"
    assert [m.sequence for m in call.messages] == [7, 8, 9]
    assert len(session.state.messages) == 9  # the transcript is never cut


def test_a_second_compaction_summarizes_the_previous_summary_and_the_next_span() -> None:
    session = _session()
    _refused(session)
    _compact(session, "reactive", "S1")
    session.model(completed("answer 5"))
    session.user_message_arrives("question 6")
    session.model(completed("answer 6"))
    session.user_message_arrives("question 7")
    _refused(session)
    started = session.run_step(CompactionStarted(invocation=session.inv(), trigger="reactive"))
    assert isinstance(started.ending, SummarizeHistory)
    assert started.ending.previous_summary == "S1"
    assert [m.sequence for m in started.ending.messages] == [7, 8, 9, 10]
    session.run_step(HistorySummarized(invocation=session.inv(), trigger="reactive", text="S2", usage=SUMMARY_USAGE))
    assert session.state.history_summary == HistorySummary(text="S2", through_sequence=10, summarized_messages=10,
                                                           trigger="reactive", turn_id="turn-7", compactions=2)


def test_when_the_kept_turns_alone_are_too_long_the_turn_fails_once_with_a_note_saying_so() -> None:
    session = _session(turns=1)  # turn-1 and the running turn-2: both kept
    refused = _refused(session)
    assert session.state.agent_state is not None
    assert session.state.agent_state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    error = session.state.agent_state.last_turn_error or ""
    assert error.startswith(TOO_LONG) and "the last 2 turns" in error and "compaction cannot help" in error
    assert [(e.type, e.payload.get("retrying")) for e in events_of(refused)][0] == (MODEL_CALL_FAILED, False)


def test_without_compaction_a_refused_call_fails_the_turn_as_the_spec_says() -> None:
    session = _session(policy=None)
    _refused(session)
    assert session.state.agent_state is not None
    assert session.state.agent_state.last_turn_error == TOO_LONG
    assert session.state.history_summary is None


def test_a_policy_that_does_not_compact_reactively_fails_the_turn() -> None:
    session = _session(policy=CompactionPolicy(reactive=False))
    _refused(session)
    assert session.state.agent_state is not None and session.state.agent_state.last_turn_error == TOO_LONG


def test_the_estimate_past_trigger_tokens_compacts_before_the_call() -> None:
    session = _session(policy=CompactionPolicy(trigger_tokens=10))
    t = session.run_step(ModelStepStarted(invocation=session.inv()))
    assert moves(t) == [(StepType.COMPACT_HISTORY, "proactive")] and t.effects == pvector()
    _compact(session, "proactive")
    # the estimate is still past 10 tokens, but nothing older than the kept turns is left: the call runs
    assert isinstance(_call_model(session), CallModel)


def test_compact_history_asks_the_next_model_call_to_compact_first_and_the_compaction_clears_it() -> None:
    session = _session()
    session.model(completed("answer 5"))
    called = session.feed_rpc(CompactHistoryCalled())
    assert answer_of(called) is True
    assert list(called.effects) == [SetAttribute.of(COMPACTION_REQUESTED, 1)]
    assert answer_of(session.feed_rpc(CompactHistoryCalled())) is True  # asked again: nothing more to write
    assert isinstance(session.last, RpcTransition) and session.last.effects == pvector()
    session.user_message_arrives("question 6")
    t = session.run_step(ModelStepStarted(invocation=session.inv()))
    assert moves(t) == [(StepType.COMPACT_HISTORY, "requested")]
    done = _compact(session, "requested")
    assert DeleteAttribute.of(COMPACTION_REQUESTED) in done.effects and not session.state.compaction_requested


def test_compact_history_answers_false_with_nothing_to_summarize_and_is_refused_without_a_policy() -> None:
    assert answer_of(_session(turns=1).feed_rpc(CompactHistoryCalled())) is False
    refused = _session(policy=None).feed_rpc(CompactHistoryCalled())
    assert "compaction=None" in failure_of(refused)


def test_a_summarization_that_fails_retries_or_fails_the_turn() -> None:
    session = _session()
    _refused(session)
    session.run_step(CompactionStarted(invocation=session.inv(), trigger="reactive"))
    retried = session.run_step(SummarizationFailed(invocation=session.inv(), error="503", retryable=True))
    assert isinstance(retried.ending, FailAttempt) and retried.state == session.state
    session.run_step(SummarizationFailed(invocation=session.inv(), error="400 bad request", retryable=False))
    assert session.state.agent_state is not None
    assert session.state.agent_state.last_turn_error == "the history could not be compacted: 400 bad request"


def test_a_blank_summary_and_an_unknown_trigger_are_rejected() -> None:
    session = _session()
    _refused(session)
    assert "unknown compaction trigger" in failure_of(
        session.run_step(CompactionStarted(invocation=session.inv(), trigger="bored")))
    session.run_step(CompactionStarted(invocation=session.inv(), trigger="reactive"))
    assert "blank summary" in failure_of(session.run_step(
        HistorySummarized(invocation=session.inv(), trigger="reactive", text="  ", usage=SUMMARY_USAGE)))


def test_the_compaction_steps_reject_inputs_that_do_not_fit_and_change_nothing() -> None:
    def inputs(session: Session) -> list[CompactionStarted | HistorySummarized | SummarizationFailed]:
        return [CompactionStarted(invocation=session.inv(), trigger="reactive"),
                HistorySummarized(invocation=session.inv(), trigger="reactive", text="S", usage=SUMMARY_USAGE),
                SummarizationFailed(invocation=session.inv(), error="503", retryable=True)]

    def rejected(session: Session, step_input: CompactionStarted | HistorySummarized | SummarizationFailed) -> str:
        before = session.state
        t = session.feed_step(step_input)
        assert t.state == before and t.effects == pvector(), step_input
        return failure_of(t)

    unstarted = Session(config=SessionConfig(compaction=DEFAULT_POLICY))
    assert all("not started" in rejected(unstarted, i) for i in inputs(unstarted))
    idle = _session()
    idle.model(completed("answer 5"))  # the turn ended: no turn runs
    assert all("no turn" in rejected(idle, i) for i in inputs(idle))
    tools = _session()
    tools.model(requested(tool_call("r")))
    assert all("status running_tools" in rejected(tools, i) for i in inputs(tools))
    no_policy = _session(policy=None)
    assert all("no compaction policy" in rejected(no_policy, i) for i in inputs(no_policy)[:2])
    nothing = _session(turns=1)  # only the kept turns: no span to summarize
    assert moves(nothing.feed_step(inputs(nothing)[0])) == [(StepType.RUN_MODEL, None)]
    assert "nothing to summarize" in rejected(nothing, inputs(nothing)[1])


def test_the_span_is_whole_turns_before_the_kept_ones_and_the_estimate_counts_characters() -> None:
    session = _session(turns=3)
    messages = session.state.messages
    assert [m.turn_id for m in compaction_span(messages, 1)] == ["turn-1"] * 2 + ["turn-2"] * 2 + ["turn-3"] * 2
    assert compaction_span(messages, 4) == ()
    characters = sum(len(m.framework_item) for m in messages)
    assert estimated_input_tokens(None, messages) == -(-characters // 4)
    assert estimated_input_tokens("s", ()) == -(-len(summary_message_text("s")) // 4)


def test_the_transcript_names_who_said_what() -> None:
    session = _session(turns=1)
    text = render_transcript("before", session.state.messages[:2])
    assert text.splitlines()[0] == TRANSCRIPT_HEADER and "before" in text
    assert "User: question 1" in text and "Assistant: answer 1" in text
    assert session.state.messages[0].role is MessageRole.USER


@pytest.mark.parametrize("bad", [dict(trigger_tokens=0), dict(keep_recent_turns=0), dict(instructions=" ")])
def test_a_policy_out_of_range_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CompactionPolicy(**bad)  # type: ignore[arg-type]
