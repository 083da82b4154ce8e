"""The floor the wire sets: one gRPC bidi-stream round trip between two Python processes, with no Dex
logic and no storage, for the two server styles an engine could use.

Run: ``python -m benchmarks.grpc_floor`` (``--quick`` for a smoke run). Prints figures, never asserts.

Every Step of a session is at least one such round trip (the engine sends the task on the Worker's
``PollWorkerTask`` stream, the Worker answers on it), so this is the per-hop cost no engine change
can remove. The client is a ``grpc.aio`` stream, as the SDK's ``AsyncWorker`` uses; the server
echoes each message on the same stream:

    * sync: the style the local engine uses, a ``grpc.server`` thread pool where the stream's handler
      yields from an outbox queue that a reader thread fills (the engine's ``WorkerTaskService``).
    * aio: a ``grpc.aio`` server whose handler echoes on the event loop (one thread, no hand-off).

Figures per server style: round-trip latency p50/p99 (300-byte messages, one in flight) and the
server process's CPU per round trip (Linux), measured over the timed messages only.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent import futures
from typing import Final

import grpc

from benchmarks.engine_roundtrip import cpu_seconds, describe, load_average

METHOD: Final = "/floor.Echo/Bidi"
PAYLOAD: Final = b"x" * 300
WARMUP: Final = 200
STYLES: Final = ("sync", "aio")


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


def measure(style: str, count: int) -> str:
    """Start a server child of ``style``, ping-pong ``count`` messages; one line of figures."""
    child = subprocess.Popen([sys.executable, "-m", "benchmarks.grpc_floor", "--serve", style],
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
    return f"{describe(f'{style:<4} server: round trip', samples)}; server CPU per round trip {server_cpu}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0] or None)
    parser.add_argument("--messages", type=int, default=5000, help="timed round trips per server style (default 5000)")
    parser.add_argument("--quick", action="store_true", help="a few round trips only (a smoke run)")
    parser.add_argument("--serve", choices=STYLES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return
    count: int = 50 if args.quick else args.messages
    print(f"gRPC bidi round trips between two Python processes (grpcio {grpc.__version__}); "
          f"load average at start: {load_average()}")
    for style in STYLES:
        print("  " + measure(style, count))
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
