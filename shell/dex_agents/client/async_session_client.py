"""``AsyncSessionClient``: ``SessionClient``'s API for asyncio applications, on ``dex.AsyncClient``.

Every method of ``SessionClient`` is here with the same name, arguments and result, as a coroutine
(``follow`` is an async iterator). Build it on the event loop that uses it: ``await
AsyncSessionClient.connect(address, "SupportAgent")``, or ``AsyncSessionClient(async_client, flow)``.

Invariants: those of ``SessionClient`` (RPCs need a Worker, reads and waits only the server; waits
poll with ``asyncio.sleep`` and read again after a failed read; ``send`` carries a message ID and
``start`` a request ID, and both are retried with them after a transient failure until ``timeout``;
lock conflicts of ``resolve_interrupt`` are retried until ``timeout``; ``close`` ends only what the
client opened).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from types import TracebackType
from typing import Any, TypeVar, cast, final

from dex import (
    AsyncClient,
    Attribute,
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
from dex_agents.client.retries import (
    checked_message_id,
    is_repeatable_start,
    is_transient,
    repeat_async,
    retried_start_options,
    send_options,
)
from dex_agents.client.server_calls import AsyncServerCalls
from dex_agents.client.session_client import SessionClient
from dex_agents.client.shared import (
    EVENT_PAGE_SIZE,
    LOCK_RETRY_FIRST_SECONDS,
    LOCK_RETRY_MAX_SECONDS,
    NOTHING_READ,
    check_positive,
    expect,
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

__all__ = ["AsyncSessionClient"]

T = TypeVar("T")
V = TypeVar("V")


@final
class AsyncSessionClient:
    """The sessions of one agent Flow type on a Dex server, for asyncio (see ``SessionClient``).

    Attributes:
        client: The SDK AsyncClient (its Registry holds ``flow``).
        flow: The session Flow, or its runner-less definition.
        timeout: Default seconds of waits and of ``resolve_interrupt``'s lock retries.
    """

    def __init__(self, client: AsyncClient, flow: AgentSessionFlow, *, timeout: float = 30.0,
                 poll_interval: float = 0.05) -> None:
        """Wrap ``client``, which stays the caller's; call it on the loop that uses the client.

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
        self._server = AsyncServerCalls(client.options.server_address, client.options.credential,
                                        client.blob_cache, client.registry)
        self._owned: list[Callable[[], Awaitable[None]]] = []
        self._closed = False

    @classmethod
    async def connect(cls, server_address: str, flow: AgentSessionFlow | str, *,
                      credential: Credential | None = None, timeout: float = 30.0,
                      poll_interval: float = 0.05) -> AsyncSessionClient:
        """A client with its own Registry, BlobCache and AsyncClient (see ``SessionClient.connect``)."""
        check_positive(timeout, poll_interval)
        definition = definition_of(flow)
        cache = OwnedBlobCache()
        try:
            with large_message_channels():  # a snapshot of a session with megabytes of history
                client = AsyncClient(session_registry([definition]), cache.blob_cache,
                                     client_options(server_address, credential))
        except BaseException:
            cache.close()
            raise
        try:
            session_client = cls(client, definition, timeout=timeout, poll_interval=poll_interval)
        except BaseException:
            await client.close()
            cache.close()
            raise

        async def close_cache() -> None:
            cache.close()

        session_client._owned += [client.close, close_cache]
        return session_client

    @property
    def flow_type(self) -> str:
        return self.flow.get_flow_type()

    @property
    def server_address(self) -> str:
        return self.client.options.server_address

    # Sessions (no Worker needed)

    async def start(self, session_id: str, initial_message: str | None = None, *,
                    options: StartFlowOptions | None = None, request_id: str | None = None) -> str:
        """Start the session ``session_id``; returns the run ID (see ``SessionClient.start``: without
        ``options`` it carries a request ID and retries transient failures with it)."""
        start_input = AgentSessionStartInput(initial_message=initial_message)
        start_options = retried_start_options(options, request_id)

        async def start_flow() -> str:
            return await self.client.start_flow(self.flow, session_id, start_input, start_options)

        if is_repeatable_start(start_options):
            return await repeat_async(start_flow, self.timeout)
        return await start_flow()

    async def stop(self, session_id: str, options: StopFlowOptions | None = None) -> None:
        """Stop the session (cancel by default)."""
        await self.client.stop_flow(session_id, options or StopFlowOptions())

    async def describe(self, session_id: str) -> FlowInfo:
        """The session's run: Flow type, status, start time."""
        return await self.client.describe_flow(session_id)

    async def list_sessions(self, *, limit: int = 100) -> list[SearchFlowEntry]:
        """Up to ``limit`` sessions of this Flow type."""
        return list((await self.client.search_flows(sessions_query(self.flow_type), limit)).flows)

    # RPCs (a Worker serving the Flow type runs them)

    async def send(self, session_id: str, text: str, *, message_id: str | None = None) -> bool:
        """Queue a user message once: ``False`` for blank text (see ``SessionClient.send``: the message
        carries ``message_id``, or one made up here, and a transient failure is retried with it)."""
        identity = checked_message_id(message_id)
        request = SendUserMessageOnceInput(message_id=identity, text=text)
        options = send_options(identity)

        async def send_once() -> bool:
            answer = await self._invoke(self.flow.send_user_message_once, session_id, request, options=options)
            return expect(answer, bool, "send_user_message_once")

        return await repeat_async(send_once, self.timeout)

    async def approve(self, session_id: str, interrupt_id: str) -> bool:
        """Approve a pending interrupt: ``False`` when it is not pending or past its deadline."""
        return await self.resolve_interrupt(session_id, interrupt_id, True)

    async def reject(self, session_id: str, interrupt_id: str, message: str | None = None) -> bool:
        """Reject a pending interrupt: ``False`` when it is not pending."""
        return await self.resolve_interrupt(session_id, interrupt_id, False, message)

    async def resolve_interrupt(self, session_id: str, interrupt_id: str, approved: bool,
                                rejection_message: str | None = None) -> bool:
        """Approve or reject a pending interrupt, retrying lock conflicts until ``timeout``."""
        resolution = ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved,
                                           rejection_message=rejection_message)
        deadline = time.monotonic() + self.timeout
        pause = LOCK_RETRY_FIRST_SECONDS
        while True:
            try:
                result = await self._invoke(self.flow.resolve_interrupt, session_id, resolution)
            except RpcLockConflictError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                await asyncio.sleep(min(pause, remaining))
                pause = min(pause * 2, LOCK_RETRY_MAX_SECONDS)
                continue
            return expect(result, bool, "resolve_interrupt")

    async def snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's state, messages, pending interrupts, tool calls, usage and queued message count."""
        return expect(await self._invoke(self.flow.get_agent_snapshot, session_id), AgentSnapshot,
                      "get_agent_snapshot")

    async def messages(self, session_id: str, *, before_sequence: int | None = None,
                       limit: int | None = None) -> AgentMessagePage:
        """One page of stored messages, oldest first (see ``SessionClient.messages``)."""
        page_input = ListAgentMessagesInput(before_sequence=before_sequence, limit=limit)
        return expect(await self._invoke(self.flow.list_agent_messages, session_id, page_input),
                      AgentMessagePage, "list_agent_messages")

    async def check_worker(self, session_id: str, *, seconds: int = DEFAULT_WORKER_PROBE_SECONDS) -> None:
        """Fail fast unless a Worker serving this Flow type answers within ``seconds`` (``NoWorkerError``)."""
        if not await self._server.worker_answers(self.flow, session_id, seconds):
            raise NoWorkerError(self.flow_type, self.server_address, seconds)

    async def _invoke(self, method: Callable[..., Any], session_id: str, *rpc_input: object,
                      options: RPCInvokeOptions | None = None) -> object:
        invoke = cast(Callable[..., Awaitable[object]], self.client.invoke_rpc)
        return await invoke(method, session_id, *rpc_input, options=options or RPCInvokeOptions())

    # Events (no Worker needed)

    async def events(self, session_id: str, after: str = "", *, page_size: int = EVENT_PAGE_SIZE) -> EventPage:
        """The retained events after the cursor ``after``, oldest first, without waiting."""
        newest_first: list[StreamMessage[AgentEvent]] = []
        page_token = ""
        while True:
            page = await self.client.list_stream_messages(session_id, self.flow.agent_events, page_size, page_token)
            for message in page.messages:
                if after and message.resume_token == after:
                    return page_after(newest_first, after, found=True)
                newest_first.append(message)
            if not page.next_page_token:
                return page_after(newest_first, after, found=False)
            page_token = page.next_page_token

    async def next_event(self, session_id: str, after: str = "", *, wait: float = 1.0) -> SessionEvent | None:
        """The first event after ``after``, waiting up to ``wait`` seconds; ``None`` when none came."""
        try:
            message = await self.client.read_stream(session_id, self.flow.agent_events, after,
                                                    timedelta(seconds=max(1, round(wait))))
        except LongPollTimeoutError:
            return None
        return SessionEvent.of(message)

    async def follow(self, session_id: str, after: str = "", *,
                     wait: float = 1.0) -> AsyncIterator[SessionEvent | None]:
        """Every event after ``after`` as it is written, forever; ``None`` after each quiet ``wait`` (or
        after a transient failure, such as a restarting engine, which it reads through)."""
        while True:
            try:
                event = await self.next_event(session_id, after, wait=wait)
            except Exception as error:
                if not is_transient(error):
                    raise
                await asyncio.sleep(min(wait, self.poll_interval * 10))
                event = None
            if event is not None:
                after = event.cursor
            yield event

    async def export(self, session_id: str) -> ExportDocument:
        """The session as one self-describing document (see ``SessionClient.export``): read by a sync
        session client of the same server and Flow type on a worker thread."""
        def export_now() -> ExportDocument:
            with SessionClient.connect(self.server_address, self.flow_type, credential=self.client.options.credential,
                                       timeout=self.timeout) as sessions:
                return sessions.export(session_id)

        return await asyncio.to_thread(export_now)

    # Committed state and waits (no Worker needed)

    async def read_attribute(self, session_id: str, attribute: Attribute[T]) -> T | None:
        """The committed value of ``attribute``, ``None`` when unset."""
        return await self._server.read_attribute(session_id, attribute, timeout=self.timeout)

    async def state(self, session_id: str) -> AgentState | None:
        """The committed ``AgentState``; ``None`` before ``StartAgentSession`` committed."""
        return await self.read_attribute(session_id, self.flow.agent_state)

    async def pending_interrupts(self, session_id: str) -> PVector[AgentInterrupt]:
        """The committed ``PendingInterrupts`` (empty before the session started)."""
        pending = await self.read_attribute(session_id, self.flow.pending_interrupts)
        return pvector() if pending is None else pending

    async def wait_for(self, session_id: str, condition: StateCondition, *,
                       timeout: float | None = None) -> AgentState:
        """Wait until the committed ``AgentState`` satisfies ``condition``, and return it."""
        return await self._wait(session_id, condition.description, lambda: self.state(session_id), condition.accept,
                              timeout)

    async def wait_for_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns ended (completed or failed) and no turn runs."""
        return await self.wait_for(session_id, turns_ended(count), timeout=timeout)

    async def wait_for_completed_turns(self, session_id: str, count: int, *,
                                       timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns completed."""
        return await self.wait_for(session_id, turns_completed(count), timeout=timeout)

    async def wait_for_status(self, session_id: str, status: AgentStatus | str, *,
                              timeout: float | None = None) -> AgentState:
        """Wait until ``AgentState.status`` is ``status``."""
        return await self.wait_for(session_id, status_is(status), timeout=timeout)

    async def wait_for_pending_interrupt(self, session_id: str, tool_name: str | None = None, *,
                                         timeout: float | None = None) -> AgentInterrupt:
        """Wait until an interrupt (of a ``tool_name`` call, when given) is pending; return the first."""
        wanted = PendingInterruptOf(tool_name=tool_name)
        return await self._wait(session_id, wanted.description, lambda: self.pending_interrupts(session_id),
                              wanted.accept, timeout)

    async def _wait(self, session_id: str, description: str, read: Callable[[], Awaitable[V]],
                    accept: Callable[[V], T | None], timeout: float | None) -> T:
        seconds = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        last_seen: object = NOTHING_READ
        last_error: Exception | None = None
        while True:
            try:
                value = await read()
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
            await asyncio.sleep(min(self.poll_interval, remaining))

    async def close(self) -> None:
        """Close the read channel and whatever ``connect`` opened (idempotent)."""
        if self._closed:
            return
        self._closed = True
        errors: list[BaseException] = []
        for close in [self._server.close, *self._owned]:
            try:
                await close()
            except BaseException as error:  # noqa: BLE001 - every step must run
                errors.append(error)
        if errors:
            raise errors[0]

    async def __aenter__(self) -> AsyncSessionClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncSessionClient(flow_type={self.flow_type!r}, server_address={self.server_address!r})"
