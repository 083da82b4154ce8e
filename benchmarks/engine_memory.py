"""Memory per open run and per queued task, and idle CPU with a backlog, of the local engine.

Run: ``python -m benchmarks.engine_memory [--runs N] [--idle-seconds S]`` (defaults 20,000 and
5). Prints figures, never asserts.

Setup: four databases are built (in seconds, by copying one template run straight in SQLite, as
``benchmarks.engine_backlog`` does): with ``--base`` (1,000) and with N open runs, of two kinds:
runs with no Step at all (an open run and nothing else) and runs whose one Step waits in the
dispatch queue (no Worker serves its type). Each database is then opened by a fresh engine process
(``EngineServer`` in a child Python process, so nothing else shares its memory), which waits until
every open run is recovered, collects garbage, reads its resident set size, and measures its CPU
time while idle for S seconds. Memory per open run is the RSS difference between the N-run and the
base database of the first kind divided by the difference in runs; memory per queued task is the
same for the second kind minus the first.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from benchmarks.engine_backlog import copy_run
from dex_agents.engine.server import EngineServer

KINDS: Final = ("open runs", "queued tasks")


def _rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def build(db_path: Path, kind: str, runs: int) -> None:
    """A database of ``runs`` open runs of ``kind``."""
    server = EngineServer(db_path)
    server.start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = dex_pb2_grpc.FlowServiceStub(channel)
            request = pb.StartFlowRequest(flow_id="template", flow_type="BenchMemory", request_id="template")
            if kind == "queued tasks":
                request.start_step_type = "Unserved"
                request.step_input.string_value = "x" * 64
                request.step_options.skip_wait_for = True
            stub.StartFlow(request)
    finally:
        server.stop()
    copy_run(db_path, runs - 1)


def measure(db_path: Path, idle_seconds: float) -> dict[str, float]:
    """Open the database in this process, wait for recovery, and report RSS and idle CPU."""
    server = EngineServer(db_path)
    began = time.perf_counter()
    server.start()
    try:
        server.recovered.wait(3600)
        recovered = time.perf_counter() - began
        gc.collect()
        time.sleep(1.0)  # let the last recovery batch's garbage go
        rss = _rss_bytes()
        cpu = time.process_time()
        time.sleep(idle_seconds)
        idle = (time.process_time() - cpu) / idle_seconds
    finally:
        server.stop()
    return {"rss": rss, "idle_cpu": idle, "recovered_s": recovered}


def _child(db_path: Path, idle_seconds: float) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.engine_memory", "--measure", str(db_path),
                          "--idle-seconds", str(idle_seconds)], check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20_000, help="open runs in the large databases (default 20,000)")
    parser.add_argument("--base", type=int, default=1_000, help="open runs in the small databases (default 1,000)")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="idle CPU window (default 5 s)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.idle_seconds)))
        return
    figures: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="dex-agents-bench-") as directory:
        for kind in KINDS:
            for runs in (args.base, args.runs):
                db_path = Path(directory) / f"{kind.replace(' ', '-')}-{runs}.sqlite3"
                build(db_path, kind, runs)
                figures[(kind, runs)] = _child(db_path, args.idle_seconds)
    span = args.runs - args.base
    per_run = (figures[(KINDS[0], args.runs)]["rss"] - figures[(KINDS[0], args.base)]["rss"]) / span
    per_task = (figures[(KINDS[1], args.runs)]["rss"] - figures[(KINDS[1], args.base)]["rss"]) / span - per_run
    for (kind, runs), measured in figures.items():
        print(f"{runs:>7,} {kind:<13}: RSS {measured['rss'] / 2**20:7.1f} MiB, idle CPU "
              f"{measured['idle_cpu'] * 100:5.2f} %, recovered in {measured['recovered_s']:.1f} s")
    print(f"memory per open run: {per_run:,.0f} bytes; per queued task (on top): {per_task:,.0f} bytes")


if __name__ == "__main__":
    main()
