"""``ConsoleBackend``: the console's one way to the Dex server, built on ``AsyncSessionClient``.

Invariants:
    * One ``AsyncSessionClient`` per Flow type, made on first use and kept until ``close``; a
      session's Flow type is read from the server (``describe``), so every route works for every agent.
    * Unknown sessions raise ``FlowNotFoundError`` (the routes answer 404); nothing here catches.
    * ``summary`` reads committed values only (no Worker needed); ``detail`` adds the snapshot when
      a Worker answers the probe, and says ``worker: false`` otherwise.
    * A closed run's values and events no longer change (a rewind or a restart makes another run, with
      another run ID), so the list reads a closed run's summary once, by (session ID, run ID), and
      keeps up to ``CLOSED_RUNS_KEPT`` of them; an open run's is read on every answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, final

from dex import AsyncClient, Credential, FileCredential, FlowInfo, Registry, SearchFlowEntry, SearchFlowsPage

from dex_agents.client import AsyncSessionClient, NoWorkerError, SessionOverview
from dex_agents.client.connection import OwnedBlobCache, client_options
from dex_agents.client.shared import sessions_query
from dex_agents.client.values import edit_verdict
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt, AgentState, AgentUsage

__all__ = ["ConsoleBackend", "ConsoleSettings", "SessionSummary"]

_ROWS_AT_ONCE: Final = 16
"""Sessions summarized at once. More calls in flight only queue on the server (and on a local
engine make each dearer); fewer leave it idle between answers (see ``benchmarks/console.py``)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleSettings:
    """What the console serves: the Dex server, its credential (also the console's own token), the URL prefix-free."""

    server_address: str
    credential: FileCredential | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSummary:
    """One session as the list shows it (committed values; ``state`` is ``None`` before it started)."""

    entry: SearchFlowEntry
    state: AgentState | None
    pending: Sequence[AgentInterrupt]
    usage: AgentUsage | None
    last_event_at: str | None
    """The latest event's time (ISO-8601), when it was read and there is one."""


CLOSED_RUNS_KEPT: Final = 10_000
"""Closed runs whose summaries the list keeps (beyond it, the one read longest ago is dropped)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class _ClosedRun:
    """A closed run's summary values, read once (``with_last_event``: its latest event was read too)."""

    overview: SessionOverview
    last_event_at: str | None
    with_last_event: bool


