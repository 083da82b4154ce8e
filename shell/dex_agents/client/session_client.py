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
    * The reads, waits and ``close`` are ``SessionReads``' (``session_reads.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, final

from dex import (
    Client,
    Credential,
    DexServiceError,
    FlowNotActiveOrNotFoundError,
    FlowNotFoundError,
    RPCInvokeOptions,
    SearchFlowEntry,
    StartFlowOptions,
    StopFlowOptions,
    TimeTravelOptions,
    TimeTravelStepMethod,
    TimeTravelType,
)

from dex_agents.client.children import children, descendants, interrupt_holder
from dex_agents.client.loops import repeat, repeat_lock_conflicts
from dex_agents.client.session_reads import SessionReads
from dex_agents.client.connection import OwnedBlobCache, client_options, definition_of
from dex_agents.client.retries import (
    checked_message_id,
    outcome_options,
    is_repeatable_start,
    retried_start_options,
    send_options,
    start_request_id,
)
from dex_agents.client.errors import NoWorkerError, RewindNotRecordedError, SessionExistsError, client_errors
from dex_agents.client.server_requests import is_no_worker
from dex_agents.client.shared import (
    MAX_MESSAGE_PAGE,
    check_count,
    check_name,
    check_positive,
    check_seconds,
    check_reason,
    check_text,
    expect,
    sessions_query,
)
from dex_agents.client.stopped import SessionStoppedError, is_stopped_status
from dex_agents.client.time_travel import fork_seed_of, read_run, removal_after, rewind_point
from dex_agents.client.values import DEFAULT_WORKER_PROBE_SECONDS
from dex_agents.pure.values.rpc import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    CancelToolCallInput,
    CancelTurnInput,
    ExtendInterruptDeadlineInput,
    ResolveInterruptInput,
    ResolveToolOutcomeInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.machine.reducers.outcomes import SETTLED_STATUSES
from dex_agents.pure.machine.events import session_rewound_event
from dex_agents.pure.values.session import AgentSessionFork, AgentSessionStartInput
from dex_agents.pure.values.time_travel import RecordSessionRewindInput, SessionRewind
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import large_message_channels
from dex_agents.shell.worker import session_registry

__all__ = ["SessionClient"]

EVENT_SOURCE = "dex_agents.client"
"""The source the client writes its own events with (``dex_agents.session_rewound``)."""


