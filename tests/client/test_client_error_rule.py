"""Issue 29, findings 3 and 10: one error rule for every public method of the session clients
(``dex_agents.client.errors``): a bad argument is a ``ValueError``/``TypeError`` naming it, raised
before anything is sent; an unknown session is ``SessionNotFoundError`` (also Dex's
``FlowNotFoundError`` and ``FlowNotActiveOrNotFoundError``); no Worker within the call's timeout is
``NoWorkerError``; no other ``dex.runtime_errors`` type leaves a client.

Before: ``events()`` of an unknown session returned an empty page, ``events(after="garbage")`` read
from the first event, ``messages(limit=0)`` and ``limit=-1`` returned a message, ``start("")`` said
"durable name is required", ``send(timeout=5)`` did not exist (a send with no Worker raised
``WorkerInvocationError`` after Dex's 10 s RPC timeout), a wait with no Worker raised a bare
``TimeoutError`` and ``start`` could not say that no Worker serves the Flow type.
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest
from dex import FlowNotActiveOrNotFoundError, FlowNotFoundError

from dex_agents.client import (
    AsyncSessionClient,
    NoWorkerError,
    SessionBusyError,
    SessionClient,
    SessionClientError,
    SessionExistsError,
    SessionNotFoundError,
    SessionServerError,
    turns_ended,
)
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.shell.agents import unique_flow_type

Call = Callable[[SessionClient, str], object]

UNKNOWN_SESSION_CALLS: Final[dict[str, Call]] = {
    "stop": lambda c, s: c.stop(s, "done"),
    "is_stopped": lambda c, s: c.is_stopped(s),
    "describe": lambda c, s: c.describe(s),
    "events": lambda c, s: c.events(s),
    "next_event": lambda c, s: c.next_event(s, wait=1),
    "follow": lambda c, s: next(iter(c.follow(s, wait=1))),
    "read_attribute": lambda c, s: c.read_attribute(s, c.flow.agent_state),
    "state": lambda c, s: c.state(s),
    "pending_interrupts": lambda c, s: c.pending_interrupts(s),
    "overview": lambda c, s: c.overview(s),
    "pending_approvals": lambda c, s: c.pending_approvals(s),
    "children": lambda c, s: c.children(s),
    "message_receipt": lambda c, s: c.message_receipt(s, "m-1"),
    "unknown_outcome": lambda c, s: c.unknown_outcome(s, "call-1"),
    "export": lambda c, s: c.export(s),
    "wait_for": lambda c, s: c.wait_for(s, turns_ended(1), timeout=5),
    "wait_for_turns": lambda c, s: c.wait_for_turns(s, 1, timeout=5),
    "wait_for_completed_turns": lambda c, s: c.wait_for_completed_turns(s, 1, timeout=5),
    "wait_for_status": lambda c, s: c.wait_for_status(s, "running_tools", timeout=5),
    "wait_for_pending_interrupt": lambda c, s: c.wait_for_pending_interrupt(s, timeout=5),
    "send": lambda c, s: c.send(s, "hello", timeout=5),
    "approve": lambda c, s: c.approve(s, "i-1", timeout=5),
    "reject": lambda c, s: c.reject(s, "i-1", "no", timeout=5),
    "resolve_interrupt": lambda c, s: c.resolve_interrupt(s, "i-1", True, timeout=5),
    "extend_interrupt_deadline": lambda c, s: c.extend_interrupt_deadline(s, "i-1", 60_000, timeout=5),
    "cancel_turn": lambda c, s: c.cancel_turn(s, "turn-1", "stop", timeout=5),
    "cancel_tool_call": lambda c, s: c.cancel_tool_call(s, "call-1", "stop", timeout=5),
    "resolve_tool_outcome": lambda c, s: c.resolve_tool_outcome(s, "call-1", "failed", "lost", resolver="bo",
                                                                timeout=5),
    "compact": lambda c, s: c.compact(s, timeout=5),
    "rewind": lambda c, s: c.rewind(s, 1, "undo", timeout=5),
    "rewind_preview": lambda c, s: c.rewind_preview(s, 1),
    "fork": lambda c, s: c.fork(s, 1, s + "-fork"),
    "snapshot": lambda c, s: c.snapshot(s, timeout=5),
    "messages": lambda c, s: c.messages(s, limit=1, timeout=5),
    "check_worker": lambda c, s: c.check_worker(s),
}
"""Every public method that takes a session ID, called on one that does not exist."""

BAD_ARGUMENTS: Final[list[tuple[str, Call, type[Exception], str]]] = [
    ("start", lambda c, s: c.start(""), ValueError, "session_id must not be blank"),
    ("start", lambda c, s: c.start(s, 7), TypeError, "initial_message must be a string"),  # type: ignore[arg-type]
    ("start", lambda c, s: c.start(s, "hi", request_id=" "), ValueError, "request_id must not be blank"),
    ("stop", lambda c, s: c.stop(" "), ValueError, "session_id must not be blank"),
    ("is_stopped", lambda c, s: c.is_stopped(""), ValueError, "session_id"),
    ("describe", lambda c, s: c.describe(None), TypeError, "session_id must be a string"),  # type: ignore[arg-type]
    ("list_sessions", lambda c, s: c.list_sessions(limit=0), ValueError, "limit must be at least 1"),
    ("events", lambda c, s: c.events(""), ValueError, "session_id"),
    ("events", lambda c, s: c.events(s, page_size=0), ValueError, "page_size must be at least 1"),
    ("next_event", lambda c, s: c.next_event(s, wait=0), ValueError, "wait must be positive"),
    ("follow", lambda c, s: next(iter(c.follow(s, wait=-1))), ValueError, "wait must be positive"),
    ("read_attribute", lambda c, s: c.read_attribute("", c.flow.agent_state), ValueError, "session_id"),
    ("state", lambda c, s: c.state(""), ValueError, "session_id"),
    ("pending_interrupts", lambda c, s: c.pending_interrupts(""), ValueError, "session_id"),
    ("overview", lambda c, s: c.overview(" "), ValueError, "session_id"),
    ("pending_approvals", lambda c, s: c.pending_approvals(" "), ValueError, "session_id"),
    ("children", lambda c, s: c.children(""), ValueError, "session_id"),
    ("message_receipt", lambda c, s: c.message_receipt(s, "a/b"), ValueError, "message_id must not contain '/'"),
    ("export", lambda c, s: c.export(""), ValueError, "session_id"),
    ("wait_for", lambda c, s: c.wait_for(s, "done"), TypeError, "condition must be a StateCondition"),  # type: ignore[arg-type]
    ("wait_for_turns", lambda c, s: c.wait_for_turns(s, -1), ValueError, "count must be at least 0"),
    ("wait_for_completed_turns", lambda c, s: c.wait_for_completed_turns(s, 1, timeout=0), ValueError,
     "timeout must be positive"),
    ("wait_for_status", lambda c, s: c.wait_for_status(s, "sleeping"), ValueError, "sleeping"),
    ("wait_for_pending_interrupt", lambda c, s: c.wait_for_pending_interrupt(s, 3), TypeError,  # type: ignore[arg-type]
     "tool_name must be a string"),
    ("send", lambda c, s: c.send(s, None), TypeError, "text must be a string"),  # type: ignore[arg-type]
    ("send", lambda c, s: c.send(s, "hi", timeout=-5), ValueError, "timeout must be positive"),
    ("send", lambda c, s: c.send(s, "hi", message_id=""), ValueError, "message_id must not be blank"),
    ("approve", lambda c, s: c.approve(s, ""), ValueError, "interrupt_id must not be blank"),
    ("reject", lambda c, s: c.reject(s, "i-1", 5), TypeError, "rejection_message must be a string"),  # type: ignore[arg-type]
    ("resolve_interrupt", lambda c, s: c.resolve_interrupt(s, "i-1", "yes"), TypeError,  # type: ignore[arg-type]
     "approved must be a bool"),
    ("extend_interrupt_deadline", lambda c, s: c.extend_interrupt_deadline(s, "i-1", 0), ValueError,
     "deadline_ms must be at least 1"),
    ("cancel_turn", lambda c, s: c.cancel_turn(s, "turn-1", "  "), ValueError, "reason must not be blank"),
    ("cancel_turn", lambda c, s: c.cancel_turn(s, "", "stop"), ValueError, "turn_id must not be blank"),
    ("cancel_tool_call", lambda c, s: c.cancel_tool_call(s, "call-1", None), TypeError,  # type: ignore[arg-type]
     "reason must be a string"),
    ("unknown_outcome", lambda c, s: c.unknown_outcome(s, " "), ValueError, "tool_call_id must not be blank"),
    ("resolve_tool_outcome", lambda c, s: c.resolve_tool_outcome(s, "call-1", "done", "x", resolver="bo"), ValueError,
     "status must be 'succeeded' or 'failed'"),
    ("resolve_tool_outcome", lambda c, s: c.resolve_tool_outcome(s, "call-1", "failed", "x", resolver=""), ValueError,
     "resolver must not be blank"),
    ("resolve_tool_outcome", lambda c, s: c.resolve_tool_outcome(s, "", "failed", "x", resolver="bo"), ValueError,
     "tool_call_id must not be blank"),
    ("compact", lambda c, s: c.compact(""), ValueError, "session_id"),
    ("rewind", lambda c, s: c.rewind(s, -1), ValueError, "to_turn must be at least 0"),
    ("rewind", lambda c, s: c.rewind(s, 1, 7), TypeError, "reason must be a string"),  # type: ignore[arg-type]
    ("rewind_preview", lambda c, s: c.rewind_preview(s, "1"), TypeError, "to_turn"),  # type: ignore[arg-type]
    ("fork", lambda c, s: c.fork(s, 1, ""), ValueError, "new_session_id must not be blank"),
    ("fork", lambda c, s: c.fork(s, 1, s), ValueError, "new_session_id must differ from session_id"),
    ("fork", lambda c, s: c.fork(s, -2, s + "-fork"), ValueError, "at_turn must be at least 0"),
    ("snapshot", lambda c, s: c.snapshot(s, timeout=0), ValueError, "timeout must be positive"),
    ("messages", lambda c, s: c.messages(s, limit=0), ValueError, "limit must be at least 1"),
    ("messages", lambda c, s: c.messages(s, limit=-1), ValueError, "limit must be at least 1"),
    ("messages", lambda c, s: c.messages(s, before_sequence=-1), ValueError, "before_sequence must be at least 0"),
    ("check_worker", lambda c, s: c.check_worker(s, seconds=0), ValueError, "seconds must be at least 1"),
]
"""At least one bad argument of every public method that takes one."""

NO_ARGUMENTS: Final = frozenset({"connect", "close", "flow_type", "server_address"})
"""Public names with nothing to check: the constructor, ``close`` and two properties."""


def _public(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")} - {
        name for name, value in inspect.getmembers(cls) if isinstance(value, type)}


def test_the_tables_cover_every_public_method_of_both_colours() -> None:
    assert _public(SessionClient) == _public(AsyncSessionClient)
    covered = set(UNKNOWN_SESSION_CALLS) | {name for name, *_ in BAD_ARGUMENTS} | NO_ARGUMENTS
    assert _public(SessionClient) - {"client", "flow", "timeout", "poll_interval"} == covered
    assert set(UNKNOWN_SESSION_CALLS) | {"start", "list_sessions"} == {name for name, *_ in BAD_ARGUMENTS}


@pytest.fixture
def no_worker_sessions(dex_engine: PrivateDexEngine) -> Iterator[tuple[SessionClient, PrivateDexEngine]]:
    """A client of a Flow type no Worker serves."""
    with SessionClient.connect(dex_engine.server_address, unique_flow_type("ErrorRule")) as sessions:
        yield sessions, dex_engine


@pytest.mark.parametrize(("name", "call", "error", "message"), BAD_ARGUMENTS,
                         ids=[f"{name}-{index}" for index, (name, *_) in enumerate(BAD_ARGUMENTS)])
def test_a_bad_argument_is_a_clear_error_before_anything_is_sent(
        no_worker_sessions: tuple[SessionClient, PrivateDexEngine], name: str, call: Call, error: type[Exception],
        message: str) -> None:
    sessions, _ = no_worker_sessions
    started = time.monotonic()
    with pytest.raises(error, match=message):
        call(sessions, f"no-such-{uuid.uuid4().hex[:8]}")
    assert time.monotonic() - started < 1.0  # checked before any wait for a Worker or a session


@pytest.mark.parametrize("name", sorted(UNKNOWN_SESSION_CALLS))
def test_an_unknown_session_is_session_not_found_at_once(
        no_worker_sessions: tuple[SessionClient, PrivateDexEngine], name: str) -> None:
    sessions, _ = no_worker_sessions
    session_id = f"no-such-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    with pytest.raises(SessionNotFoundError) as raised:
        UNKNOWN_SESSION_CALLS[name](sessions, session_id)
    assert time.monotonic() - started < 4.0  # not the call's 5 s timeout
    error: Any = raised.value
    assert isinstance(error, SessionClientError | FlowNotFoundError | FlowNotActiveOrNotFoundError)
    assert isinstance(error, FlowNotFoundError) and isinstance(error, FlowNotActiveOrNotFoundError)
    assert error.flow_id == session_id and session_id in str(error)
    assert error.__cause__ is None or type(error.__cause__).__module__.startswith(("dex", "grpc"))


def test_without_a_worker_calls_raise_no_worker_error_within_their_timeout(
        no_worker_sessions: tuple[SessionClient, PrivateDexEngine]) -> None:
    sessions, engine = no_worker_sessions
    session_id = f"s-{uuid.uuid4().hex[:12]}"
    with pytest.raises(NoWorkerError) as raised:
        sessions.start(session_id, "hello", check=True)  # finding 3: start says no Worker serves the type
    assert raised.value.flow_type == sessions.flow_type and "check the spelling" in raised.value.hint
    assert sessions.describe(session_id).flow_type == sessions.flow_type  # started all the same
    for name, call in (("send", lambda: sessions.send(session_id, "again", timeout=2)),
                       ("snapshot", lambda: sessions.snapshot(session_id, timeout=2)),
                       ("approve", lambda: sessions.approve(session_id, "i-1", timeout=2))):
        started = time.monotonic()
        with pytest.raises(NoWorkerError, match=f"no Worker serving {sessions.flow_type} answered on "
                                                f"{engine.server_address} within 2 s") as no_worker:
            call()
        elapsed = time.monotonic() - started
        assert 1.5 < elapsed < 4.0, (name, elapsed)  # the call's 2 s, not Dex's 10 s RPC timeout
        assert isinstance(no_worker.value, TimeoutError)
    assert sessions.events(session_id).events == ()  # an existing session without events: an empty page


def test_a_garbage_cursor_is_a_value_error(no_worker_sessions: tuple[SessionClient, PrivateDexEngine]) -> None:
    sessions, _ = no_worker_sessions
    session_id = f"s-{uuid.uuid4().hex[:12]}"
    sessions.start(session_id)
    for cursor in ("garbage", "99999999"):
        with pytest.raises(ValueError, match=f"{cursor!r} is no cursor of the events of session"):
            sessions.events(session_id, cursor)
    with pytest.raises(ValueError, match="'garbage' is no cursor"):
        sessions.next_event(session_id, "garbage", wait=1)
    sessions.stop(session_id)


def test_no_sdk_error_type_leaves_the_clients() -> None:
    """Every SDK error type a client call can meet has a ``dex_agents.client`` stand-in."""
    import grpc
    from dex import ErrorSubStatus, runtime_errors

    from dex_agents.client.errors import translated

    for kind, stand_in in ((runtime_errors.FlowAlreadyStartedError, SessionExistsError),
                           (runtime_errors.FlowNotFoundError, SessionNotFoundError),
                           (runtime_errors.FlowNotActiveOrNotFoundError, SessionNotFoundError),
                           (runtime_errors.RpcLockConflictError, SessionBusyError),
                           (runtime_errors.FlowClosingError, SessionServerError),
                           (runtime_errors.LongPollTimeoutError, SessionServerError),
                           (runtime_errors.RequestTimeoutError, SessionServerError),
                           (runtime_errors.ChannelMessageNotFoundError, SessionServerError),
                           (runtime_errors.DexServiceError, SessionServerError)):
        original = kind(grpc.StatusCode.UNAVAILABLE, ErrorSubStatus.UNCATEGORIZED, "detail", "op", "s-1")
        replacement: Any = translated(original, "s-1")
        assert type(replacement) is stand_in and isinstance(replacement, SessionClientError), kind
        assert replacement.flow_id == "s-1"
        if stand_in in (SessionBusyError, SessionServerError):
            assert (replacement.code, replacement.detail) == (grpc.StatusCode.UNAVAILABLE, "detail")
        if stand_in is not SessionServerError:
            assert isinstance(replacement, kind)
    refused = runtime_errors.WorkerInvocationError(grpc.StatusCode.UNKNOWN, ErrorSubStatus.WORKER_API_ERROR,
                                                   "rpc failed", "invoke_rpc", "s-1", None, "ValueError", "why")
    replacement = translated(refused, "s-1")
    assert isinstance(replacement, runtime_errors.WorkerInvocationError) and isinstance(replacement,
                                                                                        SessionClientError)
    assert (replacement.worker_error_type, replacement.worker_error_detail) == ("ValueError", "why")
    mapping = translated(runtime_errors.ValueMappingError("decode", "bad"), "s-1")
    assert type(mapping) is SessionClientError and "ValueMappingError" in str(mapping)
    plain = ValueError("mine")
    assert translated(plain, "s-1") is plain