@final
class ConsoleBackend:
    """Sessions of every Flow type on one Dex server (see the module docstring)."""

    def __init__(self, server_address: str, credential: Credential | None = None) -> None:
        self.server_address = server_address
        self.credential = credential
        self._cache = OwnedBlobCache()
        self._bare = AsyncClient(Registry([]), self._cache.blob_cache, client_options(server_address, credential))
        self._clients: dict[str, AsyncSessionClient] = {}
        self._lock = asyncio.Lock()
        self._reads = asyncio.Semaphore(_ROWS_AT_ONCE)
        self._closed: dict[tuple[str, str], _ClosedRun] = {}

    async def describe(self, session_id: str) -> FlowInfo:
        """The session's run (``FlowNotFoundError`` when there is none)."""
        return await self._bare.describe_flow(session_id)

    async def client_for(self, flow_type: str) -> AsyncSessionClient:
        """The session client of ``flow_type`` (made once)."""
        async with self._lock:
            client = self._clients.get(flow_type)
            if client is None:
                client = await AsyncSessionClient.connect(self.server_address, flow_type, credential=self.credential)
                self._clients[flow_type] = client
            return client

    async def client_of(self, session_id: str) -> AsyncSessionClient:
        """The session client of the session's own Flow type."""
        return await self.client_for((await self.describe(session_id)).flow_type)

    async def search(self, flow_type: str | None, limit: int, page_token: str) -> SearchFlowsPage:
        """One page of Flow runs, of ``flow_type`` or of every type, in the server's order (newest first)."""
        query = "" if flow_type is None else sessions_query(flow_type)
        return await self._bare.search_flows(query, limit, page_token)

    async def summaries(self, entries: Sequence[SearchFlowEntry], *, last_activity: bool) -> list[SessionSummary]:
        """The committed summary of each entry: its values in one ``GetAttributes``, and with
        ``last_activity`` its latest event too (a second read each); ``_ROWS_AT_ONCE`` entries at a time."""
        return list(await asyncio.gather(*(self._summary(entry, last_activity) for entry in entries)))

    async def _summary(self, entry: SearchFlowEntry, last_activity: bool) -> SessionSummary:
        key = (entry.flow_id, entry.run_id)
        kept = self._closed.get(key) if entry.closed_at is not None else None
        if kept is not None and (kept.with_last_event or not last_activity):
            overview, last = kept.overview, kept.last_event_at
        else:
            client = await self.client_for(entry.flow_type)
            async with self._reads:
                if last_activity:
                    overview, last = await asyncio.gather(client.overview(entry.flow_id),
                                                          self._last_event(client, entry.flow_id))
                else:
                    overview, last = await client.overview(entry.flow_id), None
            if entry.closed_at is not None:
                self._keep(key, _ClosedRun(overview=overview, last_event_at=last, with_last_event=last_activity))
        return SessionSummary(entry=entry, state=overview.state, pending=overview.pending_interrupts,
                              usage=overview.usage, last_event_at=last)

    def _keep(self, key: tuple[str, str], closed: _ClosedRun) -> None:
        self._closed.pop(key, None)
        self._closed[key] = closed
        while len(self._closed) > CLOSED_RUNS_KEPT:
            del self._closed[next(iter(self._closed))]

    async def _last_event(self, client: AsyncSessionClient, session_id: str) -> str | None:
        page = await client.client.list_stream_messages(session_id, client.flow.agent_events, 1)
        return page.messages[0].created_time.isoformat() if page.messages else None

    async def latest_cursor(self, client: AsyncSessionClient, session_id: str) -> str:
        """The cursor after the session's latest event (``""`` before its first)."""
        page = await client.client.list_stream_messages(session_id, client.flow.agent_events, 1)
        return page.messages[0].resume_token if page.messages else ""

    async def edit_check(self, client: AsyncSessionClient, session_id: str, interrupt_id: str, after: str,
                         seconds: float) -> tuple[bool, str | None] | None:
        """How the session took an edited approval of ``interrupt_id`` sent after the cursor ``after``:
        (True, None) once it resolved the interrupt with the edit, (False, why) once the tool's schema
        refused the edit (the interrupt is pending again), ``None`` when neither came within ``seconds``."""
        deadline = asyncio.get_running_loop().time() + seconds
        while asyncio.get_running_loop().time() < deadline:
            item = await client.next_event(session_id, after, wait=1.0)
            if item is None:
                continue
            after = item.cursor
            if (verdict := edit_verdict(item.event, interrupt_id)) is not None:
                return verdict
        return None

    async def snapshot(self, client: AsyncSessionClient, session_id: str) -> AgentSnapshot | None:
        """The session's snapshot, or ``None`` when no Worker serving it answers within a second."""
        try:
            await client.check_worker(session_id)
        except NoWorkerError:
            return None
        return await client.snapshot(session_id)

    async def events_after(self, client: AsyncSessionClient, session_id: str,
                           cursor: str) -> tuple[tuple[tuple[str, AgentEvent, str], ...], str, bool]:
        """The retained events after ``cursor``: ((cursor, event, created_at), ...), the last cursor, missed."""
        page = await client.events(session_id, cursor)
        events = tuple((item.cursor, item.event, item.created_at.isoformat()) for item in page.events)
        return events, page.cursor, page.missed_events

    async def close(self) -> None:
        """Close every client, the bare Client and the BlobCache."""
        clients, self._clients = list(self._clients.values()), {}
        try:
            for client in clients:
                await client.close()
            await self._bare.close()
        finally:
            self._cache.close()
