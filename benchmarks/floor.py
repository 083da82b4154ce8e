"""The floor under a durable turn on this machine: what one fsync'd commit and one gRPC round trip
cost with no Dex logic at all.

Run: ``python -m benchmarks.floor`` (``--quick`` for a smoke run). Prints figures, never asserts.

A turn with one read tool makes 8 fsync'd commits at ``power-loss`` durability (the RPC with the Wait
it satisfies, five Step results, two ``wait_for`` results; the Stream appends of Steps that may retry
are not fsync'd; counted by ``benchmarks.turn_profile``) and has six Worker round trips on its critical path (the
``send_user_message`` RPC and five ``execute`` calls), so

    turn floor >= 8 x (fsync'd commit) + 6 x (round trip)

before any engine, SDK or session logic runs. The figures:

    * commit: one SQLite transaction inserting a 300-byte row, WAL journal, at ``synchronous=FULL``
      (an fsync per commit, the engine's ``power-loss`` level) and ``NORMAL`` (``process-crash``),
      in a temporary directory (the temp dir's file system: point ``TMPDIR`` at the engine's disk).
    * round trip: one gRPC bidi-stream message and its echo between two Python processes. The client
      is a ``grpc.aio`` stream, as the SDK's ``AsyncWorker`` uses; the server is either the style the
      local engine uses (``sync``: a ``grpc.server`` thread pool whose stream handler yields from an
      outbox a reader thread fills, as ``WorkerTaskService``) or ``grpc.aio`` (one event loop, no
      hand-off). Latency p50/p99 (300-byte messages, one in flight) and the server's CPU per round
      trip (Linux), over the timed messages only.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent import futures
from typing import Final

import grpc

from benchmarks.engine_roundtrip import cpu_seconds, describe, load_average, percentile

METHOD: Final = "/floor.Echo/Bidi"
PAYLOAD: Final = b"x" * 300
WARMUP: Final = 200
STYLES: Final = ("sync", "aio")
SYNCHRONOUS_LEVELS: Final = {"FULL": "power-loss", "NORMAL": "process-crash"}
TURN_COMMITS: Final = 8
TURN_ROUND_TRIPS: Final = 6


def commit_seconds(synchronous: str, count: int) -> list[float]:
    """Seconds of ``count`` one-row SQLite transactions at ``synchronous`` (WAL), in a temp dir."""
    with tempfile.TemporaryDirectory(prefix="dex-agents-floor-") as directory:
        db = sqlite3.connect(Path(directory) / "floor.sqlite3", isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={synchronous}")
            db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, value BLOB NOT NULL)")
            samples: list[float] = []
            for _ in range(count):
                started = time.perf_counter()
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT INTO rows (value) VALUES (?)", (PAYLOAD,))
                db.execute("COMMIT")
                samples.append(time.perf_counter() - started)
            return samples
        finally:
            db.close()


def _identity(data: bytes) -> bytes:
    return data


def _sync_echo(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    context.add_callback(lambda: outbox.put(None))

    def read() -> None:
        try:
            for request in requests:
                outbox.put(request)
        except grpc.RpcError:
            pass
        finally:
            outbox.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (message := outbox.get()) is not None:
        yield message


async def _aio_echo(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]) -> AsyncIterator[bytes]:
    async for request in requests:
        yield request


def _handler(style: str) -> grpc.GenericRpcHandler:
    behaviour = _sync_echo if style == "sync" else _aio_echo
    service, method = METHOD.strip("/").split("/")
    return grpc.method_handlers_generic_handler(service, {
        method: grpc.stream_stream_rpc_method_handler(behaviour, _identity, _identity)})


def serve(style: str) -> None:
    """Child process: serve the echo on a free port, print it, run until stdin closes."""
    if style == "sync":
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers((_handler(style),))
        print(server.add_insecure_port("127.0.0.1:0"), flush=True)
        server.start()
        sys.stdin.read()
        server.stop(grace=None)
        return

    async def main() -> None:
        aio_server = grpc.aio.server()
        aio_server.add_generic_rpc_handlers((_handler(style),))
        print(aio_server.add_insecure_port("127.0.0.1:0"), flush=True)
        await aio_server.start()
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await aio_server.stop(grace=None)

    asyncio.run(main())


async def _ping_pong(port: int, count: int, server_pid: int) -> tuple[list[float], float | None]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.stream_stream(METHOD, request_serializer=_identity, response_deserializer=_identity)()
        for _ in range(WARMUP):
            await call.write(PAYLOAD)
            await call.read()
        cpu_before = cpu_seconds(server_pid)
        samples: list[float] = []
        for _ in range(count):
            started = time.perf_counter()
            await call.write(PAYLOAD)
            await call.read()
            samples.append(time.perf_counter() - started)
        cpu_after = cpu_seconds(server_pid)
        await call.done_writing()
    cpu = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / count
    return samples, cpu


def measure(style: str, count: int) -> tuple[str, float]:
    """Start a server child of ``style``, ping-pong ``count`` messages; one line of figures and the
    round trip's p50 in seconds."""
    child = subprocess.Popen([sys.executable, "-m", "benchmarks.floor", "--serve", style],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        port = int(child.stdout.readline())
        samples, cpu = asyncio.run(_ping_pong(port, count, child.pid))
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    server_cpu = "unavailable" if cpu is None else f"{cpu * 1e6:.0f} us"
    line = f"{describe(f'{style:<4} server: round trip', samples)}; server CPU per round trip {server_cpu}"
    return line, percentile(samples, 0.5)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0] or None)
    parser.add_argument("--messages", type=int, default=3000,
                        help="timed commits per level and round trips per server style (default 3000)")
    parser.add_argument("--quick", action="store_true", help="a few round trips only (a smoke run)")
    parser.add_argument("--serve", choices=STYLES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return
    count: int = 50 if args.quick else args.messages
    print(f"load average at start: {load_average()}")
    print(f"SQLite {sqlite3.sqlite_version} commits of one 300-byte row (WAL) in {tempfile.gettempdir()}:")
    commit_p50: dict[str, float] = {}
    for synchronous, level in SYNCHRONOUS_LEVELS.items():
        samples = commit_seconds(synchronous, count)
        commit_p50[synchronous] = percentile(samples, 0.5)
        print("  " + describe(f"synchronous={synchronous} ({level})", samples))
    print(f"gRPC bidi round trips between two Python processes (grpcio {grpc.__version__}):")
    round_trip_p50: list[float] = []
    for style in STYLES:
        line, p50 = measure(style, count)
        round_trip_p50.append(p50)
        print("  " + line)
    wire = TURN_ROUND_TRIPS * min(round_trip_p50)
    for synchronous, level in SYNCHRONOUS_LEVELS.items():
        floor = TURN_COMMITS * commit_p50[synchronous] + wire
        print(f"turn floor at {level}: {TURN_COMMITS} commits x {commit_p50[synchronous] * 1000:.2f} ms + "
              f"{TURN_ROUND_TRIPS} round trips x {min(round_trip_p50) * 1000:.2f} ms = {floor * 1000:.1f} ms "
              "(before any engine, SDK or session work)")
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