@final
class SessionClient(SessionReads):
    """The sessions of one agent Flow type on a Dex server (see the module docstring); the reads and
    waits, and the constructor ``SessionClient(client, flow)``, are ``SessionReads``'."""

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

    # Time travel (rewind needs a Worker for its audit; fork only the server)

    @client_errors
    def rewind_preview(self, session_id: str, to_turn: int, reason: str | None = None) -> RecordSessionRewindInput:
        """What ``rewind(session_id, to_turn, reason)`` would remove now (the turns after ``to_turn`` and
        the tool calls that may have had an effect), changing nothing.

        Raises:
            SessionRewindError: ``to_turn`` has not ended, nothing came after it, or it ended in an
                earlier run (before a continue-as-new).
        """
        check_name("session_id", session_id)
        check_count("to_turn", to_turn, minimum=0)
        check_text("reason", reason, optional=True)
        info = self.describe(session_id)
        run = read_run(self._server, session_id, "", timeout=self.timeout)
        return rewind_point(run, info.run_id, to_turn, reason).removal

    @client_errors
    def rewind(self, session_id: str, to_turn: int, reason: str | None = None, *,
                     timeout: float | None = None) -> SessionRewind:
        """Take the session back to its state right after turn ``to_turn`` ended: messages, usage,
        queued messages, pending approvals (none) and tool calls as they were then. A running turn
        after it is stopped where it is (its Steps canceled; a tool already running may still finish
        its side effect).

        Dex's time travel (``ResetFlow``) restarts the session's run at the ``wait_for`` of the
        ``AwaitUserMessage`` that turn ``to_turn`` scheduled, without reapplying the writes made after
        it (``skip_writes_reapply``), so the state is exactly turn ``to_turn``'s; the replaced run keeps
        the removed turns in its history (``export`` shows them). The session then records the rewind
        (``record_session_rewind``: ``SessionRewinds/<previous run>``) and this client writes the event
        ``dex_agents.session_rewound``. Side effects are not undone: the answer's ``tool_calls`` name
        every tool call of the removed turns that may have had one.

        Returns:
            The audit the session recorded.

        Raises:
            SessionRewindError: ``to_turn`` has not ended, nothing came after it, or it ended in an
                earlier run (before a continue-as-new; ``fork`` reaches it). Nothing changed.
            NoWorkerError: No Worker serving the Flow type answered; nothing changed.
            SessionStoppedError: The session is stopped; nothing changed.
            RewindNotRecordedError: The session was rewound, but recording the rewind failed (the
                cause is chained): its audit and event are missing.
        """
        check_name("session_id", session_id)
        check_count("to_turn", to_turn, minimum=0)
        check_text("reason", reason, optional=True)
        check_seconds("timeout", timeout)
        info = self.describe(session_id)
        if is_stopped_status(info.status):  # a time travel would start it again
            raise SessionStoppedError(session_id, info.status, operation="rewind")
        self.check_worker(session_id)
        point = rewind_point(read_run(self._server, session_id, "", timeout=self.timeout), info.run_id,
                             to_turn, reason)
        run_id = self.client.time_travel(session_id, TimeTravelOptions(
            type=TimeTravelType.STEP_EXECUTION_ID, step_execution_id=point.end.step_execution_id,
            step_method=TimeTravelStepMethod.WAIT_FOR, skip_writes_reapply=True, reason=reason))
        try:
            replaced = read_run(self._server, session_id, info.run_id, timeout=self.timeout)
            removal = removal_after(replaced, info.run_id, point.end, reason)
            audit = expect(self._rpc(self.flow.record_session_rewind, session_id, removal, timeout=timeout,
                                           retry=repeat), SessionRewind, "record_session_rewind")
        except Exception as error:
            raise RewindNotRecordedError(session_id, to_turn, run_id, info.run_id, error) from error
        self.client.write_stream(session_id, self.flow.agent_events, EVENT_SOURCE,
                                       session_rewound_event(audit, run_id))
        return audit

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

    # RPCs (a Worker serving the Flow type runs them)

    @client_errors
    def send(self, session_id: str, text: str, *, message_id: str | None = None,
                   timeout: float | None = None) -> bool:
        """Queue a user message once: ``False`` for blank text; sent during a turn, it starts the next turn.

        The message carries ``message_id`` (``None``: one made up for this call). A transient failure
        (a lost connection, a restarted engine) is retried with it until ``timeout``, and a message ID
        the session already queued answers ``True`` without queueing it again, so sending one
        message twice, here or after a lost answer, queues it once.

        Raises:
            ValueError: ``message_id`` is blank, longer than 200 characters or holds ``/``.
            NoWorkerError: No Worker took the message within ``timeout`` (default ``self.timeout``);
                Dex withdrew it, so it is not queued.
            SessionRefusedError: The session refused the message (the ID was sent with another
                text, the text holds a lone surrogate).
        """
        check_name("session_id", session_id)
        check_text("text", text)
        check_seconds("timeout", timeout)
        identity = checked_message_id(message_id)
        request = SendUserMessageOnceInput(message_id=identity, text=text)
        answer = self._rpc(self.flow.send_user_message_once, session_id, request, timeout=timeout,
                                 options=send_options(identity), retry=repeat)
        return expect(answer, bool, "send_user_message_once")

    @client_errors
    def approve(self, session_id: str, interrupt_id: str, *, timeout: float | None = None) -> bool:
        """Approve a pending interrupt: ``False`` when it is not pending or past its deadline."""
        return self.resolve_interrupt(session_id, interrupt_id, True, timeout=timeout)

    @client_errors
    def reject(self, session_id: str, interrupt_id: str, message: str | None = None, *,
                     timeout: float | None = None) -> bool:
        """Reject a pending interrupt (``message`` is what the model is told): ``False`` when not pending."""
        return self.resolve_interrupt(session_id, interrupt_id, False, message, timeout=timeout)

    @client_errors
    def resolve_interrupt(self, session_id: str, interrupt_id: str, approved: bool,
                                rejection_message: str | None = None, *, edited_arguments: str | None = None,
                                arguments_sha256: str | None = None, approver: str | None = None,
                                reason: str | None = None, timeout: float | None = None) -> bool:
        """Approve or reject a pending interrupt: ``False`` when it is not pending or past its deadline.
        An interrupt a sub-agent's child session of ``session_id`` holds (``pending_approvals``) is
        resolved there, through the parent.

        ``edited_arguments`` (a JSON object's text, with an approval) runs in place of the model's once
        the tool's schema accepts it (else ``dex_agents.approval_refused`` and the interrupt stays
        pending); ``arguments_sha256`` (the pending interrupt's) refuses the approval when the arguments
        are no longer the ones the approver saw; ``approver`` and ``reason`` are kept in the record's audit.
        A refused input raises ``SessionRefusedError`` (a ``WorkerInvocationError``) naming why.

        Retries ``RpcLockConflictError`` (``AwaitToolApproval`` may hold the lock) until ``timeout``
        (default ``self.timeout``), then raises ``SessionBusyError``.
        """
        check_name("session_id", session_id)
        check_name("interrupt_id", interrupt_id)
        if not isinstance(approved, bool):
            raise TypeError(f"approved must be a bool, got {type(approved).__name__}")
        for name, text in (("rejection_message", rejection_message), ("edited_arguments", edited_arguments),
                           ("arguments_sha256", arguments_sha256), ("approver", approver), ("reason", reason)):
            check_text(name, text, optional=True)
        check_seconds("timeout", timeout)
        resolution = ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved,
                                           rejection_message=rejection_message, edited_arguments=edited_arguments,
                                           arguments_sha256=arguments_sha256, approver=approver, reason=reason)
        answer = self._rpc(self.flow.resolve_interrupt, session_id, resolution, timeout=timeout,
                                 retry=repeat_lock_conflicts)
        if answer is False:  # not pending here: one of its sub-agents' child sessions may hold it
            holder = interrupt_holder(self.client.search_flows, self.pending_interrupts, session_id, interrupt_id)
            if holder is not None:
                answer = self._rpc(self.flow.resolve_interrupt, holder, resolution, timeout=timeout,
                                         retry=repeat_lock_conflicts)
        return expect(answer, bool, "resolve_interrupt")

    @client_errors
    def extend_interrupt_deadline(self, session_id: str, interrupt_id: str, deadline_ms: int, *,
                                        timeout: float | None = None) -> bool:
        """Move a pending interrupt's deadline to ``deadline_ms`` milliseconds from now (the RPC
        ``extend_interrupt_deadline``): ``False`` when it is not pending, never expires, has passed its
        deadline, or the new one is not later."""
        check_name("session_id", session_id)
        check_name("interrupt_id", interrupt_id)
        check_count("deadline_ms", deadline_ms, minimum=1)
        check_seconds("timeout", timeout)
        extension = ExtendInterruptDeadlineInput(interrupt_id=interrupt_id, deadline_ms=deadline_ms)
        answer = self._rpc(self.flow.extend_interrupt_deadline, session_id, extension, timeout=timeout,
                                 retry=repeat_lock_conflicts)
        return expect(answer, bool, "extend_interrupt_deadline")

    @client_errors
    def cancel_turn(self, session_id: str, turn_id: str, reason: str, *, timeout: float | None = None) -> bool:
        """Cancel the running turn ``turn_id`` (the RPC ``cancel_turn``; the snapshot's
        ``state.current_turn_id``): Dex cancels its model call and tool Steps, the turn ends ``canceled``
        and the next model call reads that the user cancelled it and why. ``False`` when ``turn_id`` is
        not the running turn (it ended already) or is being canceled already.

        The running turns of its sub-agents' child sessions (a call of the turn waits on each) are then
        cancelled with the same reason: each child ends ``canceled`` and its write calls stop as a
        cancelled turn's do (Dex never cancels a SubFlow with its parent's Step)."""
        check_name("session_id", session_id)
        check_name("turn_id", turn_id)
        check_reason(reason)
        check_seconds("timeout", timeout)
        answer = self._rpc(self.flow.cancel_turn, session_id, CancelTurnInput(turn_id=turn_id, reason=reason),
                                 timeout=timeout, retry=repeat_lock_conflicts)
        if answer is True:
            self._cancel_children(session_id, None, reason, timeout)
        return expect(answer, bool, "cancel_turn")

    def _cancel_children(self, session_id: str, tool_call_id: str | None, reason: str,
                               timeout: float | None) -> None:
        """Cancel the running turns of ``session_id``'s child sessions (those of the call
        ``tool_call_id`` and their own children, or all of them for ``None``)."""
        for child in children(self.client.search_flows, session_id):
            state = None if is_stopped_status(child.status) else self.state(child.flow_id)
            if state is None or tool_call_id not in (None, state.parent_tool_call_id):
                continue
            if state.current_turn_id is not None:
                self._rpc(self.flow.cancel_turn, child.flow_id, CancelTurnInput(
                    turn_id=state.current_turn_id, reason=reason), timeout=timeout, retry=repeat_lock_conflicts)
            self._cancel_children(child.flow_id, None, reason, timeout)

    @client_errors
    def cancel_tool_call(self, session_id: str, tool_call_id: str, reason: str, *,
                               timeout: float | None = None) -> bool:
        """Cancel one open tool call of the running turn (the RPC ``cancel_tool_call``): Dex cancels its
        Step, the model reads ``cancelled by the user: <reason>`` as its result and the turn goes on (an
        approval still pending is rejected with it). ``False`` when the call is not open. A sub-agent's
        call: the running turn of its child session is then cancelled too."""
        check_name("session_id", session_id)
        check_name("tool_call_id", tool_call_id)
        check_reason(reason)
        check_seconds("timeout", timeout)
        cancel = CancelToolCallInput(tool_call_id=tool_call_id, reason=reason)
        answer = self._rpc(self.flow.cancel_tool_call, session_id, cancel, timeout=timeout,
                                 retry=repeat_lock_conflicts)
        if answer is True:
            self._cancel_children(session_id, tool_call_id, reason, timeout)
        return expect(answer, bool, "cancel_tool_call")

    @client_errors
    def resolve_tool_outcome(self, session_id: str, tool_call_id: str, status: str, output_or_message: str, *,
                                   resolver: str, reason: str | None = None, timeout: float | None = None) -> bool:
        """Settle a call whose outcome is unknown (the RPC ``resolve_tool_outcome``): ``status``
        ``"succeeded"`` with the tool's output, or ``"failed"`` with its error message; ``resolver`` (who
        settles it) and ``reason`` are kept in the call's audit (``UnknownToolOutcomes``), and the model is
        told in the session's next message. ``True`` once settled.

        Raises:
            ValueError: ``status`` is neither, or ``resolver`` or ``tool_call_id`` is blank.
            SessionRefusedError: The session refused it, saying why: no call of that ID has an unknown
                outcome, its status is another, it was already settled.
            SessionBusyError: Another operator held the call's lock through the retries until ``timeout``.
        """
        check_name("session_id", session_id)
        check_name("tool_call_id", tool_call_id)
        if status not in SETTLED_STATUSES:
            raise ValueError(f"status must be 'succeeded' or 'failed', got {status!r}")
        check_text("output_or_message", output_or_message)
        check_name("resolver", resolver)
        check_text("reason", reason, optional=True)
        check_seconds("timeout", timeout)
        request = ResolveToolOutcomeInput(tool_call_id=tool_call_id, status=status,
                                          output_or_message=output_or_message, resolver=resolver, reason=reason)
        answer = self._rpc(self.flow.resolve_tool_outcome, session_id, request, timeout=timeout,
                                 options=outcome_options(tool_call_id), retry=repeat_lock_conflicts)
        return expect(answer, bool, "resolve_tool_outcome")

    @client_errors
    def compact(self, session_id: str, *, timeout: float | None = None) -> bool:
        """Ask the session to compact its history before its next model call (the RPC ``compact_history``):
        ``True`` when it has something to summarize, older than the turns it keeps whole; ``False`` when not.

        Raises:
            SessionRefusedError: The session's Flow does not compact (``compaction=None``).
        """
        check_name("session_id", session_id)
        check_seconds("timeout", timeout)
        return expect(self._rpc(self.flow.compact_history, session_id, timeout=timeout), bool,
                      "compact_history")

    @client_errors
    def snapshot(self, session_id: str, *, timeout: float | None = None) -> AgentSnapshot:
        """The session's state, messages, pending interrupts, tool calls, usage and queued message count."""
        check_name("session_id", session_id)
        check_seconds("timeout", timeout)
        return expect(self._rpc(self.flow.get_agent_snapshot, session_id, timeout=timeout), AgentSnapshot,
                      "get_agent_snapshot")

    @client_errors
    def messages(self, session_id: str, *, before_sequence: int | None = None,
                       limit: int | None = None, timeout: float | None = None) -> AgentMessagePage:
        """One page of stored messages, oldest first: those before ``before_sequence`` (>= 0; all when
        ``None``), the newest ``limit`` (>= 1; default 50, at most ``MAX_MESSAGE_PAGE`` = 200 a page) of
        them. The page's ``next_before_sequence`` asks for the next older page."""
        check_name("session_id", session_id)
        check_count("before_sequence", before_sequence, minimum=0, optional=True)
        check_count("limit", limit, minimum=1, optional=True)
        check_seconds("timeout", timeout)
        page_input = ListAgentMessagesInput(before_sequence=before_sequence,
                                            limit=None if limit is None else min(limit, MAX_MESSAGE_PAGE))
        return expect(self._rpc(self.flow.list_agent_messages, session_id, page_input, timeout=timeout),
                      AgentMessagePage, "list_agent_messages")

    @client_errors
    def check_worker(self, session_id: str, *, seconds: int = DEFAULT_WORKER_PROBE_SECONDS) -> None:
        """Fail fast unless a Worker serving this Flow type answers for ``session_id`` within ``seconds``.

        The probe is a harmless read that Dex withdraws if no Worker took it.

        Raises:
            NoWorkerError: No Worker took the probe in time.
            SessionNotFoundError: The session does not exist.
        """
        check_name("session_id", session_id)
        check_count("seconds", seconds, minimum=1)
        if not self._server.worker_answers(self.flow, session_id, seconds):
            raise NoWorkerError(self.flow_type, self.server_address, seconds)

    def _rpc(self, method: Callable[..., Any], session_id: str, rpc_input: object = None, *,
                   timeout: float | None, options: RPCInvokeOptions | None = None,
                   retry: Callable[[Callable[[], object], float], object] | None = None
                   ) -> object:
        """Invoke an RPC that waits for a Worker at most ``timeout`` (default ``self.timeout``), tried
        again through ``retry`` (``repeat``, ``repeat_lock_conflicts``) until then; ``NoWorkerError``
        when no Worker took it."""
        seconds = self._seconds(timeout)
        deadline = time.monotonic() + seconds

        def once() -> object:
            rpc_seconds = max(1, math.ceil(deadline - time.monotonic()))
            return self._invoke(method, session_id, rpc_input, options or RPCInvokeOptions(), rpc_seconds)

        try:
            return (once() if retry is None else retry(once, seconds))
        except DexServiceError as error:
            if not is_no_worker(error):
                raise
            raise NoWorkerError(self.flow_type, self.server_address, seconds) from error

    def _invoke(self, method: Callable[..., Any], session_id: str, rpc_input: object,
                      options: RPCInvokeOptions, seconds: int) -> object:
        """Invoke an RPC once (its RPC timeout ``seconds``); one Dex refuses because the run is closed
        raises ``SessionStoppedError``."""
        try:
            return self._server.invoke(method, session_id, rpc_input, options, seconds)
        except FlowNotActiveOrNotFoundError as error:
            self._raise_if_stopped(session_id, error)
            raise

    def _raise_if_stopped(self, session_id: str, error: FlowNotActiveOrNotFoundError) -> None:
        """Raise ``SessionStoppedError`` when ``session_id`` exists and its run is closed (``error`` was
        Dex's refusal); return otherwise (an unknown session keeps Dex's error)."""
        if isinstance(error, SessionStoppedError):
            return
        try:
            info = self.describe(session_id)
        except FlowNotFoundError:
            return
        if is_stopped_status(info.status):
            raise SessionStoppedError(session_id, info.status, error) from error
