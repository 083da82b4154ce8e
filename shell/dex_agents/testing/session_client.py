"""``AgentSessionTestClient``: the product ``SessionClient`` under the names tests have used.

Every call goes to ``dex_agents.client.SessionClient`` (``sessions``), which a test can also use
directly: RPCs (``send_user_message``, ``resolve_interrupt``, ``snapshot``, ``list_messages``) need a
Worker; the reads (``read_agent_state``, ``read_pending_interrupts``, ``read_attribute``) and the
waits built on them do not, so a test can wait for a state while no Worker runs.

Invariants: those of ``SessionClient`` (a wait returns the first committed value that satisfies it,
and its ``TimeoutError`` names the session, what was awaited and the last value seen;
``resolve_interrupt`` retries only lock conflicts); ``close`` (idempotent) closes the read channel
and leaves the Client open (it is the caller's).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TypeVar, final

from dex import Attribute, Client, StartFlowOptions, StopFlowOptions
from pyrsistent.typing import PVector

from dex_agents.client.session_client import SessionClient
from dex_agents.client.shared import EVENT_PAGE_SIZE
from dex_agents.client.values import StateCondition
from dex_agents.pure.values.rpc import AgentMessagePage, AgentSnapshot
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt, AgentState, AgentStatus
from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["AgentSessionTestClient"]

T = TypeVar("T")


@final
class AgentSessionTestClient:
    """Sessions of one agent Flow, seen from a test (session ID = Flow ID).

    Attributes:
        sessions: The product client every call goes to.
        client: The sync Client (its Registry must hold ``flow``; see ``session_registry``).
        flow: The session Flow.
        server_address: The Dex server (the Client's).
        timeout: Default seconds for waits and for ``resolve_interrupt``'s lock retries.
    """

    def __init__(self, client: Client, flow: AgentSessionFlow, *, server_address: str | None = None,
                 timeout: float = 30.0, poll_interval: float = 0.01) -> None:
        """Wrap ``client`` for ``flow``.

        Raises:
            ValueError: ``timeout`` or ``poll_interval`` is not positive, the Client's Registry does
                not hold ``flow``, or ``server_address`` is not the Client's.
        """
        if server_address is not None and server_address != client.options.server_address:
            raise ValueError(f"server_address {server_address!r} is not the Client's "
                             f"({client.options.server_address!r})")
        self.sessions = SessionClient(client, flow, timeout=timeout, poll_interval=poll_interval)
        self.client = client
        self.flow = flow
        self.server_address = client.options.server_address
        self.timeout = timeout

    # RPCs (need a Worker)

    def start_session(self, session_id: str, initial_message: str | None = None, *,
                      options: StartFlowOptions | None = None) -> str:
        """Start the session ``session_id``; returns the run ID (see ``SessionClient.start``)."""
        return self.sessions.start(session_id, initial_message, options=options)

    def send_user_message(self, session_id: str, text: str) -> bool:
        """Queue a user message: ``False`` for blank text."""
        return self.sessions.send(session_id, text)

    def resolve_interrupt(self, session_id: str, interrupt_id: str, approved: bool,
                          rejection_message: str | None = None) -> bool:
        """Approve or reject a pending interrupt, retrying lock conflicts until ``timeout``."""
        return self.sessions.resolve_interrupt(session_id, interrupt_id, approved, rejection_message)

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's snapshot (``get_agent_snapshot``)."""
        return self.sessions.snapshot(session_id)

    def list_messages(self, session_id: str, before_sequence: int | None = None,
                      limit: int | None = None) -> AgentMessagePage:
        """One page of stored messages, oldest first (``limit`` >= 1, default 50, at most 200 a page)."""
        return self.sessions.messages(session_id, before_sequence=before_sequence, limit=limit)

    # Server calls and reads (no Worker needed)

    def events(self, session_id: str, *, page_size: int = EVENT_PAGE_SIZE) -> list[AgentEvent]:
        """Every retained ``AgentEvents`` message of the session, oldest first."""
        return [item.event for item in self.sessions.events(session_id, page_size=page_size).events]

    def stop_session(self, session_id: str, options: StopFlowOptions | None = None) -> None:
        """Stop the session's Flow (cancel by default)."""
        self.sessions.stop(session_id, options)

    def read_attribute(self, session_id: str, attribute: Attribute[T]) -> T | None:
        """The committed value of ``attribute``, ``None`` when unset."""
        return self.sessions.read_attribute(session_id, attribute)

    def read_agent_state(self, session_id: str) -> AgentState | None:
        """The committed ``AgentState``; ``None`` before ``StartAgentSession`` committed."""
        return self.sessions.state(session_id)

    def read_pending_interrupts(self, session_id: str) -> PVector[AgentInterrupt]:
        """The committed ``PendingInterrupts`` (empty before the session started)."""
        return self.sessions.pending_interrupts(session_id)

    # Waits on committed values (no Worker needed to observe them)

    def wait_for_state(self, session_id: str, predicate: Callable[[AgentState], bool], *, description: str,
                       timeout: float | None = None) -> AgentState:
        """Wait until the committed ``AgentState`` satisfies ``predicate``, and return it."""
        condition = StateCondition(description=description, predicate=predicate)
        return self.sessions.wait_for(session_id, condition, timeout=timeout)

    def wait_for_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns ended (completed or failed) and no turn runs."""
        return self.sessions.wait_for_turns(session_id, count, timeout=timeout)

    def wait_for_completed_turns(self, session_id: str, count: int, *, timeout: float | None = None) -> AgentState:
        """Wait until ``count`` turns completed (a failed turn does not count)."""
        return self.sessions.wait_for_completed_turns(session_id, count, timeout=timeout)

    def wait_for_status(self, session_id: str, status: AgentStatus | str, *,
                        timeout: float | None = None) -> AgentState:
        """Wait until ``AgentState.status`` is ``status`` (``ValueError`` for an unknown status)."""
        return self.sessions.wait_for_status(session_id, status, timeout=timeout)

    def wait_for_pending_interrupt(self, session_id: str, tool_name: str, *,
                                   timeout: float | None = None) -> AgentInterrupt:
        """Wait until an interrupt of a ``tool_name`` call is pending, and return the first such."""
        return self.sessions.wait_for_pending_interrupt(session_id, tool_name, timeout=timeout)

    def close(self) -> None:
        """Close the read channel (idempotent); the Client is left open."""
        self.sessions.close()

    def __enter__(self) -> AgentSessionTestClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"AgentSessionTestClient(flow_type={self.flow.get_flow_type()!r}, "
                f"server_address={self.server_address!r})")
