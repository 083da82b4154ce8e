# Generated from async_session_reads.py by scripts/unasync.py: edit that file, then run the script.
"""``SessionReads``: what a session client reads from the server alone (events, committed
state, exports) and waits on; ``SessionClient`` adds the sessions' lifecycle and RPCs to it.

Invariants:
    * Nothing here needs a Worker: events are the Flow's Stream, state is the committed Attributes
      (``ServerCalls``), an export reads the history; so all of it works while no Worker runs.
    * A cursor is the Stream resume token of the last event handed out (see ``values``).
    * Every public method follows ``errors``' rule (arguments checked first, then only
      ``dex_agents.client`` errors); an unknown session is ``SessionNotFoundError`` everywhere, the
      event reads too (a Stream of no session reads empty, so an empty read asks ``describe``).
    * A cursor is checked: one the session's retained events do not hold is asked of the server
      (``read_stream``); one it refuses, or after which it holds nothing, is a ``ValueError``.
    * A wait returns the first committed value that satisfies it, polling every ``poll_interval``;
      a failed read (the engine restarting, say) is read again, an unknown session fails at once.
      Its ``TimeoutError`` names the session, what was awaited and the last value seen (the last
      read error is chained as the cause); when then no Worker answers a probe
      (``DEFAULT_WORKER_PROBE_SECONDS`` more), it is a ``NoWorkerError`` (a ``TimeoutError``) that
      says so: a misspelt Flow type, or no Worker running.
    * ``close`` (idempotent) closes the read channel and what ``connect`` opened, every step even
      after one failed; a Client passed in stays open.
"""

from __future__ import annotations

from collections.abc import Iterator, Callable
from datetime import timedelta
from types import TracebackType
from typing import Self, TypeVar, cast

import grpc
from dex import (
    Client,
    Attribute,
    DexServiceError,
    FlowInfo,
    LongPollTimeoutError,
    SearchFlowEntry,
    StreamMessage,
)
from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.client.children import children, pending_approvals
from dex_agents.client.export import export_session
from dex_agents.client.loops import close_all, pause, poll_until
from dex_agents.client.server_calls import ServerCalls
from dex_agents.client.errors import NoWorkerError, SessionClientError, client_errors
from dex_agents.client.retries import checked_message_id, is_transient
from dex_agents.client.shared import EVENT_PAGE_SIZE, check_count, check_name, check_positive, check_seconds, check_text
from dex_agents.client.stopped import is_stopped_status
from dex_agents.client.values import (
    DEFAULT_WORKER_PROBE_SECONDS,
    EventPage,
    PendingApproval,
    PendingInterruptOf,
    SessionEvent,
    SessionOverview,
    StateCondition,
    page_after,
    status_is,
    turns_completed,
    turns_ended,
)
from dex_agents.pure.offline.export_document import ExportDocument
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterrupt,
    AgentState,
    AgentStatus,
    AgentToolCall,
    AgentUsage,
    UserMessageReceipt,
)
from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["SessionReads"]

T = TypeVar("T")
V = TypeVar("V")
W = TypeVar("W")


