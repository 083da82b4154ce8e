"""Reading a Flow's runs from an engine's database file, for tests and benchmarks: the run ids of
its current execution (one per continue-as-new rollover) and how many history events its current
run keeps.

It opens the file read-only (SQLite's WAL lets it read while an engine, in this process or a child,
writes) and never changes anything. The runs of the current execution are its row (the current, or
last, run) and the rows of the runs it continued from: rows of the same Flow ID in status
``CONTINUED_AS_NEW`` inserted after it (an ending run's row is inserted when it ends).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from dex.dexpb import dex_pb2 as pb

from .row_cache import LATEST_RUN


@dataclass(frozen=True, slots=True)
class RunHistory:
    """A Flow execution's runs: ``run_ids`` oldest first, the current (or last) run last."""

    run_ids: tuple[str, ...]
    current_run_events: int
    """History events (rows) the engine keeps for the current run."""

    @property
    def rollovers(self) -> int:
        """How many times the execution continued as new."""
        return len(self.run_ids) - 1


def run_history(db_path: str | Path, flow_id: str) -> RunHistory | None:
    """The runs of ``flow_id``'s latest execution in the engine database at ``db_path`` (None if
    it has none)."""
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
    return RunHistory(run_ids=(*earlier, str(run_id)), current_run_events=int(events))
