"""Reading a Flow's runs from an engine's database file, for tests and benchmarks: the run ids of
its current execution (one per continue-as-new rollover) and how many history events its current
run keeps.

It opens the file read-only (SQLite's WAL lets it read while an engine, in this process or a child,
writes) and never changes anything. The runs of the current execution are its row (the current, or
last, run) and the rows of the runs it continued from: rows of the same Flow ID in status
``CONTINUED_AS_NEW`` inserted after it (an ending run's row is inserted when it ends).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .repository import runs


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
    found = runs.read_run_ids(db_path, flow_id)
    if found is None:
        return None
    run_ids, events = found
    return RunHistory(run_ids=run_ids, current_run_events=events)
