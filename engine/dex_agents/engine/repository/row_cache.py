"""In-memory copies of the hot ``flows`` and ``steps`` rows, read through to SQLite on a miss.

A transition reads its run's row and its Step execution's row many times (about 35 Flow reads and
25 Step reads in one agent turn); the cache answers the repeats without a query or a parse.

Invariant: a cached row equals what ``SELECT`` returns on the engine's connection at that moment.
So every ``UPDATE`` of the two tables goes through this class (a test checks that no other module
writes them): a Flow update forgets the run's row; a Step update keeps the changed row (the SQL and
the cached row are built from the same field values); a new run forgets its Flow ID's latest-run
entry (:meth:`RowCache.run_inserted`); and a rolled-back transaction forgets everything
(:meth:`RowCache.clear`, called by the store). Callers treat a row's protobuf fields as read-only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar, cast

from google.protobuf.message import Message

from dex.dexpb import dex_pb2 as pb

from ..step_phase import ACTIVE_PHASES, MOVES, Phase, check_move
from ..rows import FLOW_COLUMNS, STEP_COLUMNS, FlowRow, StepRow, flow_from_row, kv_blob, step_from_row

K = TypeVar("K")
V = TypeVar("V")

StepValue = str | int | bool | Message | list[pb.KV] | None
"""A value of a StepRow field (a protobuf is stored serialized, ``locals`` as a KV list)."""

LATEST_RUN = f"SELECT MAX(uid) FROM flows WHERE flow_id=? AND status!={pb.FLOW_STATUS_CONTINUED_AS_NEW}"
"""A Flow ID's latest run: its newest row, not counting the rows of runs that continued as new
(they are inserted when their run ends, after the row that goes on as the current run)."""
_FLOW_UPDATABLE = frozenset({"run_id", "status", "close_ms", "config", "error_type", "error_message", "results",
                             "closing"})
"""The ``flows`` columns a run's life changes (the others are fixed when the row is inserted)."""
DEFAULT_LIMIT = 4_096
"""Rows of each kind kept at most (the oldest cached entry is dropped first)."""


def _column_value(value: StepValue) -> object:
    """The ``steps`` column value of a StepRow field value."""
    if isinstance(value, Message):
        return value.SerializeToString()
    if isinstance(value, list):
        return kv_blob(value)
    if isinstance(value, bool):
        return int(value)
    return value


def _bounded_put(entries: dict[K, V], key: K, value: V, limit: int) -> None:
    entries[key] = value
    if len(entries) > limit:
        del entries[next(iter(entries))]


