"""SQL of the ``flows`` table beyond the hot rows (those are read and updated through ``row_cache``):
inserting runs, the columns the row cache does not keep, recovery's open runs, search, and the
read-only view of a database file (``run_history``).

Invariants: every function that inserts a run tells the row cache (``RowCache.run_inserted``), so
its latest-run entry never names an older run; none updates a ``flows`` row (``RowCache.update_flow``
does). Writes take the open transaction's connection; reads take the engine's connection (under the
engine lock) or a reader's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

from dex.dexpb import dex_pb2 as pb

from ..rows import FLOW_COLUMNS, FlowRow, flow_from_row
from ..step_phase import ACTIVE_PHASES
from .row_cache import LATEST_RUN, RowCache


def uid_of_run(db: sqlite3.Connection, flow_id: str, run_id: str) -> int | None:
    """The internal id of one named run of ``flow_id``."""
    row = db.execute("SELECT uid FROM flows WHERE flow_id=? AND run_id=?", (flow_id, run_id)).fetchone()
    return int(row[0]) if row else None


def active_seids(db: sqlite3.Connection, uid: int) -> list[str]:
    """The run's Step executions that have not finished, oldest first."""
    return [str(seid) for (seid,) in db.execute(
        "SELECT seid FROM steps WHERE uid=? AND phase IN (?, ?, ?) ORDER BY seq", (uid, *ACTIVE_PHASES))]


def count_active_steps(db: sqlite3.Connection, uid: int, except_type: str) -> int:
    """How many of the run's Step executions are active, not counting those of ``except_type``."""
    return int(db.execute("SELECT COUNT(*) FROM steps WHERE uid=? AND phase IN (?, ?, ?) AND step_type!=?",
                          (uid, *ACTIVE_PHASES, except_type)).fetchone()[0])


def result_columns(db: sqlite3.Connection, uid: int) -> tuple[int, int, str, bytes] | None:
    """The run's status, error type, error message and serialized results."""
    row = db.execute("SELECT status, error_type, error_message, results FROM flows WHERE uid=?", (uid,)).fetchone()
    return (int(row[0]), int(row[1]), str(row[2]), bytes(row[3])) if row is not None else None


def start_request(db: sqlite3.Connection, uid: int) -> pb.StartFlowRequest:
    """The StartFlow request the run was started with."""
    (blob,) = db.execute("SELECT start_request FROM flows WHERE uid=?", (uid,)).fetchone()
    request = pb.StartFlowRequest()
    request.ParseFromString(blob)
    return request


def parent_flow_id(db: sqlite3.Connection, uid: int) -> str:
    """The Flow ID of the run's parent (a SubFlow's), or empty."""
    (parent,) = db.execute("SELECT parent_flow_id FROM flows WHERE uid=?", (uid,)).fetchone()
    return str(parent)


def rollover_columns(db: sqlite3.Connection, uid: int) -> tuple[bytes, str, bytes | None]:
    """For a continue-as-new: the run's serialized start request, its parent Flow ID and its first
    history event (one query)."""
    start_blob, parent, first_blob = db.execute(
        "SELECT f.start_request, f.parent_flow_id, h.event FROM flows f LEFT JOIN history h "
        "ON h.uid=f.uid AND h.event_id=1 WHERE f.uid=?", (uid,)).fetchone()
    return bytes(start_blob), str(parent), first_blob


def insert_started(rows: RowCache, db: sqlite3.Connection, request: pb.StartFlowRequest, run_id: str, now: int,
                   timeout_ms: int, parent: str) -> int:
    """Insert a run StartFlow (or a SubFlow condition) starts; returns its uid."""
    cursor = db.execute(
        "INSERT INTO flows (flow_id, run_id, flow_type, status, start_ms, request_id, config, "
        "start_request, timeout_ms, parent_flow_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (request.flow_id, run_id, request.flow_type, pb.FLOW_STATUS_RUNNING, now, request.request_id,
         request.flow_start_options.flow_config_override.SerializeToString(), request.SerializeToString(),
         timeout_ms, parent))
    rows.run_inserted(request.flow_id)
    return int(cursor.lastrowid or 0)


def insert_reset(rows: RowCache, db: sqlite3.Connection, old: FlowRow, run_id: str, now: int,
                 start: pb.StartFlowRequest, timeout_ms: int, closing_: bool, results: bytes, parent: str) -> int:
    """Insert the run a ResetFlow starts in place of ``old``; returns its uid."""
    cursor = db.execute(
        "INSERT INTO flows (flow_id, run_id, flow_type, status, start_ms, request_id, config, start_request, "
        "timeout_ms, closing, results, parent_flow_id) VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?)",
        (old.flow_id, run_id, old.flow_type, pb.FLOW_STATUS_RUNNING, now, old.config.SerializeToString(),
         start.SerializeToString(), timeout_ms, int(closing_), results, parent))
    rows.run_inserted(old.flow_id)
    return int(cursor.lastrowid or 0)


def insert_continued(rows: RowCache, db: sqlite3.Connection, flow: FlowRow, start_ms: int, now: int,
                     start_blob: bytes, parent: str) -> int:
    """Insert the row of a run that ended continued-as-new (its uid is new; the run going on keeps
    ``flow``'s uid); returns the ended run's uid."""
    cursor = db.execute(
        "INSERT INTO flows (flow_id, run_id, flow_type, status, start_ms, close_ms, request_id, config, "
        "start_request, parent_flow_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (flow.flow_id, flow.run_id, flow.flow_type, pb.FLOW_STATUS_CONTINUED_AS_NEW, start_ms, now,
         flow.request_id, flow.config.SerializeToString(), start_blob, parent))
    rows.run_inserted(flow.flow_id)  # the ended run's row is not the latest (LATEST_RUN)
    return int(cursor.lastrowid or 0)


def running_uids(db: sqlite3.Connection) -> list[int]:
    """Every open run, oldest first (recovery)."""
    return [int(uid) for (uid,) in db.execute("SELECT uid FROM flows WHERE status=? ORDER BY uid",
                                              (pb.FLOW_STATUS_RUNNING,))]


def search(db: sqlite3.Connection, where: str, parameters: list[object]) -> Iterator[FlowRow]:
    """The runs matching ``where`` (a condition over ``flows`` columns with ``?`` parameters, built by
    the search parser from a fixed column table), newest first, read lazily."""
    for row in db.execute(f"SELECT {FLOW_COLUMNS} FROM flows WHERE {where} ORDER BY uid DESC", parameters):
        yield flow_from_row(row)


def read_run_ids(db_path: str | Path, flow_id: str) -> tuple[tuple[str, ...], int] | None:
    """From the database file at ``db_path``, opened read-only: the run ids of ``flow_id``'s latest
    execution, oldest first (the runs it continued from, then the current run), and how many history
    events the current run keeps; None if it has no run."""
    uri = f"{Path(db_path).resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        (uid,) = db.execute(LATEST_RUN, (flow_id,)).fetchone()
        if uid is None:
            return None
        (run_id,) = db.execute("SELECT run_id FROM flows WHERE uid=?", (uid,)).fetchone()
        earlier = [str(r) for (r,) in db.execute(
            "SELECT run_id FROM flows WHERE flow_id=? AND uid>? AND status=? ORDER BY uid",
            (flow_id, uid, pb.FLOW_STATUS_CONTINUED_AS_NEW))]
        (events,) = db.execute("SELECT COUNT(*) FROM history WHERE uid=?", (uid,)).fetchone()
    return (*earlier, str(run_id)), int(events)
