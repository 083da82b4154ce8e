"""SQLite persistence: the schema and the one writer connection.

Design: the database is the source of truth for every Flow run, Step execution, Attribute,
Channel message, Timer, Stream message and history event. One connection (WAL journal) is used
under the engine lock, so a commit is durable before the engine dispatches the next task or answers
the caller. In-flight worker tasks, locks and worker streams live in memory and are rebuilt from
these tables on start (see ``recovery``).

Durability (``Durability``): at the default ``power-loss`` level every commit is fsync'd
(``synchronous=FULL``); ``process-crash`` (``synchronous=NORMAL``) commits survive the engine
process's death but not an OS crash or power loss. A commit opened with ``durable=False`` (a
best-effort Stream append) is never fsync'd on its own: it survives a process crash, and it reaches
the disk with the next durable commit, since the WAL is written and synced in order.

Protobuf values are stored as serialized bytes; times are Unix milliseconds.
"""

from __future__ import annotations

import fcntl
import os
import queue
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..durability import Durability
from ..errors import DatabaseError as DatabaseError
from ..errors import DatabaseInUseError as DatabaseInUseError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS flows (
    uid INTEGER PRIMARY KEY,
    flow_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    flow_type TEXT NOT NULL,
    status INTEGER NOT NULL,
    start_ms INTEGER NOT NULL,
    close_ms INTEGER NOT NULL DEFAULT 0,
    request_id TEXT NOT NULL,
    config BLOB NOT NULL,
    start_request BLOB NOT NULL,
    error_type INTEGER NOT NULL DEFAULT 0,
    error_message TEXT NOT NULL DEFAULT '',
    results BLOB NOT NULL DEFAULT x'',
    closing INTEGER NOT NULL DEFAULT 0,
    timeout_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS flows_by_id ON flows (flow_id, uid);
CREATE INDEX IF NOT EXISTS flows_by_status ON flows (status);
CREATE INDEX IF NOT EXISTS flows_by_type ON flows (flow_type, uid);
CREATE TABLE IF NOT EXISTS steps (
    uid INTEGER NOT NULL,
    seid TEXT NOT NULL,
    step_type TEXT NOT NULL,
    n INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    input BLOB NOT NULL,
    options BLOB NOT NULL,
    from_seid TEXT NOT NULL,
    recovery BLOB,
    phase TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    first_attempt_ms INTEGER NOT NULL,
    waiting BLOB,
    results BLOB,
    locals BLOB NOT NULL DEFAULT x'',
    heartbeat BLOB,
    output_seen INTEGER NOT NULL DEFAULT 0,
    not_before_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (uid, seid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS steps_by_type ON steps (uid, step_type, n);
CREATE INDEX IF NOT EXISTS steps_by_phase ON steps (phase);
CREATE INDEX IF NOT EXISTS steps_by_seq ON steps (uid, seq);
CREATE INDEX IF NOT EXISTS steps_by_run_phase ON steps (uid, phase);
CREATE TABLE IF NOT EXISTS attributes (
    uid INTEGER NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    indexed INTEGER NOT NULL DEFAULT 0,
    is_instance INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (uid, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS attributes_singletons ON attributes (uid, is_instance);
CREATE TABLE IF NOT EXISTS channels (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uid INTEGER NOT NULL,
    name TEXT NOT NULL,
    message_id TEXT NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS channels_by_name ON channels (uid, name, seq);
CREATE TABLE IF NOT EXISTS timers (
    uid INTEGER NOT NULL,
    seid TEXT NOT NULL,
    idx INTEGER NOT NULL,
    condition_id TEXT NOT NULL,
    fire_ms INTEGER NOT NULL,
    status INTEGER NOT NULL,
    PRIMARY KEY (uid, seid, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    uid INTEGER NOT NULL,
    event_id INTEGER NOT NULL,
    event BLOB NOT NULL,
    PRIMARY KEY (uid, event_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS streams (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    flow_type TEXT NOT NULL,
    stream TEXT NOT NULL,
    flow_id TEXT NOT NULL,
    value BLOB NOT NULL,
    size INTEGER NOT NULL,
    source TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS streams_by_instance ON streams (flow_type, stream, flow_id, seq);
CREATE INDEX IF NOT EXISTS streams_by_type ON streams (flow_type, stream, seq);
CREATE TABLE IF NOT EXISTS subflows (
    parent_uid INTEGER NOT NULL,
    seid TEXT NOT NULL,
    idx INTEGER NOT NULL,
    child_flow_id TEXT NOT NULL,
    child_uid INTEGER NOT NULL,
    result BLOB,
    PRIMARY KEY (parent_uid, seid, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS subflows_by_child ON subflows (child_uid);
"""

_ADDED_COLUMNS = (
    ("steps", "last_failure", "BLOB"),
    ("history", "txn", "INTEGER NOT NULL DEFAULT 0"),
    ("flows", "parent_flow_id", "TEXT NOT NULL DEFAULT ''"),
    ("attributes", "hard_delete", "INTEGER NOT NULL DEFAULT 0"),
)
"""Columns added after the first release: a database created before them gets them on open."""


class Store:
    """The engine's SQLite database: one connection, used only under the engine lock.

    Invariants: every state change happens inside :meth:`transaction`; a failure inside rolls the
    whole change back, so bad input never leaves partial state. At most one open ``Store`` per
    database file on the machine: an exclusive lock on ``<db>.lock`` is held until :meth:`close`
    (the OS drops it when the process dies), which removes the file while still holding the lock; an
    engine that locked the removed file sees it is no longer the one at ``<db>.lock`` and locks anew. A constructed ``Store`` can write: opening proves it
    with a rolled-back write, so a read-only file fails here rather than on the first call.
    """

    def __init__(self, path: Path, durability: Durability = Durability.POWER_LOSS) -> None:
        self.durability = durability
        self._synchronous = durability.sqlite_synchronous
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_path = path.with_name(path.name + ".lock")
            self._lock_file = _lock_exclusively(self._lock_path)
        except OSError as error:
            raise DatabaseError(f"database {path} cannot be opened: {error}") from error
        try:
            self.db = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, cached_statements=256
            )
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={self._synchronous}")
            self.db.execute("PRAGMA foreign_keys=OFF")
            self.db.executescript(_SCHEMA)
            _add_columns(self.db)
            _prove_writable(self.db)
        except sqlite3.Error as error:
            _release(self._lock_path, self._lock_file)
            raise DatabaseError(f"database {path} cannot be used: {error}") from error
        except BaseException:
            _release(self._lock_path, self._lock_file)
            raise
        self._path = path
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._depth = 0
        self._rollback_listeners: list[Callable[[], None]] = []
        self._txn = 0
        self.db.create_function("engine_txn", 0, lambda: self._txn)
        self.recorded: dict[int, int] = {}
        """Run uid -> the id of the newest history event inserted for it since the engine last
        looked (:meth:`take_recorded`); filled by ``engine_event(uid, event_id)`` as history rows
        are inserted, so a run's history length is known without a query (emptied on rollback)."""
        self.db.create_function("engine_event", 2, self._note_event, deterministic=False)

    def _note_event(self, uid: int, event_id: int) -> int:
        self.recorded[uid] = event_id
        return self._txn

    def take_recorded(self) -> dict[int, int]:
        """The runs that recorded history since the last call, with their newest event id."""
        recorded, self.recorded = self.recorded, {}
        return recorded

    @property
    def txn(self) -> int:
        """The open (or last) transaction's number: increasing, also across restarts (it counts
        microseconds of the wall clock); SQL reads it as ``engine_txn()`` (history rows keep it, so
        the events one transaction recorded are known)."""
        return self._txn

    def on_rollback(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every rolled-back transaction (in-memory copies of rows forget
        what the transaction wrote)."""
        self._rollback_listeners.append(listener)

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """Run a block atomically; nested blocks join the outer transaction (and its durability).

        ``durable=False`` commits without an fsync of its own (see the module docstring).
        """
        if self._depth:
            self._depth += 1
            try:
                yield self.db
            finally:
                self._depth -= 1
            return
        relaxed = not durable and self._synchronous != "NORMAL"
        if relaxed:
            self.db.execute("PRAGMA synchronous=NORMAL")
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self._txn = max(self._txn + 1, time.time_ns() // 1000)
            self._depth = 1
            try:
                yield self.db
                self._depth = 0
                self.db.execute("COMMIT")
            except BaseException:
                self._depth = 0
                self._roll_back()
                raise
        finally:
            if relaxed:
                self.db.execute(f"PRAGMA synchronous={self._synchronous}")

    def _roll_back(self) -> None:
        """End the open transaction without its changes (a failed ``COMMIT`` may have left it open,
        or SQLite may have rolled it back already) and tell the rollback listeners."""
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        finally:
            self.recorded.clear()
            for forget in self._rollback_listeners:
                forget()

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection of the caller's own, for a long read without the engine lock:
        it sees the last committed state (WAL readers never block the writer, nor it them).
        Connections are pooled and closed with the store."""
        try:
            connection = self._readers.get_nowait()
        except queue.Empty:
            connection = sqlite3.connect(f"{self._path.resolve().as_uri()}?mode=ro", uri=True,
                                         check_same_thread=False, isolation_level=None)
        try:
            yield connection
        finally:
            self._readers.put(connection)

    def synchronous(self) -> int:
        """SQLite's ``synchronous`` setting in force (1 NORMAL, 2 FULL), for tests and diagnostics."""
        return int(self.db.execute("PRAGMA synchronous").fetchone()[0])

    def close(self) -> None:
        """Close the connections (the WAL is checkpointed by SQLite) and release the database."""
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break
        self.db.close()
        _release(self._lock_path, self._lock_file)


def _add_columns(db: sqlite3.Connection) -> None:
    for table, column, declaration in _ADDED_COLUMNS:
        present = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    db.execute("CREATE INDEX IF NOT EXISTS flows_by_parent ON flows (parent_flow_id, uid)")


def _prove_writable(db: sqlite3.Connection) -> None:
    """Write the header's user version back unchanged and roll it back (SQLite opens a read-only
    file read-only without an error, and the schema script writes nothing on an existing database)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(f"PRAGMA user_version={version}")
    finally:
        db.execute("ROLLBACK")


def _lock_exclusively(lock_path: Path) -> IO[bytes]:
    """Hold an exclusive lock on the file at ``lock_path``: the file there now, not one a stopping
    engine removed between this open and this lock (then the new file is locked instead)."""
    while True:
        lock_file = open(lock_path, "ab")  # noqa: SIM115 - held open for the Store's lifetime
        try:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            raise DatabaseInUseError(f"database {lock_path.with_suffix('')} is in use by another engine") from None
        except BaseException:
            lock_file.close()
            raise
        opened = os.fstat(lock_file.fileno())
        try:
            current = os.stat(lock_path)
        except FileNotFoundError:
            current = None
        if current is not None and (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino):
            return lock_file
        lock_file.close()


def _release(lock_path: Path, lock_file: IO[bytes]) -> None:
    """Remove the lock file while still holding its lock, then let the lock go."""
    try:
        lock_path.unlink(missing_ok=True)
    finally:
        lock_file.close()
