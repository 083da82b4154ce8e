"""SQL of the ``streams`` table: appends, eviction of the oldest messages of a (Flow type, Stream),
and reads by resume token.

Invariant: a message's ``seq`` is its resume token and grows with every append; a message's
``size`` is its serialized value's length, so the retained bytes of a (Flow type, Stream) are the
sum of its rows' sizes.
"""

from __future__ import annotations

import sqlite3

StreamRow = tuple[int, bytes, str, int]
"""(seq, serialized value, source, created time in ms) of one retained message."""


def retained_bytes(db: sqlite3.Connection, flow_type: str, stream: str) -> int:
    """The bytes the (Flow type, Stream) retains."""
    return int(db.execute("SELECT COALESCE(SUM(size), 0) FROM streams WHERE flow_type=? AND stream=?",
                          (flow_type, stream)).fetchone()[0])


def append(db: sqlite3.Connection, flow_type: str, stream: str, flow_id: str, blob: bytes, source: str,
           created_ms: int) -> None:
    """Append one message."""
    db.execute("INSERT INTO streams (flow_type, stream, flow_id, value, size, source, created_ms) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)", (flow_type, stream, flow_id, blob, len(blob), source, created_ms))


def evict_oldest(db: sqlite3.Connection, flow_type: str, stream: str) -> int | None:
    """Delete the (Flow type, Stream)'s oldest message; its size, or None when there is none."""
    row = db.execute("SELECT seq, size FROM streams WHERE flow_type=? AND stream=? ORDER BY seq LIMIT 1",
                     (flow_type, stream)).fetchone()
    if row is None:
        return None
    db.execute("DELETE FROM streams WHERE seq=?", (row[0],))
    return int(row[1])


def first_after(db: sqlite3.Connection, flow_type: str, stream: str, flow_id: str, after: int) -> StreamRow | None:
    """The Flow's first retained message of the Stream after token ``after``."""
    row = db.execute(
        "SELECT seq, value, source, created_ms FROM streams WHERE flow_type=? AND stream=? AND flow_id=? "
        "AND seq>? ORDER BY seq LIMIT 1", (flow_type, stream, flow_id, after)).fetchone()
    return (int(row[0]), bytes(row[1]), str(row[2]), int(row[3])) if row is not None else None


def newest_before(db: sqlite3.Connection, flow_type: str, stream: str, flow_id: str, before: int,
                  limit: int) -> list[StreamRow]:
    """Up to ``limit`` of the Flow's retained messages of the Stream before token ``before``, newest first."""
    return [(int(seq), bytes(blob), str(source), int(created)) for seq, blob, source, created in db.execute(
        "SELECT seq, value, source, created_ms FROM streams WHERE flow_type=? AND stream=? AND flow_id=? "
        "AND seq<? ORDER BY seq DESC LIMIT ?", (flow_type, stream, flow_id, before, limit))]
