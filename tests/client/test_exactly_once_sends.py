"""Exactly-once user messages (issue 20): a message carries an identity, a second send of it answers as
the first did and queues nothing, and the session client rides out a SIGKILLed engine: its send in
flight is retried with the same identity, its waits keep waiting.

These tests run their own engine (the session-wide one is shared and must not be killed)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from dex import WorkerInvocationError

from dex_agents.client import SessionClient
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.values.session import AgentState, MessageRole
from dex_agents.shell import create_agent_session_flow
from dex_agents.testing import PrivateDexEngine, ScriptedAgentRunner
from dex_agents.testing.environment import AgentTestEnvironment
from dex_agents.testing.private_engine import DEX_SERVER_ADDRESS_ENV
from tests.shell.agents import unique_flow_type


@pytest.fixture
def own_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[PrivateDexEngine]:
    """A local engine of this test alone, which it may kill."""
    monkeypatch.delenv(DEX_SERVER_ADDRESS_ENV, raising=False)
    with PrivateDexEngine.start() as engine:
        yield engine


@pytest.fixture
def echo_sessions(own_engine: PrivateDexEngine) -> Iterator[SessionClient]:
    """A Worker (in this process) serving an echo agent on ``own_engine``, and a session client."""
    flow = create_agent_session_flow(ScriptedAgentRunner(), unique_flow_type("ExactlyOnce"))
    with AgentTestEnvironment.start(server_address=own_engine.server_address, flows=[flow]) as environment, \
            SessionClient(environment.client, flow, timeout=60) as sessions:
        yield sessions


def _user_texts(snapshot: AgentSnapshot) -> list[str | None]:
    return [message.text for message in snapshot.messages if message.role is MessageRole.USER]


def _session_id() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


def test_the_same_message_sent_twice_across_an_engine_sigkill_is_queued_once(
        own_engine: PrivateDexEngine, echo_sessions: SessionClient) -> None:
    sessions = echo_sessions
    session_id = _session_id()
    sessions.start(session_id)
    assert sessions.send(session_id, "first", message_id="m-1") is True
    sessions.wait_for_completed_turns(session_id, 1)

    own_engine.kill()
    with ThreadPoolExecutor(max_workers=2) as pool:
        # Both calls are in flight while the engine is dead: the send retries with its identity,
        # the wait keeps reading; both finish once the engine is back.
        in_flight: Future[bool] = pool.submit(sessions.send, session_id, "second", message_id="m-2")
        waiting: Future[AgentState] = pool.submit(sessions.wait_for_completed_turns, session_id, 2)
        own_engine.restart()
        assert in_flight.result(timeout=60) is True
        assert waiting.result(timeout=60).completed_turn_count == 2

    # The answers of the first sends were "lost": the caller sends both again, as it would.
    assert sessions.send(session_id, "first", message_id="m-1") is True
    assert sessions.send(session_id, "second", message_id="m-2") is True
    assert sessions.send(session_id, "third", message_id="m-3") is True
    state = sessions.wait_for_completed_turns(session_id, 3)

    snapshot = sessions.snapshot(session_id)
    assert _user_texts(snapshot) == ["first", "second", "third"]
    assert snapshot.queued_message_count == 0
    assert state.turn_count == 3


def test_a_message_id_is_bound_to_its_text(echo_sessions: SessionClient) -> None:
    sessions = echo_sessions
    session_id = _session_id()
    sessions.start(session_id)
    assert sessions.send(session_id, "hello", message_id="m-1") is True
    with pytest.raises(WorkerInvocationError, match="message id 'm-1' was already sent with another text"):
        sessions.send(session_id, "goodbye", message_id="m-1")
    assert sessions.send(session_id, "  ", message_id="m-2") is False  # blank: refused, nothing kept
    assert sessions.send(session_id, "later", message_id="m-2") is True
    sessions.wait_for_completed_turns(session_id, 2)
    assert _user_texts(sessions.snapshot(session_id)) == ["hello", "later"]
    with pytest.raises(ValueError, match="message_id"):
        sessions.send(session_id, "x", message_id="a/b")


def test_concurrent_duplicates_queue_one_message(echo_sessions: SessionClient) -> None:
    sessions = echo_sessions
    session_id = _session_id()
    sessions.start(session_id)
    barrier = threading.Barrier(4)

    def send() -> bool:
        barrier.wait()
        return sessions.send(session_id, "only once", message_id="dup")

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda _: send(), range(4)))
    assert answers == [True] * 4
    sessions.wait_for_completed_turns(session_id, 1)
    snapshot = sessions.snapshot(session_id)
    assert _user_texts(snapshot) == ["only once"] and snapshot.queued_message_count == 0
