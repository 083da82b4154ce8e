"""Engine core, the database: one engine per database file, released when the engine stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from dex_agents.engine.server import EngineServer
from dex_agents.engine.repository.store import DatabaseInUseError


def test_a_second_engine_on_the_same_database_is_refused_until_the_first_stops(tmp_path: Path) -> None:
    db_path = tmp_path / "engine.db"
    first = EngineServer(db_path)
    first.start()
    try:
        with pytest.raises(DatabaseInUseError, match="in use by another engine"):
            EngineServer(db_path).start()
    finally:
        first.stop(grace=0)
    second = EngineServer(db_path)
    second.start()
    second.stop(grace=0)


def test_engines_on_different_databases_run_side_by_side(tmp_path: Path) -> None:
    engines = [EngineServer(tmp_path / name) for name in ("a.db", "b.db")]
    for engine in engines:
        engine.start()
    try:
        assert engines[0].port != engines[1].port
    finally:
        for engine in engines:
            engine.stop(grace=0)


def test_a_start_that_cannot_bind_creates_no_database(tmp_path: Path) -> None:
    holder = EngineServer(tmp_path / "holder.db")
    holder.start()
    try:
        with pytest.raises(OSError, match="cannot bind"):
            EngineServer(tmp_path / "never.db", port=holder.port).start()
    finally:
        holder.stop(grace=0)
    assert not (tmp_path / "never.db").exists()
