"""``AgentSessionTestClient``: typed session RPCs and Worker-free waits on committed Attributes.

RPCs (``send_user_message``, ``resolve_interrupt``, ``snapshot``, ``list_messages``) need a Worker.
The reads (``read_agent_state``, ``read_pending_interrupts``, ``read_attribute``) and the waits built
on them do not: they read committed Attribute values from the server with ``FlowService.GetAttributes``
(the SDK Client has no Attribute reads), hydrate blob references through the Client's BlobCache and
decode them with the Client's Registry codecs. So a test can wait for a state while no Worker runs.

Invariants:
    * A wait returns the first committed value that satisfies it; between reads it only sleeps the
      poll interval, and its ``TimeoutError`` names the session, what was awaited and the last value
      seen (and the last read error, chained as the cause).
    * ``resolve_interrupt`` retries only ``RpcLockConflictError`` (safe to retry), until the timeout.
    * ``close`` (idempotent) closes the read channel; the Client stays open (it is the caller's).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final, TypeVar, cast, final

from dex import (
    Attribute,
    Client,
    RpcLockConflictError,
    StartFlowOptions,
    StopFlowOptions,
    StreamMessage,
)
from dex._credential_transport import sync_channel
from dex._value_hydrator import ValueHydrator
from dex._value_mapper import ValueMapper
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.rpc_values import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.values import AgentEvent, AgentInterrupt, AgentSessionStartInput, AgentState, AgentStatus
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing.polling import poll_until

__all__ = ["AgentSessionTestClient"]

T = TypeVar("T")
V = TypeVar("V")

EVENT_PAGE_SIZE: Final = 100
"""Stream messages per ``list_stream_messages`` page in ``events``."""

_LOCK_RETRY_FIRST_SECONDS: Final = 0.01
_LOCK_RETRY_MAX_SECONDS: Final = 0.2
_NOTHING_READ: Final = object()


def _expect(value: object, expected: type[T], rpc_name: str) -> T:
    if not isinstance(value, expected):
        raise TypeError(f"{rpc_name} returned {type(value).__name__}, expected {expected.__name__}")
    return value


@final
class AgentSessionTestClient:
    """Sessions of one agent Flow, seen from a test (session ID = Flow ID).

    Attributes:
        client: The sync Client (its Registry must hold ``flow``; see ``session_registry``).
        flow: The session Flow.
        server_address: The Dex server the reads go to.
        timeout: Default seconds for waits and for ``resolve_interrupt``'s lock retries.
    """

    def __init__(self, client: Client, flow: AgentSessionFlow, *, server_address: str | None = None,
                 timeout: float = 30.0, poll_interval: float = 0.01) -> None:
        """Wrap ``client`` for ``flow``.

        Args:
            client: A Client whose Registry holds ``flow`` and advertises a pull Worker target.
            flow: The session Flow.
            server_address: The Dex server for the Attribute reads; default the Client's.
            timeout: Default seconds for waits and lock-conflict retries (> 0).
            poll_interval: Seconds between reads while waiting (> 0).

        Raises:
            ValueError: ``timeout`` or ``poll_interval`` is not positive.
        """
        if timeout <= 0 or poll_interval <= 0:
            raise ValueError(f"timeout and poll_interval must be positive, got {timeout} and {poll_interval}")
        self.client = client
        self.flow = flow
        self.server_address = server_address or client.options.server_address
        self.timeout = timeout
        self._poll_interval = poll_interval
        channel = sync_channel(self.server_address, client.options.credential)
        self._stub = dex_pb2_grpc.FlowServiceStub(channel)  # type: ignore[no-untyped-call]
        self._hydrator = ValueHydrator(self._stub, client.blob_cache)
        self._values = ValueMapper(client.registry.codec_registry)
        self._close_channel = weakref.finalize(self, channel.close)

    # RPCs (need a Worker)

    def start_session(self, session_id: str, initial_message: str | None = None, *,
                      options: StartFlowOptions | None = None) -> str:
        """Start the session ``session_id``; with ``initial_message`` its first turn starts at once.

        Returns:
            The run ID.

        Raises:
            FlowAlreadyStartedError: The session already runs (unless ``options`` allow reuse).
        """
        start_input = AgentSessionStartInput(initial_message=initial_message)
        return self.client.start_flow(self.flow, session_id, start_input, options or StartFlowOptions())

    def send_user_message(self, session_id: str, text: str) -> bool:
        """Queue a user message: ``False`` for blank text; sent during a turn, it starts the next turn."""
        result = self._invoke(self.flow.send_user_message, session_id, SendUserMessageInput(text=text))
        return _expect(result, bool, "send_user_message")

    def resolve_interrupt(self, session_id: str, interrupt_id: str, approved: bool,
                          rejection_message: str | None = None) -> bool:
        """Approve or reject a pending interrupt: ``False`` when it is not pending or past its deadline.

        Retries ``RpcLockConflictError`` (``AwaitToolApproval`` may hold the lock) with a short,
        growing pause until ``timeout``, then raises the last conflict.
        """
        resolution = ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved,
                                           rejection_message=rejection_message)
        deadline = time.monotonic() + self.timeout
        pause = _LOCK_RETRY_FIRST_SECONDS
        while True:
            try:
                result = self._invoke(self.flow.resolve_interrupt, session_id, resolution)
            except RpcLockConflictError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, _LOCK_RETRY_MAX_SECONDS)
                continue
            return _expect(result, bool, "resolve_interrupt")

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's state, messages, pending interrupts, tool calls, usage and queued message count."""
        return _expect(self._invoke(self.flow.get_agent_snapshot, session_id), AgentSnapshot, "get_agent_snapshot")

    def list_messages(self, session_id: str, before_sequence: int | None = None,
                      limit: int | None = None) -> AgentMessagePage:
        """One page of stored messages, oldest first (``limit`` clamped to 1..200, default 50)."""
        page_input = ListAgentMessagesInput(before_sequence=before_sequence, limit=limit)
        return _expect(self._invoke(self.flow.list_agent_messages, session_id, page_input), AgentMessagePage,
                       "list_agent_messages")

    def _invoke(self, method: Callable[..., Any], session_id: str, *rpc_input: object) -> object:
        invoke = cast(Callable[..., object], self.client.invoke_rpc)
        return invoke(method, session_id, *rpc_input)

    # Server calls and reads (no Worker needed)

    def events(self, session_id: str, *, page_size: int = EVENT_PAGE_SIZE) -> list[AgentEvent]:
        """Every retained ``AgentEvents`` message of the session, oldest first."""
        newest_first: list[StreamMessage[AgentEvent]] = []
        page_token = ""
        while True:
            page = self.client.list_stream_messages(session_id, self.flow.agent_events, page_size, page_token)
            newest_first.extend(page.messages)
            if not page.next_page_token:
                return [message.value for message in reversed(newest_first)]
            page_token = page.next_page_token

    def stop_session(self, session_id: str, options: StopFlowOptions | None = None) -> None:
        """Stop the session's Flow (cancel by default); returns once Dex accepted the request."""
        self.client.stop_flow(session_id, options or StopFlowOptions())

    def read_attribute(self, session_id: str, attribute: Attribute[T]) -> T | None:
        """The committed value of ``attribute`` (a definition of the Flow's schema), ``None`` when unset.

        Raises:
            grpc.RpcError: The server refused the read (for example, an unknown session).
            ValueMappingError: The stored value does not decode as the attribute's type.
        """
        request = pb.GetAttributesRequest(flow_id=session_id, keys=[attribute.name])
        response = cast(pb.GetAttributesResponse, self._stub.GetAttributes(request, timeout=self.timeout))
        for entry in response.attributes:
            if entry.key == attribute.name:
                value = self._hydrator.hydrate(session_id, entry.value)
                return cast(T | None, self._values.decode(value, self._values.codec(attribute.value_type)))
        return None

    def read_agent_state(self, session_id: str) -> AgentState | None:
        """The committed ``AgentState``; ``None`` before ``StartAgentSession`` committed."""
        return self.read_attribute(session_id, self.flow.agent_state)

    def read_pending_interrupts(self, session_id: str) -> PVector[AgentInterrupt]:
        """The committed ``PendingInterrupts`` (empty before the session started)."""
        pending = self.read_attribute(session_id, self.flow.pending_interrupts)
        return pvector() if pending is None else pending

    # Waits on committed values (no Worker needed to observe them)

    def wait_for_state(self, session_id: str, predicate: Callable[[AgentState], bool], *, description: str,
                       timeout: float | None = None) -> AgentState:
        """Wait until the committed ``AgentState`` satisfies ``predicate``, and return it.

        Raises:
            TimeoutError: Not within ``timeout`` (default ``self.timeout``); names ``description``.
        """
        def accept(state: AgentState | None) -> AgentState | None:
            return state if state is not None and predicate(state) else None

        return self._wait(session_id, description, lambda: self.read_agent_state(session_id), accept, timeout)

    def wait_for_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns ended (completed or failed) and no turn runs."""
        return self.wait_for_state(
            session_id,
            lambda state: state.completed_turn_count + state.failed_turn_count >= count
            and state.current_turn_id is None,
            description=f"{count} ended turn(s) and no turn running", timeout=timeout)

    def wait_for_completed_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns completed (a failed turn does not count)."""
        return self.wait_for_state(session_id, lambda state: state.completed_turn_count >= count,
                                   description=f"{count} completed turn(s)", timeout=timeout)

    def wait_for_status(self, session_id: str, status: AgentStatus | str, *,
                        timeout: float | None = None) -> AgentState:
        """Wait until ``AgentState.status`` is ``status``.

        Raises:
            ValueError: ``status`` is not an ``AgentStatus`` value.
        """
        wanted = AgentStatus(status)
        return self.wait_for_state(session_id, lambda state: state.status is wanted,
                                   description=f"status {wanted.value!r}", timeout=timeout)

    def wait_for_pending_interrupt(self, session_id: str, tool_name: str, *,
                                   timeout: float | None = None) -> AgentInterrupt:
        """Wait until an interrupt of a ``tool_name`` call is pending, and return the first such."""
        def accept(pending: PVector[AgentInterrupt]) -> AgentInterrupt | None:
            return next((interrupt for interrupt in pending if interrupt.tool_name == tool_name), None)

        return self._wait(session_id, f"a pending interrupt of tool {tool_name!r}",
                          lambda: self.read_pending_interrupts(session_id), accept, timeout)

    def _wait(self, session_id: str, description: str, read: Callable[[], V], accept: Callable[[V], T | None],
              timeout: float | None) -> T:
        seconds = self.timeout if timeout is None else timeout
        last_seen: list[object] = [_NOTHING_READ]

        def probe() -> T | None:
            value = read()
            last_seen[0] = value
            return accept(value)

        try:
            return poll_until(probe, timeout=seconds, interval=self._poll_interval,
                              description=f"session {session_id!r}: {description}")
        except TimeoutError as error:
            seen = "nothing was read" if last_seen[0] is _NOTHING_READ else repr(last_seen[0])
            cause = error.__cause__
            read_error = "" if cause is None else f"; the last read raised {cause!r}"
            raise TimeoutError(f"session {session_id!r}: timed out after {seconds:g} s waiting for {description}; "
                               f"last value seen: {seen}{read_error}") from cause

    def close(self) -> None:
        """Close the read channel (idempotent); the Client is left open."""
        self._close_channel()

    def __enter__(self) -> AgentSessionTestClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"AgentSessionTestClient(flow_type={self.flow.get_flow_type()!r}, "
                f"server_address={self.server_address!r})")
