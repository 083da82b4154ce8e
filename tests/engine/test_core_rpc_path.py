"""Engine core, RPC path: a writing RPC commits on the thread that received the Worker's answer and
launches the Steps its commit starts there too (no hand-off to the call's thread first); the
call's thread only returns the answer."""

from __future__ import annotations

import threading
from pathlib import Path

from dex import StartFlowOptions

from dex_agents.engine.server import EngineServer
from tests.engine.harness import open_harness, unique_name
from tests.engine.test_rpcs import LedgerFlow

STREAM_READER_PREFIX = "dex-engine-stream"
"""The name prefix of the threads that read the Worker streams (``WorkerTaskService``)."""


def test_a_writing_rpc_commits_and_launches_on_the_stream_reader_thread(tmp_path: Path) -> None:
    server = EngineServer(tmp_path / "engine.db")
    server.start()
    try:
        flow = LedgerFlow(unique_name("rpc-path"))
        harness = open_harness([flow], address=server.address, cache_dir=tmp_path / "cache")
        try:
            flow_id = unique_name("ledger")
            harness.client.start_flow(flow, flow_id, 5, StartFlowOptions())
            writers: list[tuple[str, str]] = []
            with server.engine.lock:
                server.engine.store.db.set_trace_callback(
                    lambda sql: writers.append((threading.current_thread().name, sql)))
            try:
                assert harness.client.invoke_rpc(flow.deposit, flow_id, 5) == 5
            finally:
                with server.engine.lock:
                    server.engine.store.db.set_trace_callback(None)
            assert harness.result(flow_id).single_output(str) == "balance 5"
        finally:
            harness.close()
    finally:
        server.stop(grace=0)
    commit_threads = {name for name, sql in writers if sql.startswith("INSERT INTO attributes")}
    assert commit_threads and all(name.startswith(STREAM_READER_PREFIX) for name in commit_threads), commit_threads
    launch_threads = {name for name, sql in writers if sql.startswith("INSERT INTO history")}
    assert all(name.startswith(STREAM_READER_PREFIX) for name in launch_threads), launch_threads