class SessionReads:
    """The server-only reads and waits of one agent Flow type's sessions (see the module docstring).

    Attributes:
        client: The SDK Client (its Registry holds ``flow``).
        flow: The session Flow, or its runner-less definition.
        timeout: Default seconds of waits and of ``resolve_interrupt``'s lock retries.
        poll_interval: Seconds between reads while waiting.
    """

    def __init__(self, client: Client, flow: AgentSessionFlow, *, timeout: float = 30.0,
                 poll_interval: float = 0.05) -> None:
        """Wrap ``client``, which stays the caller's (``close`` leaves it open).

        Args:
            client: A Client whose Registry holds ``flow`` (``session_registry``) and that advertises
                the pull Worker target.
            flow: The session Flow, or ``session_flow_definition(flow_type)``.
            timeout: Default seconds for waits and lock-conflict retries (> 0).
            poll_interval: Seconds between reads while waiting (> 0).

        Raises:
            ValueError: ``timeout`` or ``poll_interval`` is not positive, or the Client's Registry
                does not hold ``flow``.
        """
        check_positive(timeout, poll_interval)
        if not any(registered is flow for registered in client.registry.flows):
            raise ValueError(f"the Client's Registry does not hold this {flow.get_flow_type()!r} Flow; "
                             f"build it with session_registry([flow])")
        self.client = client
        self.flow = flow
        self.timeout = timeout
        self.poll_interval = poll_interval
        self._server = ServerCalls(client.options.server_address, client.options.credential,
                                        client.blob_cache, client.registry)
        self._owned: list[Callable[[], None]] = []
        self._closed = False

    @property
    def flow_type(self) -> str:
        return self.flow.get_flow_type()

    @property
    def server_address(self) -> str:
        return self.client.options.server_address

    # Events (no Worker needed)

    @client_errors
    def events(self, session_id: str, after: str = "", *, page_size: int = EVENT_PAGE_SIZE) -> EventPage:
        """The retained events after the cursor ``after`` (all retained ones for ``""``), oldest first,
        and the cursor after the last; returns at once, without waiting for new events.

        Raises:
            ValueError: ``after`` is no cursor of this session's events.
            SessionNotFoundError: No session ``session_id`` exists.
        """
        check_name("session_id", session_id)
        check_text("after", after)
        check_count("page_size", page_size, minimum=1)
        newest_first: list[StreamMessage[AgentEvent]] = []
        page_token = ""
        while True:
            page = self.client.list_stream_messages(session_id, self.flow.agent_events, page_size, page_token)
            for message in page.messages:
                if after and message.resume_token == after:
                    return page_after(newest_first, after, found=True)
                newest_first.append(message)
            if not page.next_page_token:
                break
            page_token = page.next_page_token
        if not newest_first:
            self.describe(session_id)  # an unknown session reads as an empty Stream
        if after:
            self._check_cursor(session_id, after)
        return page_after(newest_first, after, found=False)

    def _check_cursor(self, session_id: str, after: str) -> None:
        """Raise ``ValueError`` unless the server reads events after the cursor ``after`` (one the
        retained events no longer hold: older events were dropped)."""
        try:
            self.client.read_stream(session_id, self.flow.agent_events, after, timedelta(seconds=1))
        except LongPollTimeoutError as error:
            raise ValueError(f"after: {after!r} is no cursor of the events of session {session_id!r}") from error
        except DexServiceError as error:
            if error.code is not grpc.StatusCode.INVALID_ARGUMENT:
                raise
            raise ValueError(f"after: {after!r} is no cursor of the events of session {session_id!r} "
                             f"({error.detail})") from error

    @client_errors
    def describe(self, session_id: str) -> FlowInfo:
        """The session's run: Flow type, status, start time (``SessionNotFoundError`` for an unknown one)."""
        check_name("session_id", session_id)
        return self.client.describe_flow(session_id)

    @client_errors
    def next_event(self, session_id: str, after: str = "", *, wait: float = 1.0) -> SessionEvent | None:
        """The first event after the cursor ``after``, waiting up to ``wait`` seconds (whole seconds,
        at least 1, on the server) for one to be written; ``None`` when none came.

        Raises:
            ValueError: The server refused the cursor ``after``.
            SessionNotFoundError: No session ``session_id`` exists (asked when no event came).
        """
        check_name("session_id", session_id)
        check_text("after", after)
        check_seconds("wait", wait, optional=False)
        try:
            message = self.client.read_stream(session_id, self.flow.agent_events, after,
                                                    timedelta(seconds=max(1, round(wait))))
        except LongPollTimeoutError:
            self.describe(session_id)  # an unknown session's Stream is only empty
            return None
        except DexServiceError as error:
            if error.code is not grpc.StatusCode.INVALID_ARGUMENT:
                raise
            raise ValueError(f"after: {after!r} is no cursor of the events of session {session_id!r} "
                             f"({error.detail})") from error
        return SessionEvent.of(message)

    def follow(self, session_id: str, after: str = "", *,
                     wait: float = 1.0) -> Iterator[SessionEvent | None]:
        """Every event after ``after`` as it is written, forever; ``None`` after each ``wait`` without
        one (or after a transient failure, such as a restarting engine, which it reads through), so
        the caller can check its own conditions (break out of the loop to stop)."""
        check_name("session_id", session_id)
        check_seconds("wait", wait, optional=False)
        while True:
            try:
                event = self.next_event(session_id, after, wait=wait)
            except Exception as error:
                if not is_transient(error):
                    raise
                pause(min(wait, self.poll_interval * 10))
                event = None
            if event is not None:
                after = event.cursor
            yield event

    # Committed state (no Worker needed)

    @client_errors
    def read_attribute(self, session_id: str, attribute: Attribute[T]) -> T | None:
        """The committed value of ``attribute`` (a definition of the Flow's schema), ``None`` when unset."""
        check_name("session_id", session_id)
        return self._server.read_attribute(session_id, attribute, timeout=self.timeout)

    @client_errors
    def state(self, session_id: str) -> AgentState | None:
        """The committed ``AgentState``; ``None`` before ``StartAgentSession`` committed."""
        return self.read_attribute(session_id, self.flow.agent_state)

    @client_errors
    def overview(self, session_id: str) -> SessionOverview:
        """The committed ``AgentState``, ``PendingInterrupts`` and ``AgentUsage``, in one read of the
        server (what a list of sessions shows of each)."""
        check_name("session_id", session_id)
        flow = self.flow
        state, pending, usage = self._server.read_attributes(
            session_id, (flow.agent_state, flow.pending_interrupts, flow.agent_usage), timeout=self.timeout)
        return SessionOverview(state=cast(AgentState | None, state),
                               pending_interrupts=pvector() if pending is None else cast(PVector[AgentInterrupt], pending),
                               usage=cast(AgentUsage | None, usage))

    @client_errors
    def pending_interrupts(self, session_id: str) -> PVector[AgentInterrupt]:
        """The committed ``PendingInterrupts`` (empty before the session started)."""
        pending = self.read_attribute(session_id, self.flow.pending_interrupts)
        return pvector() if pending is None else pending

    @client_errors
    def unknown_outcome(self, session_id: str, tool_call_id: str) -> AgentToolCall | None:
        """The committed ``UnknownToolOutcomes`` record of the call ``tool_call_id``: ``outcome_unknown``
        until ``resolve_tool_outcome`` settles it, then ``succeeded`` or ``failed`` with its
        ``settlement`` (the audit); ``None`` when its outcome never became unknown."""
        check_name("session_id", session_id)
        check_name("tool_call_id", tool_call_id)
        return self._server.read_map_instance(session_id, self.flow.unknown_tool_outcomes, tool_call_id,
                                                    timeout=self.timeout)

    @client_errors
    def children(self, session_id: str) -> list[SearchFlowEntry]:
        """The child sessions ``session_id``'s sub-agent calls started (Dex SubFlows), in the server's
        order: each entry's ``flow_id`` is the child's session ID, ``flow_type`` its agent's Flow type."""
        check_name("session_id", session_id)
        self.describe(session_id)  # an unknown session is SessionNotFoundError, not "no children"
        return children(self.client.search_flows, session_id)

    @client_errors
    def pending_approvals(self, session_id: str) -> list[PendingApproval]:
        """The session's pending interrupts, then those of its sub-agents' child sessions (and theirs),
        each with the session that holds it; ``resolve_interrupt`` through ``session_id`` reaches them."""
        check_name("session_id", session_id)
        return pending_approvals(self.client.search_flows, self.pending_interrupts, session_id)

    @client_errors
    def message_receipt(self, session_id: str, message_id: str) -> UserMessageReceipt | None:
        """The committed receipt of the message ``message_id`` (``send(..., message_id=...)``): not
        ``None`` once the session queued it, when a send with that ID queues nothing more. Its
        ``text_sha256`` tells whether another text was sent with the ID (a send of it is refused).

        Raises:
            ValueError: ``message_id`` cannot be a message ID.
        """
        check_name("session_id", session_id)
        check_name("message_id", message_id)
        identity = checked_message_id(message_id)
        return self._server.read_map_instance(session_id, self.flow.user_message_receipts, identity,
                                                    timeout=self.timeout)

    @client_errors
    def export(self, session_id: str) -> ExportDocument:
        """The session as one self-describing document (``dex_agents.pure.offline.export_document``): committed
        values, retained events, Step history and the inputs the reducers saw, rebuilt from the history.
        Reads the server only (no Worker); ``render_export`` gives its JSON text.

        Raises:
            SessionNotFoundError: No session ``session_id`` exists.
            RuntimeError: The session kept changing while it was read, or a stored value is unreadable.
        """
        check_name("session_id", session_id)
        return export_session(self.client, self._server, self.flow, session_id, self.events(session_id),
                                    timeout=self.timeout)

    # Waits on committed state (no Worker needed to observe them)

    @client_errors
    def wait_for(self, session_id: str, condition: StateCondition, *,
                       timeout: float | None = None) -> AgentState:
        """Wait until the committed ``AgentState`` satisfies ``condition``, and return it.

        Raises:
            TimeoutError: Not within ``timeout`` (default ``self.timeout``); names the condition.
            NoWorkerError: Not within ``timeout``, and no Worker serving the Flow type answers.
            SessionNotFoundError: No session ``session_id`` exists.
        """
        check_name("session_id", session_id)
        if not isinstance(condition, StateCondition):
            raise TypeError(f"condition must be a StateCondition, got {type(condition).__name__}")
        check_seconds("timeout", timeout)
        return self._wait(session_id, lambda: self.state(session_id), condition.accept,
                                condition.description, timeout)

    def _wait(self, session_id: str, read: Callable[[], V], accept: Callable[[V], W | None],
                    description: str, timeout: float | None) -> W:
        """``poll_until``; at its timeout, ``NoWorkerError`` when no Worker answers a probe."""
        try:
            return poll_until(read, accept, session_id=session_id, description=description,
                                    seconds=self._seconds(timeout), poll_interval=self.poll_interval)
        except TimeoutError as timed_out:
            replacement = self._timed_out(session_id, timed_out)
            if replacement is timed_out:
                raise
            raise replacement from timed_out

    def _timed_out(self, session_id: str, timed_out: TimeoutError) -> TimeoutError:
        """What a wait that timed out raises: ``timed_out``, or a ``NoWorkerError`` that says no
        Worker answers (a stopped session says so instead: no Worker will move it)."""
        try:
            status = (self.describe(session_id)).status
            if is_stopped_status(status):
                return TimeoutError(f"{timed_out}; the session is stopped ({status.value})")
            if self._server.worker_answers(self.flow, session_id, DEFAULT_WORKER_PROBE_SECONDS):
                return timed_out
        except (SessionClientError, DexServiceError):
            return timed_out  # the server cannot tell now: the timeout stands as it is
        return NoWorkerError(self.flow_type, self.server_address, DEFAULT_WORKER_PROBE_SECONDS, waited=str(timed_out))

    @client_errors
    def wait_for_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns ended (completed or failed) and no turn runs."""
        check_count("count", count, minimum=0)
        return self.wait_for(session_id, turns_ended(count), timeout=timeout)

    @client_errors
    def wait_for_completed_turns(self, session_id: str, count: int, *,
                                       timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns completed (a failed turn does not count)."""
        check_count("count", count, minimum=0)
        return self.wait_for(session_id, turns_completed(count), timeout=timeout)

    @client_errors
    def wait_for_status(self, session_id: str, status: AgentStatus | str, *,
                              timeout: float | None = None) -> AgentState:
        """Wait until ``AgentState.status`` is ``status`` (``ValueError`` for an unknown status)."""
        return self.wait_for(session_id, status_is(status), timeout=timeout)

    @client_errors
    def wait_for_pending_interrupt(self, session_id: str, tool_name: str | None = None, *,
                                         timeout: float | None = None) -> AgentInterrupt:
        """Wait until an interrupt (of a ``tool_name`` call, when given) is pending; return the first
        (raises as ``wait_for``)."""
        check_name("session_id", session_id)
        check_text("tool_name", tool_name, optional=True)
        check_seconds("timeout", timeout)
        wanted = PendingInterruptOf(tool_name=tool_name)
        return self._wait(session_id, lambda: self.pending_interrupts(session_id), wanted.accept,
                                wanted.description, timeout)

    def _seconds(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def close(self) -> None:
        """Close the read channel and whatever ``connect`` opened (idempotent)."""
        if self._closed:
            return
        self._closed = True
        close_all([self._server.close, *self._owned])

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(flow_type={self.flow_type!r}, server_address={self.server_address!r})"
