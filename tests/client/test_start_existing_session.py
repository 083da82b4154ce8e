"""Issue 29, finding 4: starting an existing session with another first message is refused (it used to
return the old run and drop the message); the same start repeated, or repeated with its request ID,
returns its run."""

from __future__ import annotations

import uuid

import pytest
from dex import FlowAlreadyStartedError

from dex_agents.client import SessionClient
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.shell.agents import unique_flow_type


def test_another_first_message_is_refused_and_the_same_start_is_idempotent(dex_engine: PrivateDexEngine) -> None:
    session_id = f"start-{uuid.uuid4().hex[:10]}"
    with SessionClient.connect(dex_engine.server_address, unique_flow_type("StartTwice")) as sessions:
        run_id = sessions.start(session_id, "Where is order 42?")
        assert sessions.start(session_id, "Where is order 42?") == run_id  # the same start, repeated
        with pytest.raises(FlowAlreadyStartedError) as refused:
            sessions.start(session_id, "Refund order 7")
        assert type(refused.value).__name__ == "SessionExistsError" and refused.value.flow_id == session_id
        assert f"session {session_id!r} already exists" in str(refused.value)
        assert "not queued" in str(refused.value)

        other = f"start-{uuid.uuid4().hex[:10]}"
        run_with_id = sessions.start(other, "hello", request_id="req-1")
        assert sessions.start(other, "hello", request_id="req-1") == run_with_id  # a lost answer, repeated
        with pytest.raises(FlowAlreadyStartedError):
            sessions.start(other, "hello", request_id="req-2")
        sessions.stop(session_id)
        sessions.stop(other)
