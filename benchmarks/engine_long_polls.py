"""Step throughput of the local engine while many long polls are open or abandoned.

Run: ``python -m benchmarks.engine_long_polls [--polls N]`` (default 1,100). Prints figures, never
asserts.

Setup: an engine child, one pull ``Worker`` (8 concurrent tasks) running an endless chain of trivial
SYNC Steps in this process; the figure is Steps per second over a window, counted in the Worker.
Each phase is measured on the same chain:

    * quiet: nothing else runs;
    * abandoned ``WaitForFlow``: N calls asking the server to wait 60 s on an open run, whose
      clients give up after 2 s; measured once every client has given up;
    * ``WaitForAttribute``: 200 polls on an Attribute no commit changes, left waiting;
    * silent ``PollWorkerTask``: N streams that never send their first frame, left open.

Each phase also times one ``HealthCheck`` (5 s deadline) to show whether short calls still get a
thread.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import dex
import grpc
from dex import Client, ClientOptions, PullWorkerOptions, Registry, Worker, WorkerOptions
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from google.protobuf import empty_pb2

from benchmarks.engine_roundtrip import CLOCK, SYNC_FLOW, ChainFlow, load_average
from dex_agents.engine.launch import EngineProcess

WINDOW_SECONDS: Final = 3.0
ABANDON_AFTER_SECONDS: Final = 2.0
ATTRIBUTE_POLLS: Final = 200
CALLS_PER_CHANNEL: Final = 100


def steps_per_second(flow_id: str, window: float = WINDOW_SECONDS) -> float:
    """Execute starts of ``flow_id``'s chain per second over ``window`` seconds."""
    before = len(CLOCK.starts[flow_id])
    time.sleep(window)
    return (len(CLOCK.starts[flow_id]) - before) / window


def health_check(stub: dex_pb2_grpc.FlowServiceStub) -> str:
    """One HealthCheck's latency, or how it failed."""
    began = time.perf_counter()
    try:
        stub.HealthCheck(empty_pb2.Empty(), timeout=5.0)
    except grpc.RpcError as error:
        return f"failed ({error.code().name}) after {time.perf_counter() - began:.2f} s"
    return f"{(time.perf_counter() - began) * 1000:.1f} ms"


class Abusers:
    """Raw gRPC channels for the abandoned and silent calls (closed together)."""

    def __init__(self, address: str, calls: int) -> None:
        count = max(1, -(-calls // CALLS_PER_CHANNEL))
        self.channels = [grpc.insecure_channel(address) for _ in range(count)]
        self.release = threading.Event()

    def flow_stub(self, index: int) -> dex_pb2_grpc.FlowServiceStub:
        return dex_pb2_grpc.FlowServiceStub(self.channels[index // CALLS_PER_CHANNEL % len(self.channels)])

    def worker_stub(self, index: int) -> dex_pb2_grpc.WorkerTaskServiceStub:
        return dex_pb2_grpc.WorkerTaskServiceStub(self.channels[index // CALLS_PER_CHANNEL % len(self.channels)])

    def silence(self) -> Iterator[pb.PollWorkerTaskRequest]:
        """A request stream that sends nothing until released."""
        while not self.release.wait():
            yield pb.PollWorkerTaskRequest()

    def close(self) -> None:
        self.release.set()
        for channel in self.channels:
            channel.close()


def phase(name: str, flow_id: str, stub: dex_pb2_grpc.FlowServiceStub, window: float) -> None:
    """Print one phase's throughput and HealthCheck."""
    rate = steps_per_second(flow_id, window)
    print(f"{name}: {rate:.0f} steps/s; HealthCheck {health_check(stub)}")


def main(argv: Sequence[str] | None = None) -> None:
    """Start an engine child and a Worker, run the phases, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--polls", type=int, default=1100, help="abandoned polls and silent streams (default 1,100)")
    parser.add_argument("--window", type=float, default=WINDOW_SECONDS, help="seconds per measurement (default 3)")
    args = parser.parse_args(argv)
    polls = max(1, args.polls)
    window = max(0.1, args.window)
    chain = ChainFlow()
    registry = Registry([chain])
    with tempfile.TemporaryDirectory(prefix="dex-agents-bench-") as directory:
        root = Path(directory)
        engine = EngineProcess.start(root / "engine.sqlite3", log_path=root / "engine.log")
        cache = dex.open_blob_cache(dex.BlobCacheConfig(str(root / "blobs"), 16 << 20))
        worker = Worker(registry, cache, WorkerOptions(server_address=engine.address,
                                                       pull=PullWorkerOptions(max_concurrent_tasks=8)))
        thread = threading.Thread(target=worker.start, name="bench-worker", daemon=True)
        thread.start()
        client = Client(registry, cache, ClientOptions(server_address=engine.address,
                                                       worker_target=worker.worker_target))
        abusers = Abusers(engine.address, polls)
        control = grpc.insecure_channel(engine.address)
        stub = dex_pb2_grpc.FlowServiceStub(control)
        try:
            worker.wait_pull_registered(timeout=30)
            print(f"engine {engine.address}; pull Worker max_concurrent_tasks=8; SYNC durability; "
                  f"load average {load_average()}; CPUs: {os.cpu_count()}")
            client.start_flow(chain, "chain", 10**9, SYNC_FLOW)
            time.sleep(1.0)  # warm up
            phase("quiet", "chain", stub, window)

            waits = [abusers.flow_stub(i).WaitForFlow.future(
                pb.WaitForFlowRequest(flow_id="chain", wait_time_seconds=60), timeout=ABANDON_AFTER_SECONDS)
                for i in range(polls)]
            time.sleep(ABANDON_AFTER_SECONDS + 0.5)
            gone = sum(1 for w in waits if w.done())
            phase(f"{polls} WaitForFlow abandoned after 2 s ({gone} given up)", "chain", stub, window)
            phase("  a window later", "chain", stub, window)

            match = pb.AttributeMatch(key="Never", operator=pb.ATTRIBUTE_MATCH_OPERATOR_EQUAL,
                                      operand=pb.Value(string_value="never"))
            attribute_polls = [abusers.flow_stub(i).WaitForAttribute.future(
                pb.WaitForAttributeRequest(flow_id="chain", match=match, request_timeout_seconds=30), timeout=30)
                for i in range(ATTRIBUTE_POLLS)]
            time.sleep(0.5)
            phase(f"{ATTRIBUTE_POLLS} WaitForAttribute polls waiting", "chain", stub, window)
            for call in attribute_polls:
                call.cancel()

            streams = [abusers.worker_stub(i).PollWorkerTask(abusers.silence()) for i in range(polls)]
            time.sleep(0.5)
            phase(f"{polls} silent PollWorkerTask streams open", "chain", stub, window)
            phase("  a window later", "chain", stub, window)
            for stream in streams:
                stream.cancel()
            print(f"load average at end: {load_average()}")
        finally:
            abusers.close()
            control.close()
            client.close()
            worker.stop()
            thread.join(timeout=30)
            worker.close()
            cache.close()
            engine.stop()


if __name__ == "__main__":
    main()
