"""Time travel in the core (issue 26, items 1, 2 and 4): a forked session's seed (``StartAgentSession``
with ``fork``), the audit of a rewind (``record_session_rewind``) and its event, and the offline reading
of where turns ended, what a rewind removes and what a fork carries (``offline.time_travel``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyrsistent import pmap, pvector

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import PublishToChannel, SetMapInstance
from dex_agents.pure.machine.events import SESSION_REWOUND, session_rewound_event
from dex_agents.pure.machine.rpc_calls import SessionRewindRecorded
from dex_agents.pure.machine.step_inputs import SessionInput, SessionStarted
from dex_agents.pure.machine.transition import Transition, WaitTransition
from dex_agents.pure.offline.export_document import (
    METHOD_EXECUTE,
    OUTCOME_COMPLETED,
    OUTCOME_FAILED,
    HistoryStep,
    StoredValue,
)
from dex_agents.pure.offline.replay import replay
from dex_agents.pure.offline.stored_values import stored_writes
from dex_agents.pure.offline.time_travel import (
    AwaitPoint,
    TurnEnd,
    fork_seed,
    rewind_end,
    rewound_tool_calls,
    turn_ends,
    turn_not_ended,
    values_at,
)
from dex_agents.pure.values.persistence import QUEUED_USER_MESSAGES, SESSION_REWINDS, StepType
from dex_agents.pure.values.session import (
    AgentSessionFork,
    AgentState,
    AgentSessionStartInput,
    AgentUsage,
    AgentStatus,
    AgentUserMessage,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.pure.values.time_travel import RecordSessionRewindInput, RewoundToolCall, SessionRewind
from dex_agents.pure.wire.json_value import JsonValue
from tests.pure.golden_fixtures import SESSION_EVENT_PAYLOAD_KEYS
from tests.pure.scenario_support import (
    T0_MS,
    Session,
    answer_of,
    completed,
    failure_of,
    moves,
    of_type,
    requested,
    started_session,
    tool_call,
)

WRITE = ToolEffect.NON_IDEMPOTENT_WRITE


def _after_two_turns() -> Session:
    """Turn 1 answered; turn 2 ran a non-idempotent write (no approval) and answered."""
    session = started_session("one")
    session.model(completed("One."))
    session.send("refund")
    session.user_message_arrives("refund")
    session.model(requested(tool_call("c-refund", WRITE, "refund", requires_approval=False)))
    session.run_tool("c-refund", "refunded")
    session.results_arrive(1)
    session.model(completed("Refunded."))
    return session


def _fork_of(session: Session, at_turn: int = 1) -> AgentSessionFork:
    state = session.state
    assert state.agent_state is not None
    kept = pvector(m for m in state.messages if int(m.turn_id.removeprefix("turn-")) <= at_turn)
    return AgentSessionFork(source_session_id="original", at_turn=at_turn,
                            state=replace(state.agent_state, turn_count=at_turn, completed_turn_count=at_turn,
                                          message_count=len(kept)),
                            messages=kept, usage=state.usage)


def _start(session: Session, fork: AgentSessionFork, initial: str | None = None) -> None:
    session.run_step(SessionStarted(invocation=session.inv(),
                                    start_input=AgentSessionStartInput(initial_message=initial, fork=fork)))


def test_a_fork_starts_seeded_between_turns_and_its_next_turn_follows_the_seed() -> None:
    original = _after_two_turns()
    fork = _fork_of(original)
    forked = Session()
    _start(forked, fork)
    assert moves(forked.attempt[-1]) == [(StepType.AWAIT_USER_MESSAGE, None)]
    state = forked.state
    assert state.agent_state is not None and state.agent_state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    assert (state.messages, state.usage, state.pending_interrupts, state.queued_message_count) == (
        fork.messages, fork.usage, pvector(), 0)
    written = stored_writes(forked.attempt[-1].effects)
    assert {name for name, _ in written} >= {"AgentState", "AgentUsage", "PendingInterrupts", "AgentMessages"}
    forked.user_message_arrives("three")
    assert forked.state.current_turn_id == "turn-2"
    assert [m.sequence for m in forked.state.messages] == [1, 2, 3]
    assert replay(forked.inputs) == forked.state  # the seed travels in the start input


def test_a_forks_initial_message_is_queued_for_its_first_turn() -> None:
    forked = Session()
    _start(forked, _fork_of(_after_two_turns()), "three")
    (published,) = of_type(list(forked.attempt[-1].effects), PublishToChannel)
    assert published.channel is QUEUED_USER_MESSAGES and published.value == AgentUserMessage(text="three")
    assert forked.state.queued_message_count == 1


@pytest.mark.parametrize(("breaks", "error"), [
    (lambda f: replace(f, at_turn=-1), "fork.at_turn must be >= 0"),
    (lambda f: replace(f, at_turn=2), "not 2"),
    (lambda f: replace(f, state=replace(f.state, current_turn_id="turn-2")), "a fork starts between turns"),
    (lambda f: replace(f, messages=f.messages[1:]), "must be sequences 1..2"),
    (lambda f: replace(f, messages=pvector([f.messages[0], replace(f.messages[1], turn_id="turn-7")])),
     "is of turn-7, not of turns 1..1"),
])
def test_a_seed_that_breaks_its_invariants_fails_the_start_and_writes_nothing(breaks, error) -> None:  # type: ignore[no-untyped-def]
    forked = Session()
    _start(forked, breaks(_fork_of(_after_two_turns())))
    assert error in failure_of(forked.last) and forked.state.agent_state is None  # type: ignore[arg-type]


def _removal(to_turn: int = 1, **changes: object) -> RecordSessionRewindInput:
    removal = RecordSessionRewindInput(to_turn=to_turn, reason="oops", previous_run_id="run-1", removed_turn_count=1,
                                       tool_calls=pvector([RewoundToolCall(
                                           tool_call_id="c-refund", turn_id="turn-2", tool_name="refund", effect=WRITE,
                                           status=ToolCallStatus.SUCCEEDED, idempotency_key="s/turn-2/c-refund")]))
    return replace(removal, **changes)  # type: ignore[arg-type]


def test_a_rewind_is_recorded_with_the_worker_clock_and_its_event_names_every_tool_call() -> None:
    session = started_session("one")
    session.model(completed("One."))
    t = session.feed_rpc(SessionRewindRecorded(input=_removal(), now_ms=T0_MS))
    audit = answer_of(t)
    assert isinstance(audit, SessionRewind)
    assert audit.rewound_at == format_instant(T0_MS) and audit.tool_calls == _removal().tool_calls
    (write,) = of_type(list(t.effects), SetMapInstance)
    assert (write.map, write.key, write.value) == (SESSION_REWINDS, "run-1", audit)
    assert t.record is not None and list(t.record.record.now_ms) == [T0_MS]
    assert replay(session.inputs) == session.state
    event = session_rewound_event(audit, "run-2")
    assert event.type == SESSION_REWOUND and set(event.payload) == SESSION_EVENT_PAYLOAD_KEYS[SESSION_REWOUND]
    assert event.payload["run_id"] == "run-2" and event.turn_id is None
    assert event.payload["tool_calls"] == pvector([pmap({
        "tool_call_id": "c-refund", "turn_id": "turn-2", "tool_name": "refund", "effect": "non_idempotent_write",
        "status": "succeeded", "idempotency_key": "s/turn-2/c-refund"})])


@pytest.mark.parametrize(("removal", "error"), [
    (_removal(to_turn=2), "to_turn 2 is not a turn the session has ended (1 ended)"),
    (_removal(to_turn=-1), "to_turn -1 is not a turn"),
    (_removal(previous_run_id=""), "previous_run_id"),
    (_removal(previous_run_id="a/b"), "previous_run_id"),
    (_removal(removed_turn_count=-1), "removed_turn_count"),
    (_removal(reason="\ud800"), "lone surrogate"),
])
def test_a_rewind_record_no_rewind_could_make_is_refused(removal: RecordSessionRewindInput, error: str) -> None:
    session = started_session("one")
    session.model(completed("One."))
    assert error in failure_of(session.feed_rpc(SessionRewindRecorded(input=removal, now_ms=T0_MS)))


def test_a_rewind_record_is_refused_before_the_start_and_taken_once_the_session_went_on() -> None:
    assert "has not started" in failure_of(Session().feed_rpc(SessionRewindRecorded(input=_removal(), now_ms=T0_MS)))
    session = started_session("one")
    session.model(completed("One."))
    session.send("two")
    session.user_message_arrives("two")  # queued at turn 1's end: turn 2 starts before the record comes
    assert session.state.current_turn_id == "turn-2"
    assert isinstance(answer_of(session.feed_rpc(SessionRewindRecorded(input=_removal(), now_ms=T0_MS))),
                      SessionRewind)


class _Recording(Session):
    """A ``Session`` that keeps every transition it reduced, in order (what Dex's history records)."""

    def __init__(self) -> None:
        super().__init__()
        self.transitions: list[Transition] = []

    def _record(self, session_input: SessionInput, t: Transition) -> None:
        self.transitions.append(t)
        super()._record(session_input, t)


def _step(event_id: int, t: Transition) -> HistoryStep:
    """A completed history step with ``t``'s writes as Dex records them."""
    return HistoryStep(event_id=event_id, time=None, method=METHOD_EXECUTE, outcome=OUTCOME_COMPLETED, step_type=None,
                       step_execution_id=f"step-{event_id}", from_step_execution_id=None, attempt=1, rpc_name=None,
                       input=None, output=None, consumed=pvector(), timer_fired=False,
                       writes=pvector(StoredValue(name=name, instance=instance, value=value)
                                      for (name, instance), value in stored_writes(
                                          () if isinstance(t, WaitTransition) else t.effects).items()),
                       published=pvector(), next_steps=pvector(), failure=None, recorded=None)


def _recorded_two_turns() -> tuple[_Recording, list[HistoryStep], list[AwaitPoint]]:
    session = _Recording()
    session.start("one")
    session.model(completed("One."))
    turn_1 = len(session.transitions)
    session.send("refund")
    session.user_message_arrives("refund")
    session.model(requested(tool_call("c-refund", WRITE, "refund", requires_approval=False),
                            tool_call("c-read", ToolEffect.READ, "lookup", requires_approval=False)))
    session.run_tool("c-refund", "refunded")
    session.run_tool("c-read", "found")
    session.results_arrive(2)
    session.model(completed("Refunded."))
    steps = [_step(10 * (index + 1), t) for index, t in enumerate(session.transitions)]
    awaits = [AwaitPoint(event_id=10 * turn_1 + 5, step_execution_id="AwaitUserMessage-1"),
              AwaitPoint(event_id=10 * len(session.transitions) + 5, step_execution_id="AwaitUserMessage-2")]
    return session, steps, awaits


def test_turn_ends_values_and_removed_tool_calls_are_read_from_history() -> None:
    session, steps, awaits = _recorded_two_turns()
    ends = turn_ends(steps, awaits)
    assert ends == [TurnEnd(turn=1, event_id=awaits[0].event_id, step_execution_id="AwaitUserMessage-1"),
                    TurnEnd(turn=2, event_id=awaits[1].event_id, step_execution_id="AwaitUserMessage-2")]
    assert turn_ends(steps, [AwaitPoint(event_id=1, step_execution_id="x")]) == []  # before any AgentState
    (removed,) = rewound_tool_calls(steps, ends[0].event_id)  # the read is not named
    assert (removed.tool_name, removed.effect, removed.status) == ("refund", WRITE, ToolCallStatus.SUCCEEDED)
    assert list(rewound_tool_calls(steps, ends[1].event_id)) == []
    failed = replace(steps[-1], outcome=OUTCOME_FAILED)
    assert values_at([*steps[:-1], failed], 10**6) == values_at(steps[:-1], 10**6)  # a failed method wrote nothing
    seed = fork_seed("original", 1, values_at(steps, ends[0].event_id)).unwrap()
    assert [m.text for m in seed.messages] == ["one", "One."] and seed.state.turn_count == 1
    assert seed.usage == AgentUsage(requests=1, output_tokens=5)  # turn 1's one model call
    whole = fork_seed("original", 2, values_at(steps, ends[1].event_id)).unwrap()
    assert whole.messages == session.state.messages and whole.usage == session.state.usage


def test_a_fork_seed_is_refused_when_the_values_do_not_hold_that_turn() -> None:
    _, steps, awaits = _recorded_two_turns()
    at_turn_1 = values_at(steps, awaits[0].event_id)
    assert "right after turn 2 cannot be read" in fork_seed("s", 2, at_turn_1).failure()
    missing: dict[tuple[str, str | None], JsonValue] = {k: v for k, v in at_turn_1.items() if k[1] != "000000000001"}
    assert "messages are not all in the history" in fork_seed("s", 1, missing).failure()


def _state_after(ended: int, running: str | None = None) -> AgentState:
    return AgentState(status=AgentStatus.RUNNING_MODEL if running else AgentStatus.WAITING_FOR_USER_MESSAGE,
                      turn_count=ended + (1 if running else 0), current_turn_id=running,
                      current_turn_sequence=None, message_count=2 * ended, completed_turn_count=ended,
                      failed_turn_count=0, last_turn_error=None)


def test_a_rewind_restarts_the_last_end_of_its_turn_in_the_run_or_says_why_it_cannot() -> None:
    ends = [TurnEnd(turn=2, event_id=10, step_execution_id="a"), TurnEnd(turn=3, event_id=20, step_execution_id="b"),
            TurnEnd(turn=3, event_id=30, step_execution_id="c")]
    assert rewind_end(_state_after(4), ends, 3).unwrap() == ends[2]
    assert rewind_end(_state_after(3, "turn-4"), ends, 3).unwrap() == ends[2], "a running turn is removed"
    assert rewind_end(_state_after(3), ends, 3).failure() == "the session is right after turn 3 already: nothing to rewind"
    assert rewind_end(_state_after(3, "turn-4"), ends, 4).failure() == \
        "turn 4 has not ended: the session has ended 3 turns; turn-4 is running"
    assert rewind_end(None, [], 1).failure() == "turn 1 has not ended: the session has ended 0 turns"
    assert rewind_end(_state_after(4), ends, 1).failure().startswith(
        "turn 1 ended in an earlier run of the session (it continued as new since); a rewind reaches back to turn 2")
    assert turn_not_ended(_state_after(2), 2) is None
    assert turn_not_ended(_state_after(2), 3) == "turn 3 has not ended: the session has ended 2 turns"
