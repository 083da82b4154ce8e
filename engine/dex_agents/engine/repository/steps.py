"""SQL of new ``steps`` rows and of the ``timers`` table (a Step row's updates go through
``row_cache``).

Invariants: a Step row inserted here is either handed to the row cache (``RowCache.step_inserted``)
or read back through it before anyone caches it (a reset's restored rows); every Timer row belongs to
a Step execution in ``waiting`` (a Wait's Timers are deleted when it completes or its Step is
canceled). Writes take the open transaction's connection.
"""

from __future__ import annotations

import sqlite3

from dex.dexpb import dex_pb2 as pb

from ..rows import STEP_COLUMNS, StepRow, step_from_row


def next_number(db: sqlite3.Connection, uid: int, step_type: str) -> int:
    """The next execution number of ``step_type`` in the run (from 1)."""
    return int(db.execute("SELECT COALESCE(MAX(n), 0) FROM steps WHERE uid=? AND step_type=?",
                          (uid, step_type)).fetchone()[0]) + 1


def next_seq(db: sqlite3.Connection, uid: int) -> int:
    """The run's next Step execution sequence number (creation order, from 1)."""
    return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM steps WHERE uid=?", (uid,)).fetchone()[0]) + 1


def insert_new(db: sqlite3.Connection, step: StepRow) -> None:
    """Insert a new Step execution (its first method pending)."""
    db.execute(
        "INSERT INTO steps (uid, seid, step_type, n, seq, input, options, from_seid, recovery, phase, "
        "attempt, first_attempt_ms, not_before_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (step.uid, step.seid, step.step_type, step.n, step.seq, step.input.SerializeToString(),
         step.options.SerializeToString(), step.from_seid,
         step.recovery.SerializeToString() if step.recovery is not None else None, step.phase, step.attempt,
         step.first_attempt_ms, step.not_before_ms),
    )


def insert_timeout_handler(db: sqlite3.Connection, uid: int, seid: str, step_type: str, seq: int,
                           options: pb.StepOptions, started_ms: int, waiting: pb.WaitingCondition,
                           fire_ms: int) -> None:
    """Insert the Flow-timeout handler's Step execution, waiting on its one pending Timer."""
    db.execute(
        "INSERT INTO steps (uid, seid, step_type, n, seq, input, options, from_seid, phase, attempt, "
        "first_attempt_ms, waiting) VALUES (?, ?, ?, 1, ?, x'', ?, '', 'waiting', 1, ?, ?)",
        (uid, seid, step_type, seq, options.SerializeToString(), started_ms, waiting.SerializeToString()))
    db.execute("INSERT INTO timers (uid, seid, idx, condition_id, fire_ms, status) VALUES (?, ?, 0, '', ?, ?)",
               (uid, seid, fire_ms, pb.INTERNAL_TIMER_STATUS_PENDING))


def insert_restored(db: sqlite3.Connection, uid: int, row: StepRow, phase: str,
                    recovery: pb.RecoveryErrorInfo | None, now: int, waiting: pb.WaitingCondition | None,
                    results: pb.ConditionResults | None, locals_blob: bytes) -> None:
    """Insert, for a reset's new run ``uid``, the Step execution ``row`` restored in ``phase``."""
    db.execute(
        "INSERT INTO steps (uid, seid, step_type, n, seq, input, options, from_seid, recovery, phase, attempt, "
        "first_attempt_ms, waiting, results, locals) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
        (uid, row.seid, row.step_type, row.n, row.seq, row.input.SerializeToString(),
         row.options.SerializeToString(), row.from_seid,
         recovery.SerializeToString() if recovery is not None else None, phase, now,
         waiting.SerializeToString() if waiting is not None else None,
         results.SerializeToString() if results is not None else None, locals_blob))


def all_of_run(db: sqlite3.Connection, uid: int) -> dict[str, StepRow]:
    """Every Step execution of the run, by id (read past the cache: a reset copies them)."""
    return {row.seid: row for row in (step_from_row(r) for r in db.execute(
        f"SELECT {STEP_COLUMNS} FROM steps WHERE uid=?", (uid,)))}


def waiting_seids(db: sqlite3.Connection, uid: int) -> list[str]:
    """The run's Step executions in ``waiting``, oldest first."""
    return [str(seid) for (seid,) in db.execute(
        "SELECT seid FROM steps WHERE uid=? AND phase='waiting' ORDER BY seq", (uid,)).fetchall()]


# ---- Timers
def put_timer(db: sqlite3.Connection, uid: int, seid: str, idx: int, condition_id: str, fire_ms: int,
              status: int, *, replace: bool = True) -> None:
    """Store one Timer of a Wait (``replace``: over a Timer of the same index left by an earlier Wait)."""
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    db.execute(f"{verb} INTO timers (uid, seid, idx, condition_id, fire_ms, status) VALUES (?, ?, ?, ?, ?, ?)",
               (uid, seid, idx, condition_id, fire_ms, status))


def timer_statuses(db: sqlite3.Connection, uid: int, seid: str) -> list[int]:
    """The statuses of the Step execution's Timers, by index."""
    return [int(s) for (s,) in db.execute("SELECT status FROM timers WHERE uid=? AND seid=? ORDER BY idx",
                                          (uid, seid))]


def timers(db: sqlite3.Connection, uid: int, seid: str) -> list[tuple[int, str, int, int]]:
    """The Step execution's Timers as (index, condition id, fire time in ms, status), by index."""
    return [(int(idx), str(cid), int(fire_ms), int(status)) for idx, cid, fire_ms, status in db.execute(
        "SELECT idx, condition_id, fire_ms, status FROM timers WHERE uid=? AND seid=? ORDER BY idx", (uid, seid))]


def pending_timers(db: sqlite3.Connection, uid: int, seid: str) -> list[tuple[int, int]]:
    """The Step execution's pending Timers as (index, fire time in ms)."""
    return [(int(idx), int(fire_ms)) for idx, fire_ms in db.execute(
        "SELECT idx, fire_ms FROM timers WHERE uid=? AND seid=? AND status=?",
        (uid, seid, pb.INTERNAL_TIMER_STATUS_PENDING))]


def finish_timer(db: sqlite3.Connection, uid: int, seid: str, idx: int, status: int) -> bool:
    """Move a pending Timer to ``status`` (fired or skipped); False when it was not pending."""
    cursor = db.execute("UPDATE timers SET status=? WHERE uid=? AND seid=? AND idx=? AND status=?",
                        (status, uid, seid, idx, pb.INTERNAL_TIMER_STATUS_PENDING))
    return cursor.rowcount != 0


def delete_timers(db: sqlite3.Connection, uid: int, seid: str | None = None) -> None:
    """Delete the Step execution's Timers (every Timer of the run when ``seid`` is None)."""
    if seid is None:
        db.execute("DELETE FROM timers WHERE uid=?", (uid,))
    else:
        db.execute("DELETE FROM timers WHERE uid=? AND seid=?", (uid, seid))
