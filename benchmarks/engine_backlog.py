"""Restart of the local engine with a large backlog of open runs, and StartFlow beside it.

Run: ``python -m benchmarks.engine_backlog [--runs N]`` (default 100,000). Prints figures, never
asserts.

Setup: an engine child starts one Flow whose first Step no Worker serves (so it stays pending), is
stopped, and that run is copied N-1 times straight in SQLite (rows of ``flows``, ``steps`` and
``history``, new ids), which builds a backlog in seconds instead of N fsync'd StartFlow calls. Then:

    * restart to ready: ``EngineProcess.start`` on that database until the ready line;
    * StartFlow latency right after the restart (while the engine recovers the backlog in batches),
      and on an empty engine;
    * full recovery, in process: ``EngineServer.start`` and the time until ``recovered`` is set
      (every run's pending Step queued for dispatch), then StartFlow latency with the whole
      backlog queued: the backlog must not slow a submit.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import dex
from dex import Client, ClientOptions, Context, Flow, Registry, Step, StepDecision, StepList, WorkerTarget, dead_end

from benchmarks.engine_roundtrip import describe
from dex_agents.engine.launch import EngineProcess
from dex_agents.engine.server import EngineServer

FLOW_TYPE: Final = "BenchBacklog"
STARTS: Final = 50


class Idle(Step[int]):
    """A Step no Worker in this benchmark serves: its run stays open with a pending task."""

    def execute(self, context: Context, input: int) -> StepDecision:
        return dead_end()


class BacklogFlow(Flow[int]):
    """An open run with one pending Step."""

    def get_flow_type(self) -> str:
        return FLOW_TYPE

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Idle())


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")]


def copy_run(db_path: Path, copies: int) -> None:
    """Add ``copies`` copies of the database's first run (one transaction)."""
    db = sqlite3.connect(db_path)
    try:
        flow_columns = [c for c in _columns(db, "flows") if c not in ("uid", "flow_id", "run_id", "request_id")]
        listed = ", ".join(flow_columns)
        (template,) = db.execute("SELECT uid FROM flows ORDER BY uid LIMIT 1").fetchone()
        (last,) = db.execute("SELECT MAX(uid) FROM flows").fetchone()
        with db:
            db.executemany(
                f"INSERT INTO flows (flow_id, run_id, request_id, {listed}) "
                f"SELECT ?, ?, ?, {listed} FROM flows WHERE uid=?",
                ((f"backlog-{i}", f"run-{i}", f"request-{i}", template) for i in range(copies)),
            )
            for table in ("steps", "history"):
                others = [c for c in _columns(db, table) if c != "uid"]
                db.execute(
                    f"INSERT INTO {table} (uid, {', '.join(others)}) "
                    f"SELECT f.uid, {', '.join('t.' + c for c in others)} FROM {table} t, flows f "
                    f"WHERE t.uid=? AND f.uid>?", (template, last))
    finally:
        db.close()


def time_starts(address: str, root: Path, tag: str) -> list[float]:
    """Seconds per StartFlow call, ``STARTS`` calls."""
    flow = BacklogFlow()
    registry = Registry([flow])
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(root / f"blobs-{tag}"), 16 << 20))
    client = Client(registry, cache, ClientOptions(server_address=address, worker_target=WorkerTarget(pull=True)))
    try:
        samples = []
        for i in range(STARTS):
            began = time.perf_counter()
            client.start_flow(flow, f"{tag}-{i}", i)
            samples.append(time.perf_counter() - began)
        return samples
    finally:
        client.close()
        cache.close()


def main(argv: Sequence[str] | None = None) -> None:
    """Build the backlog, restart the engine on it, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=100_000, help="open runs in the backlog (default 100,000)")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds to wait for the ready line")
    args = parser.parse_args(argv)
    runs = max(1, args.runs)
    with tempfile.TemporaryDirectory(prefix="dex-agents-bench-") as directory:
        root = Path(directory)
        db_path = root / "engine.sqlite3"
        engine = EngineProcess.start(db_path, log_path=root / "engine-1.log")
        try:
            empty = time_starts(engine.address, root, "empty")
        finally:
            engine.stop()
        began = time.perf_counter()
        copy_run(db_path, runs)
        print(f"backlog: {runs + STARTS} open runs of one Flow type, one pending Step each "
              f"(built in {time.perf_counter() - began:.1f} s)")
        began = time.perf_counter()
        engine = EngineProcess.start(db_path, log_path=root / "engine-2.log", ready_timeout=args.ready_timeout)
        ready = time.perf_counter() - began
        try:
            print(f"restart to ready with the backlog: {ready:.2f} s (launcher's default ready timeout 30 s)")
            recovering = time_starts(engine.address, root, "recovering")
        finally:
            engine.stop()
        print(describe("StartFlow on an empty engine", empty))
        print(describe("StartFlow right after the restart", recovering))
        server = EngineServer(db_path)
        began = time.perf_counter()
        server.start()
        ready = time.perf_counter() - began
        try:
            recovered = server.recovered.wait(args.ready_timeout)
            print(f"in process: ready in {ready:.2f} s, every open run recovered "
                  + (f"after {time.perf_counter() - began:.2f} s" if recovered else "not within the timeout"))
            loaded = time_starts(server.address, root, "loaded")
        finally:
            server.stop()
        print(describe("StartFlow with the whole backlog queued (in process)", loaded))


if __name__ == "__main__":
    main()
