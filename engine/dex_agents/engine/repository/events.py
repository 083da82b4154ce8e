"""SQL of the ``history`` table beyond appending one event (``state.record``): reading a run's
events, copying them into a reset's new run, and moving them to a continued-as-new run's row.

Invariant: event ids count from 1 per run in commit order; a copy keeps the ids and transaction
numbers it copies, and a move keeps them too (only the owning row changes).
"""

from __future__ import annotations

import sqlite3

from dex.dexpb import dex_pb2 as pb


def events_after(db: sqlite3.Connection, uid: int, after: int, limit: int) -> list[pb.FlowHistoryEvent]:
    """Up to ``limit`` events of the run after event id ``after``, in order."""
    out: list[pb.FlowHistoryEvent] = []
    for (blob,) in db.execute(
        "SELECT event FROM history WHERE uid=? AND event_id>? ORDER BY event_id LIMIT ?", (uid, after, limit)
    ):
        event = pb.FlowHistoryEvent()
        event.ParseFromString(blob)
        out.append(event)
    return out


def stored_events(db: sqlite3.Connection, uid: int) -> list[tuple[int, int, bytes]]:
    """Every event of the run as (event id, transaction number, serialized event), in order."""
    return [(int(event_id), int(txn), bytes(blob)) for event_id, txn, blob in db.execute(
        "SELECT event_id, txn, event FROM history WHERE uid=? ORDER BY event_id", (uid,))]


def insert_copy(db: sqlite3.Connection, uid: int, event_id: int, event: pb.FlowHistoryEvent, txn: int) -> None:
    """Store a copied event under the run ``uid`` with its original id and transaction number."""
    db.execute("INSERT INTO history (uid, event_id, event, txn) VALUES (?, ?, ?, ?)",
               (uid, event_id, event.SerializeToString(), txn))


def last_event_id(db: sqlite3.Connection, uid: int) -> int:
    """The run's last event id (0 without events)."""
    (events,) = db.execute("SELECT COALESCE(MAX(event_id), 0) FROM history WHERE uid=?", (uid,)).fetchone()
    return int(events)


def move(db: sqlite3.Connection, from_uid: int, to_uid: int) -> None:
    """Give every event of run ``from_uid`` to the row ``to_uid``."""
    db.execute("UPDATE history SET uid=? WHERE uid=?", (to_uid, from_uid))