class RowCache:
    """The engine's view of ``flows`` and ``steps`` rows (used under the engine lock)."""

    def __init__(self, db: Callable[[], sqlite3.Connection], limit: int = DEFAULT_LIMIT) -> None:
        """``db`` returns the engine's connection (the one every transaction runs on)."""
        self._db = db
        self._limit = limit
        self._flows: dict[int, FlowRow] = {}
        self._latest: dict[str, int] = {}
        """Flow ID -> uid of its latest run."""
        self._steps: dict[tuple[int, str], StepRow] = {}

    # ---- reads
    def flow(self, uid: int) -> FlowRow | None:
        """The run with internal id ``uid``."""
        cached = self._flows.get(uid)
        if cached is not None:
            return cached
        row = self._db().execute(f"SELECT {FLOW_COLUMNS} FROM flows WHERE uid=?", (uid,)).fetchone()
        if row is None:
            return None
        flow = flow_from_row(row)
        _bounded_put(self._flows, uid, flow, self._limit)
        return flow

    def latest_flow(self, flow_id: str) -> FlowRow | None:
        """The latest run of ``flow_id``."""
        uid = self._latest.get(flow_id)
        if uid is None:
            (latest,) = self._db().execute(LATEST_RUN, (flow_id,)).fetchone()
            if latest is None:
                return None
            uid = int(latest)
            _bounded_put(self._latest, flow_id, uid, self._limit)
        return self.flow(uid)

    def step(self, uid: int, seid: str) -> StepRow | None:
        """One Step execution."""
        cached = self._steps.get((uid, seid))
        if cached is not None:
            return cached
        row = self._db().execute(f"SELECT {STEP_COLUMNS} FROM steps WHERE uid=? AND seid=?", (uid, seid)).fetchone()
        if row is None:
            return None
        step = step_from_row(row)
        _bounded_put(self._steps, (uid, seid), step, self._limit)
        return step

    # ---- writes (the only UPDATEs of the two tables)
    def update_flow(self, db: sqlite3.Connection, uid: int, **columns: object) -> None:
        """Set ``columns`` (``flows`` column names and their stored values) of the run ``uid``."""
        unknown = set(columns) - _FLOW_UPDATABLE
        if unknown:
            raise ValueError(f"not an updatable flows column: {sorted(unknown)}")
        assignments = ", ".join(f"{name}=?" for name in columns)
        db.execute(f"UPDATE flows SET {assignments} WHERE uid=?", (*columns.values(), uid))
        self._flows.pop(uid, None)

    def update_step(self, db: sqlite3.Connection, uid: int, seid: str, **changes: StepValue) -> None:
        """Write ``changes`` (StepRow field names and values) to one Step execution's row; a cached
        copy of the row gets the same changes."""
        if "phase" in changes:
            current = self.step(uid, seid)
            if current is not None:
                check_move(seid, current.phase, cast(Phase, changes["phase"]))
        columns = ", ".join(f"{name}=?" for name in changes)
        db.execute(f"UPDATE steps SET {columns} WHERE uid=? AND seid=?",
                   (*(_column_value(value) for value in changes.values()), uid, seid))
        cached = self._steps.get((uid, seid))
        if cached is not None:
            self._steps[(uid, seid)] = replace(cached, **cast(dict[str, Any], changes))

    def cancel_active_steps(self, db: sqlite3.Connection, uid: int) -> None:
        """Mark every active Step execution of the run ``canceled`` (every active phase may move there)."""
        assert all("canceled" in MOVES[phase] for phase in ACTIVE_PHASES)
        changing = db.execute("SELECT seid FROM steps WHERE uid=? AND phase IN (?, ?, ?)", (uid, *ACTIVE_PHASES)).fetchall()
        db.execute("UPDATE steps SET phase='canceled' WHERE uid=? AND phase IN (?, ?, ?)", (uid, *ACTIVE_PHASES))
        for (seid,) in changing:
            cached = self._steps.get((uid, str(seid)))
            if cached is not None:
                self._steps[(uid, str(seid))] = replace(cached, phase="canceled")

    def step_inserted(self, step: StepRow) -> None:
        """A new Step execution was inserted as ``step``."""
        _bounded_put(self._steps, (step.uid, step.seid), step, self._limit)

    def run_inserted(self, flow_id: str) -> None:
        """A new run of ``flow_id`` was inserted (it becomes the latest)."""
        self._latest.pop(flow_id, None)

    def clear(self) -> None:
        """Forget every row (a transaction rolled back)."""
        self._flows.clear()
        self._latest.clear()
        self._steps.clear()

    def differences(self) -> list[str]:
        """The cached rows that differ from the database (always none; for tests and diagnostics)."""
        db = self._db()
        found: list[str] = []
        for uid, flow in list(self._flows.items()):
            row = db.execute(f"SELECT {FLOW_COLUMNS} FROM flows WHERE uid=?", (uid,)).fetchone()
            if row is None or flow_from_row(row) != flow:
                found.append(f"flow {uid}")
        for flow_id, uid in list(self._latest.items()):
            row = db.execute(LATEST_RUN, (flow_id,)).fetchone()
            if row is None or row[0] != uid:
                found.append(f"latest run of {flow_id}")
        for (uid, seid), step in list(self._steps.items()):
            row = db.execute(f"SELECT {STEP_COLUMNS} FROM steps WHERE uid=? AND seid=?", (uid, seid)).fetchone()
            if row is None or step_from_row(row) != step:
                found.append(f"step {uid}/{seid}")
        return found
