"""SearchFlows over a large history, and the calls beside it.

Run: ``python -m benchmarks.engine_search [--runs N] [--searches K]`` (defaults 20,000 and 5).
Prints figures, never asserts.

Setup: a database of N open runs (built by copying one run in SQLite, as
``benchmarks.engine_backlog`` does) is served by an engine child process. A thread runs K
searches one after the other of each of two queries: one at the length cap (4,096 characters of
``FlowId != ...`` clauses, which every run matches and no index answers; a page of 1,000) and one
on an indexed Attribute no run has (every run's indexed Attributes are read: the whole table is
scanned); meanwhile this thread calls ``GetFlowSummary`` (which takes the engine lock) in a loop.
Printed: each search's time and the summary latency while searches run, against the same latency
on the idle engine.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from benchmarks.engine_memory import build
from benchmarks.engine_roundtrip import describe
from dex_agents.engine.launch import EngineProcess
from dex_agents.engine.queries import MAX_QUERY_CHARS


def long_query() -> str:
    """A query of about MAX_QUERY_CHARS characters that every run matches and no index answers."""
    clauses: list[str] = []
    while len(" AND ".join(clauses)) < MAX_QUERY_CHARS - 40:
        clauses.append(f"FlowId != 'none-{len(clauses)}'")
    return " AND ".join(clauses)


def summaries(stub: dex_pb2_grpc.FlowServiceStub, until: threading.Event, limit: int = 10_000) -> list[float]:
    samples: list[float] = []
    while not until.is_set() and len(samples) < limit:
        began = time.perf_counter()
        stub.GetFlowSummary(pb.GetFlowSummaryRequest(flow_id="backlog-1"), timeout=60)
        samples.append(time.perf_counter() - began)
    return samples


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20_000, help="open runs (default 20,000)")
    parser.add_argument("--searches", type=int, default=5, help="searches at the length cap (default 5)")
    args = parser.parse_args(argv)
    query = long_query()
    with tempfile.TemporaryDirectory(prefix="dex-agents-bench-") as directory:
        db_path = Path(directory) / "engine.sqlite3"
        build(db_path, "open runs", args.runs)
        engine = EngineProcess.start(db_path, log_path=Path(directory) / "engine.log")
        try:
            with grpc.insecure_channel(engine.address) as channel:
                stub = dex_pb2_grpc.FlowServiceStub(channel)
                idle_done = threading.Event()
                threading.Timer(2.0, idle_done.set).start()
                idle = summaries(stub, idle_done, 500)
                searching = threading.Event()
                times: list[float] = []
                found: list[int] = []

                scans: list[float] = []

                def search() -> None:
                    try:
                        for _ in range(args.searches):
                            for text, into in ((query, times), ("Missing = 'nowhere'", scans)):
                                began = time.perf_counter()
                                response = stub.SearchFlows(pb.SearchFlowsRequest(query=text, page_size=1000),
                                                            timeout=600)
                                into.append(time.perf_counter() - began)
                                found.append(len(response.flow_runs))
                    finally:
                        searching.set()

                searcher = threading.Thread(target=search)
                searcher.start()
                beside = summaries(stub, searching)
                searcher.join()
        finally:
            engine.stop()
    print(f"{args.runs:,} open runs; query of {len(query):,} characters, {query.count(' AND ') + 1} clauses")
    print(describe("SearchFlows at the length cap (page of 1,000)", times))
    print(describe("SearchFlows on an Attribute no run has (whole table)", scans))
    print(describe("GetFlowSummary on the idle engine", idle))
    print(describe("GetFlowSummary while searches run", beside))


if __name__ == "__main__":
    main()
