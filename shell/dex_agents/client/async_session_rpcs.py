# unasync: the source of a generated synchronous twin (scripts/unasync.py)
"""``AsyncSessionRpcs``: the spec's RPCs of a session, as ``AsyncSessionClient`` invokes them (asyncio).

Invariants:
    * Every RPC runs on a Worker serving the Flow type and waits for one at most its ``timeout``
      (default ``self.timeout``); then Dex withdraws it and the call raises ``NoWorkerError``.
    * An RPC Dex refuses because the session's run is closed raises ``SessionStoppedError`` at once.
    * ``send`` queues a message at most once (``send_user_message_once`` with a message ID, retried
      with it); ``resolve_interrupt`` retries only ``RpcLockConflictError`` (the RPC did not run).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from dex import DexServiceError, FlowNotActiveOrNotFoundError, FlowNotFoundError, RPCInvokeOptions

from dex_agents.client.async_children import interrupt_holder
from dex_agents.client.async_loops import repeat, repeat_lock_conflicts
from dex_agents.client.async_session_reads import AsyncSessionReads
from dex_agents.client.errors import NoWorkerError, client_errors
from dex_agents.client.retries import checked_message_id, send_options
from dex_agents.client.server_requests import is_no_worker
from dex_agents.client.shared import MAX_MESSAGE_PAGE, check_count, check_name, check_seconds, check_text, expect
from dex_agents.client.stopped import SessionStoppedError, is_stopped_status
from dex_agents.client.values import DEFAULT_WORKER_PROBE_SECONDS
from dex_agents.pure.values.rpc import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageOnceInput,
)

__all__ = ["AsyncSessionRpcs"]


class AsyncSessionRpcs(AsyncSessionReads):
    """The spec's RPCs (``send``, ``approve``/``reject``/``resolve_interrupt``, ``snapshot``,
    ``messages``), the Worker probe, and the one way every RPC is invoked (``_rpc``)."""

    @client_errors
    async def send(self, session_id: str, text: str, *, message_id: str | None = None,
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
        answer = await self._rpc(self.flow.send_user_message_once, session_id, request, timeout=timeout,
                                 options=send_options(identity), retry=repeat)
        return expect(answer, bool, "send_user_message_once")

    @client_errors
    async def approve(self, session_id: str, interrupt_id: str, *, timeout: float | None = None) -> bool:
        """Approve a pending interrupt: ``False`` when it is not pending or past its deadline."""
        return await self.resolve_interrupt(session_id, interrupt_id, True, timeout=timeout)

    @client_errors
    async def reject(self, session_id: str, interrupt_id: str, message: str | None = None, *,
                     timeout: float | None = None) -> bool:
        """Reject a pending interrupt (``message`` is what the model is told): ``False`` when not pending."""
        return await self.resolve_interrupt(session_id, interrupt_id, False, message, timeout=timeout)

    @client_errors
    async def resolve_interrupt(self, session_id: str, interrupt_id: str, approved: bool,
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
        answer = await self._rpc(self.flow.resolve_interrupt, session_id, resolution, timeout=timeout,
                                 retry=repeat_lock_conflicts)
        if answer is False:  # not pending here: one of its sub-agents' child sessions may hold it
            holder = await interrupt_holder(self.client.search_flows, self.pending_interrupts, session_id, interrupt_id)
            if holder is not None:
                answer = await self._rpc(self.flow.resolve_interrupt, holder, resolution, timeout=timeout,
                                         retry=repeat_lock_conflicts)
        return expect(answer, bool, "resolve_interrupt")

    @client_errors
    async def snapshot(self, session_id: str, *, timeout: float | None = None) -> AgentSnapshot:
        """The session's state, messages, pending interrupts, tool calls, usage and queued message count."""
        check_name("session_id", session_id)
        check_seconds("timeout", timeout)
        return expect(await self._rpc(self.flow.get_agent_snapshot, session_id, timeout=timeout), AgentSnapshot,
                      "get_agent_snapshot")

    @client_errors
    async def messages(self, session_id: str, *, before_sequence: int | None = None,
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
        return expect(await self._rpc(self.flow.list_agent_messages, session_id, page_input, timeout=timeout),
                      AgentMessagePage, "list_agent_messages")

    @client_errors
    async def check_worker(self, session_id: str, *, seconds: int = DEFAULT_WORKER_PROBE_SECONDS) -> None:
        """Fail fast unless a Worker serving this Flow type answers for ``session_id`` within ``seconds``.

        The probe is a harmless read that Dex withdraws if no Worker took it.

        Raises:
            NoWorkerError: No Worker took the probe in time.
            SessionNotFoundError: The session does not exist.
        """
        check_name("session_id", session_id)
        check_count("seconds", seconds, minimum=1)
        if not await self._server.worker_answers(self.flow, session_id, seconds):
            raise NoWorkerError(self.flow_type, self.server_address, seconds)

    async def _rpc(self, method: Callable[..., Any], session_id: str, rpc_input: object = None, *,
                   timeout: float | None, options: RPCInvokeOptions | None = None,
                   retry: Callable[[Callable[[], Awaitable[object]], float], Awaitable[object]] | None = None
                   ) -> object:
        """Invoke an RPC that waits for a Worker at most ``timeout`` (default ``self.timeout``), tried
        again through ``retry`` (``repeat``, ``repeat_lock_conflicts``) until then; ``NoWorkerError``
        when no Worker took it."""
        seconds = self._seconds(timeout)
        deadline = time.monotonic() + seconds

        async def once() -> object:
            rpc_seconds = max(1, math.ceil(deadline - time.monotonic()))
            return await self._invoke(method, session_id, rpc_input, options or RPCInvokeOptions(), rpc_seconds)

        try:
            return await (once() if retry is None else retry(once, seconds))
        except DexServiceError as error:
            if not is_no_worker(error):
                raise
            raise NoWorkerError(self.flow_type, self.server_address, seconds) from error

    async def _invoke(self, method: Callable[..., Any], session_id: str, rpc_input: object,
                      options: RPCInvokeOptions, seconds: int) -> object:
        """Invoke an RPC once (its RPC timeout ``seconds``); one Dex refuses because the run is closed
        raises ``SessionStoppedError``."""
        try:
            return await self._server.invoke(method, session_id, rpc_input, options, seconds)
        except FlowNotActiveOrNotFoundError as error:
            await self._raise_if_stopped(session_id, error)
            raise

    async def _raise_if_stopped(self, session_id: str, error: FlowNotActiveOrNotFoundError) -> None:
        """Raise ``SessionStoppedError`` when ``session_id`` exists and its run is closed (``error`` was
        Dex's refusal); return otherwise (an unknown session keeps Dex's error)."""
        if isinstance(error, SessionStoppedError):
            return
        try:
            info = await self.describe(session_id)
        except FlowNotFoundError:
            return
        if is_stopped_status(info.status):
            raise SessionStoppedError(session_id, info.status, error) from error
