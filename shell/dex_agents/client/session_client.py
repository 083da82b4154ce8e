# Generated from async_session_client.py by scripts/unasync.py: edit that file, then run the script.
"""``SessionClient``: an application's typed access to the sessions of one agent.

One Flow type per client; the session ID is the Flow ID. It needs no runner and talks to any Dex
server: ``SessionClient.connect(address, "SupportAgent")`` opens its own BlobCache and Client,
and ``SessionClient(client, flow)`` wraps a Client the caller owns.

Invariants:
    * Every public method follows ``errors``' rule: arguments checked first (``ValueError`` or
      ``TypeError`` naming the argument), then only ``dex_agents.client`` errors
      (``SessionNotFoundError``, ``SessionStoppedError``, ``NoWorkerError``, ...; never another
      ``dex.runtime_errors`` type: ``errors.client_errors`` translates them).
    * An RPC waits for a Worker at most its ``timeout`` (default ``self.timeout``): Dex withdraws it
      then (its RPC timeout is the call's, ``ServerCalls.invoke``), and the call raises
      ``NoWorkerError``.
    * A stopped session (its Dex run closed: ``stop``, ``is_stopped``) refuses every RPC that writes
      with ``SessionStoppedError`` at once (Dex refuses it; the client names why), never a timeout.
    * The RPCs (``send``, ``approve``/``reject``, ``snapshot``, ``messages``, ``check_worker``) run on
      a Worker serving the Flow type; ``start``, ``stop``, ``events``, ``state``,
      ``pending_interrupts``, ``export`` and every wait need only the server, so they work while no
      Worker runs.
    * ``send`` queues a message at most once: it carries a message ID (the caller's, or one made up
      for the call) and is retried with that ID after a transient failure (a lost connection, a
      restarted engine) until ``timeout``; the session answers a resend as the first send
      (``send_user_message_once``). ``start`` is retried the same way with its request ID.
    * ``resolve_interrupt`` retries only ``RpcLockConflictError`` (safe: the RPC did not run), with a
      growing pause, until ``timeout``.
    * The reads, waits and ``close`` are ``SessionReads``' (``session_reads.py``); the RPCs
      ``SessionRpcs``' (``session_rpcs.py``); an operator's actions, ``OperatorActions``'
      (``operator_actions.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import final

from dex import (
    Client,
    Credential,
    FlowNotActiveOrNotFoundError,
    SearchFlowEntry,
    StartFlowOptions,
    StopFlowOptions,
)

from dex_agents.client.children import descendants
from dex_agents.client.operator_actions import OperatorActions
from dex_agents.client.loops import repeat
from dex_agents.client.connection import OwnedBlobCache, client_options, definition_of
from dex_agents.client.retries import (
    is_repeatable_start,
    retried_start_options,
    start_request_id,
)
from dex_agents.client.errors import SessionExistsError, client_errors
from dex_agents.client.shared import (
    check_count,
    check_name,
    check_positive,
    check_text,
    sessions_query,
)
from dex_agents.client.stopped import is_stopped_status
from dex_agents.client.time_travel import fork_seed_of
from dex_agents.pure.values.session import AgentSessionFork, AgentSessionStartInput
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import large_message_channels
from dex_agents.shell.worker import session_registry

__all__ = ["SessionClient"]


@final
class SessionClient(OperatorActions):
    """The sessions of one agent Flow type on a Dex server (see the module docstring); the reads and
    waits, and the constructor ``SessionClient(client, flow)``, are ``SessionReads``', the
    spec's RPCs ``SessionRpcs``', an operator's actions ``OperatorActions``'."""

    @classmethod
    def connect(cls, server_address: str, flow: AgentSessionFlow | str, *,
                      credential: Credential | None = None, timeout: float = 30.0,
                      poll_interval: float = 0.05) -> SessionClient:
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

        def close_cache() -> None:
            cache.close()

        session_client._owned += [client.close, close_cache]
        return session_client

    # Sessions (no Worker needed)

    @client_errors
    def start(self, session_id: str, initial_message: str | None = None, *,
                    options: StartFlowOptions | None = None, request_id: str | None = None,
                    check: bool = False) -> str:
        """Start the session ``session_id``; with ``initial_message`` its first turn starts at once.

        Without ``options`` the start carries a request ID (``request_id``, or one made up here) with
        ``ignore_already_started``, and a transient failure is retried with it until ``timeout``: Dex
        returns the run that request started, so the session starts once. Pass the same
        ``request_id`` to repeat a start whose answer you lost. Either way the session's Flow config
        gets the continue-as-new threshold (``session_flow_config``) unless ``options`` set one.

        Without ``request_id`` the request ID is made from the Flow type, the session ID and the first
        message (``retries.start_request_id``), so starting a session again with the same first
        message returns its run, and with another first message raises ``SessionExistsError``
        instead of dropping the message.

        With ``check`` the start then probes, once, whether a Worker serves the Flow type
        (``check_worker``): Dex registers no Flow types it could be asked about, and a session of a
        type no Worker serves (a misspelt one, say) is started all the same and never runs.

        Returns:
            The run ID.

        Raises:
            SessionExistsError: The session already exists, started by another request (another
                first message or request ID); a ``FlowAlreadyStartedError``. With ``options``, also
                when Dex refuses to start it again.
            NoWorkerError: ``check`` and no Worker serving the Flow type answered the probe; the
                session is started (a Worker started later runs it).
        """
        check_name("session_id", session_id)
        check_text("initial_message", initial_message, optional=True)
        if request_id is not None:
            check_name("request_id", request_id)
        run_id = self._start(session_id, initial_message, options, request_id)
        if check:
            self.check_worker(session_id)
        return run_id

    def _start(self, session_id: str, initial_message: str | None, options: StartFlowOptions | None,
                     request_id: str | None, fork: AgentSessionFork | None = None) -> str:
        start_input = AgentSessionStartInput(initial_message=initial_message, fork=fork)
        fork_of = None if fork is None else (fork.source_session_id, fork.at_turn)
        start_options = retried_start_options(options, request_id or start_request_id(self.flow_type, session_id,
                                                                                       initial_message, fork_of))

        def start_flow() -> str:
            return self.client.start_flow(self.flow, session_id, start_input, start_options)

        if not is_repeatable_start(start_options):
            return start_flow()
        run_id = repeat(start_flow, self.timeout)
        if options is None and self._server.start_request_id(session_id, timeout=self.timeout) \
                != start_options.request_id:
            raise SessionExistsError(session_id)
        return run_id

    @client_errors
    def stop(self, session_id: str, reason: str | StopFlowOptions | None = None, *,
                   options: StopFlowOptions | None = None) -> None:
        """Stop the session (Dex cancels its run unless ``options`` say otherwise), recording ``reason``
        with Dex (the run's stop reason); returns once Dex accepted the request. From then on the
        session is stopped (``is_stopped``): its committed values stay readable, and a message,
        approval or other write raises ``SessionStoppedError``. Its sub-agents' child sessions still
        running are stopped too (Dex itself never stops a SubFlow with its parent).

        ``stop(session_id, StopFlowOptions(...))``, the earlier form, still works.

        Raises:
            SessionNotFoundError: No such session.
            SessionStoppedError: It is stopped already.
        """
        check_name("session_id", session_id)
        if isinstance(reason, StopFlowOptions):
            options, reason = reason, None
        check_text("reason", reason, optional=True)
        stop_options = options or StopFlowOptions()
        if reason is not None:
            stop_options = replace(stop_options, reason=reason)
        try:
            self.client.stop_flow(session_id, stop_options)
        except FlowNotActiveOrNotFoundError as error:
            self._raise_if_stopped(session_id, error)
            raise
        for child in descendants(self.client.search_flows, session_id):  # Dex never stops a SubFlow
            if not is_stopped_status(child.status):
                child_options = replace(stop_options, reason=f"its parent session {session_id} was stopped")
                try:
                    self.client.stop_flow(child.flow_id, child_options)
                except FlowNotActiveOrNotFoundError:
                    pass  # it ended meanwhile

    @client_errors
    def is_stopped(self, session_id: str) -> bool:
        """Whether the session is stopped: its Dex run is closed (``stopped.is_stopped_status`` of its
        ``describe`` status). ``SessionNotFoundError`` for an unknown session."""
        return is_stopped_status((self.describe(session_id)).status)

    @client_errors
    def list_sessions(self, *, limit: int = 100) -> list[SearchFlowEntry]:
        """Up to ``limit`` (>= 1) sessions of this Flow type, in the server's order (newest first on the
        local engine); ``[]`` when there is none, also for a Flow type nobody uses (a misspelt one)."""
        check_count("limit", limit, minimum=1)
        return list((self.client.search_flows(sessions_query(self.flow_type), limit)).flows)

    # Fork (only the server)

    @client_errors
    def fork(self, session_id: str, at_turn: int, new_session_id: str, *,
                   request_id: str | None = None) -> str:
        """Start ``new_session_id``, a session of this Flow type whose conversation is ``session_id``'s
        right after turn ``at_turn`` ended (its messages, usage and history summary; no pending
        approvals, tool calls or queued messages). The original is unchanged; both go on on their own.

        The seed is read from the original's history (so a turn before a rewind's point or a
        continue-as-new works too) and travels in the start input (``AgentSessionStartInput.fork``).
        A repeat of the same fork returns its run (as ``start``).

        Returns:
            The new session's run ID.

        Raises:
            SessionRewindError: ``at_turn`` has not ended.
            SessionExistsError: ``new_session_id`` exists already (started otherwise).
        """
        check_name("session_id", session_id)
        check_count("at_turn", at_turn, minimum=0)
        check_name("new_session_id", new_session_id)
        if request_id is not None:
            check_name("request_id", request_id)
        if new_session_id == session_id:
            raise ValueError("new_session_id must differ from session_id")
        self.describe(session_id)
        seed = fork_seed_of(self._server, session_id, at_turn, timeout=self.timeout)
        return self._start(new_session_id, None, None, request_id, seed)
