"""A Step's Attribute load reads the run's singletons through their index, never by scanning every map
instance of the run: a long session holds thousands of ``AgentMessages`` instances, and a scan made
each Step slower as the session grew (turn 2,000 took 2.5x turn 100 in ``benchmarks/long_session.py``).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine.repository import state
from dex_agents.engine.repository.store import Store


def test_the_singleton_load_uses_the_singletons_index_and_reads_only_singletons(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db")
    try:
        db = store.db
        with closing(db.cursor()) as cursor:
            plan = " ".join(str(row) for row in cursor.execute(f"EXPLAIN QUERY PLAN {state.SINGLETONS_SQL}", (1,)))
        assert "attributes_singletons" in plan, plan
        value = pb.Value()
        db.execute("INSERT INTO attributes (uid, key, value, is_instance) VALUES (1, 'AgentState', ?, 0)",
                   (value.SerializeToString(),))
        db.executemany("INSERT INTO attributes (uid, key, value, is_instance) VALUES (1, ?, ?, 1)",
                       [(f"AgentMessages/{n:012d}", value.SerializeToString()) for n in range(50)])
        loaded = state.load_attributes(db, 1, ["AgentMessages/000000000007"])
        assert [kv.key for kv in loaded] == ["AgentState", "AgentMessages/000000000007"]
    finally:
        store.close()


def test_sqlite_would_scan_the_primary_key_without_the_index_hint() -> None:
    """Why the hint is there: without statistics SQLite prefers the primary key (uid, key) for
    ``uid=? AND is_instance=0``, which visits every Attribute of the run."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript("CREATE TABLE attributes (uid INTEGER NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
                         "is_instance INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (uid, key)) WITHOUT ROWID; "
                         "CREATE INDEX attributes_singletons ON attributes (uid, is_instance);")
        plan = str(db.execute("EXPLAIN QUERY PLAN SELECT key, value FROM attributes WHERE uid=? AND is_instance=0",
                              (1,)).fetchall())
    assert "PRIMARY KEY" in plan
