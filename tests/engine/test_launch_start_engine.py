"""``start_engine``: a serving engine for a ``with`` block, in process or as a child process."""

from __future__ import annotations

from pathlib import Path

import dex
import pytest

from dex_agents.engine import EngineProcess, EngineServer, start_engine
from dex_agents.engine.durability import Durability
from tests.engine.processes import engine_is_healthy


@pytest.mark.parametrize("in_process", [True, False])
def test_temporary_database_is_removed_on_exit(tmp_path: Path, in_process: bool) -> None:
    with start_engine(in_process=in_process) as engine:
        assert isinstance(engine, EngineServer if in_process else EngineProcess)
        assert engine.address == f"127.0.0.1:{engine.port}"
        assert engine_is_healthy(engine.address, tmp_path)
        address = engine.address
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs2"), 1 << 20))
    client = dex.Client(dex.Registry([]), cache, dex.ClientOptions(server_address=address))
    try:
        with pytest.raises(dex.DexServiceError):
            client.health_check()
    finally:
        client.close()
        cache.close()


@pytest.mark.parametrize("in_process", [True, False])
def test_given_database_is_kept(tmp_path: Path, in_process: bool) -> None:
    db = tmp_path / "kept.sqlite3"
    with start_engine(db, in_process=in_process) as engine:
        assert engine_is_healthy(engine.address, tmp_path)
    assert db.exists()
    with start_engine(db, in_process=in_process) as engine:
        assert engine_is_healthy(engine.address, tmp_path)


def test_the_process_crash_level_is_opt_in_and_reported(tmp_path: Path) -> None:
    with start_engine(in_process=True) as engine:
        assert isinstance(engine, EngineServer)
        assert engine.engine.store.synchronous() == 2, "fsync per commit by default (synchronous=FULL)"
    with start_engine(in_process=True, durability=Durability.PROCESS_CRASH) as engine:
        assert isinstance(engine, EngineServer)
        assert engine.engine.store.synchronous() == 1, "synchronous=NORMAL"
        assert engine_is_healthy(engine.address, tmp_path)
    log = tmp_path / "engine.log"
    with start_engine(tmp_path / "child.sqlite3", in_process=False, durability=Durability.PROCESS_CRASH) as child:
        assert isinstance(child, EngineProcess)
        assert engine_is_healthy(child.address, tmp_path)
        log.write_text(child.log_path.read_text())
    assert "; durability process-crash (no fsync" in log.read_text()
