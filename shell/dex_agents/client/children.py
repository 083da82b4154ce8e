# Generated from async_children.py by scripts/unasync.py: edit that file, then run the script.
"""A session's sub-agent children: the child sessions its sub-agent calls started, as Dex SubFlows.

Dex records each SubFlow's parent (``DexParentFlowID``), so the children of a session are one search
and need no Worker. Every session Flow has the same persistence names and RPCs, so a client of the
parent's Flow type reads and resolves the children's interrupts too (the RPC goes to the Workers of
the child's own Flow type).

Invariants: ``descendants`` walks children breadth-first, each once; ``pending_approvals`` lists the
session's own pending interrupts first, then each descendant's, each with the session that holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from dex import SearchFlowEntry, SearchFlowsPage

from dex_agents.client.values import PendingApproval
from dex_agents.pure.values.session import AgentInterrupt

Search: TypeAlias = Callable[[str, int, str], SearchFlowsPage]
"""``Client.search_flows(query, page_size, next_page_token)``."""
Pending: TypeAlias = Sequence[AgentInterrupt]
ReadPending: TypeAlias = Callable[[str], Pending]
"""A session's committed ``PendingInterrupts`` (``SessionClient.pending_interrupts``)."""

_PAGE = 100


def children_query(session_id: str) -> str:
    """The visibility query of the SubFlows ``session_id`` started."""
    if "'" in session_id:
        raise ValueError(f"cannot query the children of a session ID containing a quote: {session_id!r}")
    return f"DexParentFlowID = '{session_id}'"


def children(search: Search, session_id: str) -> list[SearchFlowEntry]:
    """The child sessions ``session_id`` started (every page), in the server's order."""
    found: list[SearchFlowEntry] = []
    token = ""
    while True:
        page = search(children_query(session_id), _PAGE, token)
        found.extend(page.flows)
        token = page.next_page_token
        if not token:
            return found


def descendants(search: Search, session_id: str) -> list[SearchFlowEntry]:
    """Every session below ``session_id`` (children, their children, ...), breadth-first."""
    found: list[SearchFlowEntry] = []
    seen = {session_id}
    frontier = [session_id]
    while frontier:
        below: list[SearchFlowEntry] = []
        for parent in frontier:
            below.extend(entry for entry in children(search, parent) if entry.flow_id not in seen)
        seen.update(entry.flow_id for entry in below)
        found.extend(below)
        frontier = [entry.flow_id for entry in below]
    return found


def pending_approvals(search: Search, read_pending: ReadPending, session_id: str) -> list[PendingApproval]:
    """``session_id``'s pending interrupts, then those of its descendants, each with its session."""
    sessions = [session_id, *(entry.flow_id for entry in descendants(search, session_id))]
    return [PendingApproval(session_id=owner, interrupt=interrupt) for owner in sessions
            for interrupt in read_pending(owner)]


def interrupt_holder(search: Search, read_pending: ReadPending, session_id: str, interrupt_id: str) -> str | None:
    """The descendant of ``session_id`` whose pending interrupts hold ``interrupt_id``, if any."""
    for entry in descendants(search, session_id):
        if any(interrupt.interrupt_id == interrupt_id for interrupt in read_pending(entry.flow_id)):
            return entry.flow_id
    return None


__all__ = ["children", "children_query", "descendants", "interrupt_holder", "pending_approvals"]
