"""A consistent copy of the engine's database while the engine runs: SQLite's online backup API.

Invariants:
    * The copy is one snapshot: the source is read inside one read transaction and copied in one
      backup step, so it holds every transaction committed before the copy began and nothing of one
      committed later (WAL readers never block the engine's writer, nor it them).
    * The source is opened read-only, from another process than the engine: the engine's exclusive
      ``<db>.lock`` is neither taken nor needed.
    * The copy is written beside the target under a temporary name, checked (``PRAGMA quick_check``),
      turned into a self-contained file (rollback journal, no ``-wal``/``-shm`` beside it) and only
      then renamed onto the target: a failed backup leaves no partial file behind.
    * The copy is an ordinary engine database: ``dex-agents engine --db <copy>`` opens it (and turns
      WAL back on).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import DatabaseError


@dataclass(frozen=True, slots=True)
class BackupSummary:
    """What a backup copied: the runs and Step executions in the copy, and its size in bytes."""

    runs: int
    steps: int
    size_bytes: int


def backup_database(source: Path, target: Path) -> BackupSummary:
    """Copy the engine database at ``source`` to ``target`` (replaced if present) while it may be in use.

    Raises:
        DatabaseError: ``source`` is not an engine database that can be read, or the copy failed its
            check or cannot be written.
    """
    if not source.is_file():
        raise DatabaseError(f"database {source} does not exist")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        reader = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise DatabaseError(f"database {source} cannot be opened: {error}") from error
    try:
        copy = sqlite3.connect(str(partial), isolation_level=None)
        try:
            reader.backup(copy, pages=-1)  # one step: one read transaction, one snapshot
            if str(copy.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
                raise DatabaseError(f"the copy of {source} failed SQLite's quick_check")
            copy.execute("PRAGMA journal_mode=DELETE")
            runs = int(copy.execute("SELECT count(*) FROM flows").fetchone()[0])
            steps = int(copy.execute("SELECT count(*) FROM steps").fetchone()[0])
        finally:
            copy.close()
        os.replace(partial, target)
    except sqlite3.Error as error:
        raise DatabaseError(f"database {source} cannot be backed up to {target}: {error}") from error
    except OSError as error:
        raise DatabaseError(f"cannot write the backup {target}: {error}") from error
    finally:
        reader.close()
        for leftover in (partial, partial.with_name(partial.name + "-journal")):
            leftover.unlink(missing_ok=True)
    return BackupSummary(runs=runs, steps=steps, size_bytes=target.stat().st_size)
