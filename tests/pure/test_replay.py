"""Offline replay: folding the recorded inputs of a session reproduces its state and snapshot."""

from __future__ import annotations

from dex_agents.pure.offline.replay import replay, replay_snapshot
from dex_agents.pure.machine.reducers import snapshot_of
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.values.session import ToolEffect

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    answer_of,
    completed,
    requested,
    tool_call,
)

CONFIG = SessionConfig(interrupt_deadline_ms=30_000)


def recorded_session() -> Session:
    """Two turns: parallel calls with an approval, a rejection, a crash, a defect, a failed turn."""
    session = Session(config=CONFIG)
    session.start("hi")
    session.send("queued during the turn")
    session.model(requested(tool_call("a/b")))  # a runner defect: rejected, changes nothing
    session.model(
        requested(
            tool_call("r", ToolEffect.READ),
            tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE),
            tool_call("u", ToolEffect.UNCLASSIFIED),
        ),
        attempt=2,
    )
    session.run_tool("r", "read ok")
    session.resolve("turn-1:w", True)
    session.resolution_arrives("w", True)
    session.tool_started("w")
    session.single_attempt_failed("w", "worker lost")
    session.now_ms = T0_MS + 30_000
    session.timer_fires("u")
    session.results_arrive(3)
    session.turn_fails("model down")
    session.user_message_arrives("queued during the turn")
    session.model(completed("answer"))
    session.snapshot()
    session.list_messages(limit=2)
    return session


def test_replay_reproduces_the_state_of_a_recorded_session() -> None:
    session = recorded_session()
    assert replay(session.inputs, CONFIG) == session.state


def test_replay_reproduces_the_snapshot() -> None:
    session = recorded_session()
    live = answer_of(session.snapshot())
    assert replay_snapshot(session.inputs, CONFIG) == live == snapshot_of(session.state)


def test_replay_of_every_prefix_matches_the_live_state_at_that_point() -> None:
    session = Session(config=CONFIG)
    states = [session.state]
    script = recorded_session().inputs
    for session_input in script:
        session.feed(session_input)
        states.append(session.state)
    for length in range(len(script) + 1):
        assert replay(script[:length], CONFIG) == states[length]


def test_replay_of_nothing_is_the_not_started_state() -> None:
    assert replay([]) == SessionState.initial()
    assert replay_snapshot([]).state is None


def test_replay_can_continue_from_a_given_state() -> None:
    script = recorded_session().inputs
    middle = replay(script[:7], CONFIG)
    assert replay(script[7:], CONFIG, initial=middle) == replay(script, CONFIG)


def test_the_replayed_session_has_the_expected_shape() -> None:
    state = replay(recorded_session().inputs, CONFIG)
    assert state.agent_state is not None
    assert (state.agent_state.turn_count, state.agent_state.completed_turn_count, state.agent_state.failed_turn_count) == (
        2,
        1,
        1,
    )
    assert [m.sequence for m in state.messages] == list(range(1, 5))
    assert [m.turn_id for m in state.messages] == ["turn-1", "turn-1", "turn-2", "turn-2"]
    assert state.queued_message_count == 0 and state.usage.requests == 2
