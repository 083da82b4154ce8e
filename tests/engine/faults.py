"""Fault injection for the engine's store: a connection whose next ``COMMIT`` fails as a full disk
or an I/O error would, for the tests that check what a failed commit leaves behind."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any, cast

from dex_agents.engine.repository.store import Store


class FailingCommit:
    """Stands in for the store's connection: the next ``COMMIT`` (once armed) raises
    ``sqlite3.OperationalError`` instead of committing; everything else goes to the real
    connection. ``failed`` is set once a commit has been made to fail."""

    def __init__(self, db: sqlite3.Connection, *, armed: bool = True) -> None:
        self.db = db
        self.fail_next_commit = armed
        self.failed = threading.Event()

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.fail_next_commit:
            self.fail_next_commit = False
            self.failed.set()
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    @classmethod
    def install(cls, store: Store, *, armed: bool = True) -> FailingCommit:
        """Put a FailingCommit in front of ``store``'s connection (call it under the lock that
        guards the store, as :meth:`remove`)."""
        wrapper = cls(store.db, armed=armed)
        store.db = cast(sqlite3.Connection, wrapper)
        return wrapper

    def remove(self, store: Store) -> None:
        """Give ``store`` its real connection back."""
        store.db = self.db
