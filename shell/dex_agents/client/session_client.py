"""``SessionClient``: an application's typed, synchronous access to the sessions of one agent.

One Flow type per client; the session ID is the Flow ID. It needs no runner and talks to any Dex
server: ``SessionClient.connect(address, "SupportAgent")`` opens its own BlobCache and Client, and
``SessionClient(client, flow)`` wraps a Client the caller owns.

Invariants:
    * The RPCs (``send``, ``approve``/``reject``, ``snapshot``, ``messages``, ``check_worker``) run on
      a Worker serving the Flow type; ``start``, ``stop``, ``events``, ``state``,
      ``pending_interrupts`` and every wait need only the server, so they work while no Worker runs.
    * ``send`` queues a message at most once: it carries a message ID (the caller's, or one made up
      for the call) and is retried with that ID after a transient failure (a lost connection, a
      restarted engine) until ``timeout``; the session answers a resend as the first send
      (``send_user_message_once``). ``start`` is retried the same way with its request ID.
    * A wait returns the first committed value that satisfies it, polling every ``poll_interval``;
      a failed read (the engine restarting, say) is read again. Its ``TimeoutError`` names the
      session, what was awaited and the last value seen (the last read error is chained as the cause).
    * ``resolve_interrupt`` retries only ``RpcLockConflictError`` (safe: the RPC did not run), with a
      growing pause, until ``timeout``.
    * ``close`` (idempotent) closes what the client opened; a Client passed in stays open.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from types import TracebackType
from typing import Any, TypeVar, cast, final

from dex import (
    Attribute,
    Client,
    Credential,
    FlowInfo,
    LongPollTimeoutError,
    RPCInvokeOptions,
    RpcLockConflictError,
    SearchFlowEntry,
    StartFlowOptions,
    StopFlowOptions,
    StreamMessage,
)
from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.client.connection import OwnedBlobCache, client_options, definition_of
from dex_agents.client.export import export_session
from dex_agents.client.retries import (
    checked_message_id,
    is_repeatable_start,
    is_transient,
    repeat_sync,
    retried_start_options,
    send_options,
)
from dex_agents.client.server_calls import ServerCalls
from dex_agents.client.shared import (
    EVENT_PAGE_SIZE,
    LOCK_RETRY_FIRST_SECONDS,
    LOCK_RETRY_MAX_SECONDS,
    NOTHING_READ,
    check_positive,
    expect,
    run_all,
    sessions_query,
    timeout_message,
)
from dex_agents.client.values import (
    DEFAULT_WORKER_PROBE_SECONDS,
    EventPage,
    NoWorkerError,
    PendingInterruptOf,
    SessionEvent,
    StateCondition,
    page_after,
    status_is,
    turns_completed,
    turns_ended,
)
from dex_agents.pure.export_document import ExportDocument
from dex_agents.pure.rpc_values import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.values import AgentEvent, AgentInterrupt, AgentSessionStartInput, AgentState, AgentStatus
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import large_message_channels
from dex_agents.shell.worker import session_registry

__all__ = ["SessionClient"]

T = TypeVar("T")
V = TypeVar("V")

@final
class SessionClient:
    """The sessions of one agent Flow type on a Dex server (see the module docstring).

    Attributes:
        client: The SDK Client (its Registry holds ``flow``).
        flow: The session Flow, or its runner-less definition.
        timeout: Default seconds of waits and of ``resolve_interrupt``'s lock retries.
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
        self._server = ServerCalls(client.options.server_address, client.options.credential, client.blob_cache,
                                   client.registry)
        self._owned: list[Callable[[], None]] = []
        self._closed = False

    @classmethod
    def connect(cls, server_address: str, flow: AgentSessionFlow | str, *, credential: Credential | None = None,
                timeout: float = 30.0, poll_interval: float = 0.05) -> SessionClient:
        """A client with its own Registry, BlobCache (temporary directory) and Client; ``close`` ends them.

        Args:
            server_address: The Dex server, ``host:port``.
            flow: The agent's Flow type (a runner-less definition is built) or its Flow.
            credential: The server's bearer credential (``dex.FileCredential(path)``, ...), if it needs one.
            timeout: Default seconds for waits and lock-conflict retries (> 0).
            poll_interval: Seconds between reads while waiting (> 0).

        Raises:
            ValueError, TypeError: a bad Flow type, timeout or poll interval.
        """
        check_positive(timeout, poll_interval)
        definition = definition_of(flow)
        cache = OwnedBlobCache()
        try:
            with large_message_channels():  # a snapshot of a session with megabytes of history
                client = Client(session_registry([definition]), cache.blob_cache,
                                client_options(server_address, credential))
        except BaseException:
            cache.close()
            raise
        try:
            session_client = cls(client, definition, timeout=timeout, poll_interval=poll_interval)
        except BaseException:
            client.close()
            cache.close()
            raise
        session_client._owned += [client.close, cache.close]
        return session_client

    @property
    def flow_type(self) -> str:
        return self.flow.get_flow_type()

    @property
    def server_address(self) -> str:
        return self.client.options.server_address

    # Sessions (no Worker needed)

    def start(self, session_id: str, initial_message: str | None = None, *,
              options: StartFlowOptions | None = None, request_id: str | None = None) -> str:
        """Start the session ``session_id``; with ``initial_message`` its first turn starts at once.

        Without ``options`` the start carries a request ID (``request_id``, or one made up here) with
        ``ignore_already_started``, and a transient failure is retried with it until ``timeout``: Dex
        returns the run that request started, so the session starts once. Pass the same
        ``request_id`` to repeat a start whose answer you lost.

        Returns:
            The run ID.

        Raises:
            FlowAlreadyStartedError: The session already exists, started by another request (unless
                ``options`` allow reuse).
        """
        start_input = AgentSessionStartInput(initial_message=initial_message)
        start_options = retried_start_options(options, request_id)

        def start_flow() -> str:
            return self.client.start_flow(self.flow, session_id, start_input, start_options)

        return repeat_sync(start_flow, self.timeout) if is_repeatable_start(start_options) else start_flow()

    def stop(self, session_id: str, options: StopFlowOptions | None = None) -> None:
        """Stop the session (cancel by default); returns once Dex accepted the request."""
        self.client.stop_flow(session_id, options or StopFlowOptions())

    def describe(self, session_id: str) -> FlowInfo:
        """The session's run: Flow type, status, start time (``FlowNotFoundError`` for an unknown one)."""
        return self.client.describe_flow(session_id)

    def list_sessions(self, *, limit: int = 100) -> list[SearchFlowEntry]:
        """Up to ``limit`` sessions of this Flow type, in the server's order (newest first on the local engine)."""
        return list(self.client.search_flows(sessions_query(self.flow_type), limit).flows)

    # RPCs (a Worker serving the Flow type runs them)

    def send(self, session_id: str, text: str, *, message_id: str | None = None) -> bool:
        """Queue a user message once: ``False`` for blank text; sent during a turn, it starts the next turn.

        The message carries ``message_id`` (``None``: one made up for this call). A transient failure
        (a lost connection, a restarted engine) is retried with it until ``timeout``, and a message ID
        the session already queued answers ``True`` without queueing it again, so sending one
        message twice, here or after a lost answer, queues it once.

        Raises:
            ValueError: ``message_id`` is blank, longer than 200 characters or holds ``/``.
            WorkerInvocationError: The session refused the message (the ID was sent with another
                text, the text holds a lone surrogate).
        """
        identity = checked_message_id(message_id)
        request = SendUserMessageOnceInput(message_id=identity, text=text)
        options = send_options(identity)

        def send_once() -> bool:
            answer = self._invoke(self.flow.send_user_message_once, session_id, request, options=options)
            return expect(answer, bool, "send_user_message_once")

        return repeat_sync(send_once, self.timeout)

    def approve(self, session_id: str, interrupt_id: str) -> bool:
        """Approve a pending interrupt: ``False`` when it is not pending or past its deadline."""
        return self.resolve_interrupt(session_id, interrupt_id, True)

    def reject(self, session_id: str, interrupt_id: str, message: str | None = None) -> bool:
        """Reject a pending interrupt (``message`` is what the model is told): ``False`` when not pending."""
        return self.resolve_interrupt(session_id, interrupt_id, False, message)

    def resolve_interrupt(self, session_id: str, interrupt_id: str, approved: bool,
                          rejection_message: str | None = None) -> bool:
        """Approve or reject a pending interrupt: ``False`` when it is not pending or past its deadline.

        Retries ``RpcLockConflictError`` (``AwaitToolApproval`` may hold the lock) until ``timeout``,
        then raises the last conflict.
        """
        resolution = ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved,
                                           rejection_message=rejection_message)
        deadline = time.monotonic() + self.timeout
        pause = LOCK_RETRY_FIRST_SECONDS
        while True:
            try:
                result = self._invoke(self.flow.resolve_interrupt, session_id, resolution)
            except RpcLockConflictError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, LOCK_RETRY_MAX_SECONDS)
                continue
            return expect(result, bool, "resolve_interrupt")

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's state, messages, pending interrupts, tool calls, usage and queued message count."""
        return expect(self._invoke(self.flow.get_agent_snapshot, session_id), AgentSnapshot, "get_agent_snapshot")

    def messages(self, session_id: str, *, before_sequence: int | None = None,
                 limit: int | None = None) -> AgentMessagePage:
        """One page of stored messages, oldest first: those before ``before_sequence`` (all when
        ``None``), the newest ``limit`` of them (clamped to 1..200, default 50). The page's
        ``next_before_sequence`` asks for the next older page."""
        page_input = ListAgentMessagesInput(before_sequence=before_sequence, limit=limit)
        return expect(self._invoke(self.flow.list_agent_messages, session_id, page_input), AgentMessagePage,
                      "list_agent_messages")

    def check_worker(self, session_id: str, *, seconds: int = DEFAULT_WORKER_PROBE_SECONDS) -> None:
        """Fail fast unless a Worker serving this Flow type answers for ``session_id`` within ``seconds``.

        The probe is a harmless read that Dex withdraws if no Worker took it.

        Raises:
            NoWorkerError: No Worker took the probe in time.
            FlowNotActiveOrNotFoundError: The session does not exist.
        """
        if not self._server.worker_answers(self.flow, session_id, seconds):
            raise NoWorkerError(self.flow_type, self.server_address, seconds)

    def _invoke(self, method: Callable[..., Any], session_id: str, *rpc_input: object,
                options: RPCInvokeOptions | None = None) -> object:
        invoke = cast(Callable[..., object], self.client.invoke_rpc)
        return invoke(method, session_id, *rpc_input, options=options or RPCInvokeOptions())

    # Events (no Worker needed)

    def events(self, session_id: str, after: str = "", *, page_size: int = EVENT_PAGE_SIZE) -> EventPage:
        """The retained events after the cursor ``after`` (all retained ones for ``""``), oldest first,
        and the cursor after the last; returns at once, without waiting for new events."""
        newest_first: list[StreamMessage[AgentEvent]] = []
        page_token = ""
        while True:
            page = self.client.list_stream_messages(session_id, self.flow.agent_events, page_size, page_token)
            for message in page.messages:
                if after and message.resume_token == after:
                    return page_after(newest_first, after, found=True)
                newest_first.append(message)
            if not page.next_page_token:
                return page_after(newest_first, after, found=False)
            page_token = page.next_page_token

    def next_event(self, session_id: str, after: str = "", *, wait: float = 1.0) -> SessionEvent | None:
        """The first event after the cursor ``after``, waiting up to ``wait`` seconds (whole seconds,
        at least 1, on the server) for one to be written; ``None`` when none came."""
        try:
            message = self.client.read_stream(session_id, self.flow.agent_events, after,
                                              timedelta(seconds=max(1, round(wait))))
        except LongPollTimeoutError:
            return None
        return SessionEvent.of(message)

    def follow(self, session_id: str, after: str = "", *, wait: float = 1.0) -> Iterator[SessionEvent | None]:
        """Every event after ``after`` as it is written, forever; ``None`` after each ``wait`` without
        one (or after a transient failure, such as a restarting engine, which it reads through), so
        the caller can check its own conditions (break out of the loop to stop)."""
        while True:
            try:
                event = self.next_event(session_id, after, wait=wait)
            except Exception as error:
                if not is_transient(error):
                    raise
                time.sleep(min(wait, self.poll_interval * 10))
                event = None
            if event is not None:
                after = event.cursor
            yield event

    # Committed state (no Worker needed)

    def read_attribute(self, session_id: str, attribute: Attribute[T]) -> T | None:
        """The committed value of ``attribute`` (a definition of the Flow's schema), ``None`` when unset."""
        return self._server.read_attribute(session_id, attribute, timeout=self.timeout)

    def state(self, session_id: str) -> AgentState | None:
        """The committed ``AgentState``; ``None`` before ``StartAgentSession`` committed."""
        return self.read_attribute(session_id, self.flow.agent_state)

    def pending_interrupts(self, session_id: str) -> PVector[AgentInterrupt]:
        """The committed ``PendingInterrupts`` (empty before the session started)."""
        pending = self.read_attribute(session_id, self.flow.pending_interrupts)
        return pvector() if pending is None else pending

    def export(self, session_id: str) -> ExportDocument:
        """The session as one self-describing document (``dex_agents.pure.export_document``): committed
        values, retained events, Step history and the inputs the reducers saw, rebuilt from the history.
        Reads the server only (no Worker); ``render_export`` gives its JSON text.

        Raises:
            FlowNotFoundError: No session ``session_id`` exists.
            RuntimeError: The session kept changing while it was read, or a stored value is unreadable.
        """
        return export_session(self.client, self._server, self.flow, session_id, self.events(session_id),
                              timeout=self.timeout)

    # Waits on committed state (no Worker needed to observe them)

    def wait_for(self, session_id: str, condition: StateCondition, *, timeout: float | None = None) -> AgentState:
        """Wait until the committed ``AgentState`` satisfies ``condition``, and return it.

        Raises:
            TimeoutError: Not within ``timeout`` (default ``self.timeout``); names the condition.
        """
        return self._wait(session_id, condition.description, lambda: self.state(session_id), condition.accept,
                              timeout)

    def wait_for_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns ended (completed or failed) and no turn runs."""
        return self.wait_for(session_id, turns_ended(count), timeout=timeout)

    def wait_for_completed_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns completed (a failed turn does not count)."""
        return self.wait_for(session_id, turns_completed(count), timeout=timeout)

    def wait_for_status(self, session_id: str, status: AgentStatus | str, *,
                        timeout: float | None = None) -> AgentState:
        """Wait until ``AgentState.status`` is ``status`` (``ValueError`` for an unknown status)."""
        return self.wait_for(session_id, status_is(status), timeout=timeout)

    def wait_for_pending_interrupt(self, session_id: str, tool_name: str | None = None, *,
                                   timeout: float | None = None) -> AgentInterrupt:
        """Wait until an interrupt (of a ``tool_name`` call, when given) is pending; return the first."""
        wanted = PendingInterruptOf(tool_name=tool_name)
        return self._wait(session_id, wanted.description, lambda: self.pending_interrupts(session_id),
                              wanted.accept, timeout)

    def _wait(self, session_id: str, description: str, read: Callable[[], V], accept: Callable[[V], T | None],
              timeout: float | None) -> T:
        seconds = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        last_seen: object = NOTHING_READ
        last_error: Exception | None = None
        while True:
            try:
                value = read()
            except Exception as error:  # noqa: BLE001 - a failed read is retried until the deadline
                last_error = error
            else:
                last_seen, last_error = value, None
                accepted = accept(value)
                if accepted is not None:
                    return accepted
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(timeout_message(session_id, description, seconds, last_seen, last_error)) \
                    from last_error
            time.sleep(min(self.poll_interval, remaining))

    def close(self) -> None:
        """Close the read channel and whatever ``connect`` opened (idempotent)."""
        if self._closed:
            return
        self._closed = True
        run_all([self._server.close, *self._owned])

    def __enter__(self) -> SessionClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionClient(flow_type={self.flow_type!r}, server_address={self.server_address!r})"
