"""Worker harnesses of the engine conformance suite: Registry + BlobCache + Client + a registered
pull Worker (sync ``Worker`` in a thread, or ``AsyncWorker`` on a loop thread), torn down in order.

Everything here uses only the public API of dex-python-sdk 1.23.0 (plus the generated FlowService
stub for history, which the Client lacks), so the suite runs unchanged against a real Dex server
(``DEX_SERVER_ADDRESS``) and against the local engine. The synchronisation helpers live in
``tests.engine.probes`` and are re-exported here for the test modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
from dex import (
    AsyncWorker,
    BlobCache,
    BlobCacheConfig,
    Client,
    ClientOptions,
    Credential,
    Flow,
    FlowResult,
    LongPollTimeoutError,
    PullWorkerOptions,
    Registry,
    Worker,
    WorkerOptions,
    WorkerTarget,
    open_blob_cache,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from tests.engine.probes import (
    FLOW_WAIT,
    GATE_SECONDS,
    WAIT_SECONDS,
    Gate,
    NamedFlow,
    Probe,
    SingleStepFlow,
    StreamStepFlow,
    eventually,
    in_thread,
    retry_until,
    unique_name,
)

__all__ = [
    "FLOW_WAIT",
    "GATE_SECONDS",
    "WAIT_SECONDS",
    "Gate",
    "Harness",
    "LoopThread",
    "NamedFlow",
    "Probe",
    "SingleStepFlow",
    "StreamStepFlow",
    "eventually",
    "in_thread",
    "open_harness",
    "pull_options",
    "read_history",
    "retry_until",
    "unique_name",
]

T = TypeVar("T")


class _WorkerRunner(Protocol):
    def stop(self) -> None: ...


@dataclass
class Harness:
    """One Registry, BlobCache, Client and running pull Worker (sync or async)."""

    registry: Registry
    cache: BlobCache
    client: Client
    address: str
    credential: Credential | None
    worker_is_async: bool
    _runner: _WorkerRunner
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def result(self, flow_id: str) -> FlowResult:
        """Wait (long-poll, bounded) for the Flow to close and return its result.

        A Flow still open at the deadline fails the test with its history outline, so a stuck
        Flow explains itself.
        """
        try:
            return self.client.wait_for_flow(flow_id, timeout=FLOW_WAIT)
        except LongPollTimeoutError as error:
            raise AssertionError(f"Flow {flow_id} still open after {FLOW_WAIT}; history: "
                                 f"{history_outline(self.history(flow_id))}") from error

    def history(self, flow_id: str) -> list[pb.FlowHistoryEvent]:
        """Read the whole history with the raw FlowService stub (the Client has no history API)."""
        return read_history(self.address, flow_id, self.credential)

    def completed_executes(self, flow_id: str) -> list[str]:
        """The Step execution ids whose ``execute`` completed, in history order."""
        return [event.step_execute_completed.context.step_execution_id for event in self.history(flow_id)
                if event.HasField("step_execute_completed")]

    def stop_worker(self) -> None:
        """Stop the Worker now (idempotent; teardown calls it again harmlessly)."""
        self._runner.stop()

    def close(self) -> None:
        """Tear everything down, last opened first; errors are collected and re-raised once."""
        errors: list[BaseException] = []
        for closer in reversed(self._closers):
            try:
                closer()
            except BaseException as error:  # noqa: BLE001 - teardown must run every closer
                errors.append(error)
        self._closers.clear()
        if errors:
            raise errors[0]


def history_outline(events: Sequence[pb.FlowHistoryEvent]) -> list[str]:
    """``<event id> <kind> <step execution id or RPC name>`` per event, for failure messages."""
    outline: list[str] = []
    for event in events:
        kind = event.WhichOneof("payload") or "?"
        payload = getattr(event, kind, None)
        context = getattr(payload, "context", None)
        label = getattr(context, "step_execution_id", "") or getattr(payload, "rpc_name", "")
        outline.append(f"{event.event_id} {kind} {label}".rstrip())
    return outline


def read_history(address: str, flow_id: str, credential: Credential | None = None,
                 run_id: str = "", page_size: int = 0) -> list[pb.FlowHistoryEvent]:
    """Page through ``GetHistoryEvents`` and return every event in server order."""
    metadata: tuple[tuple[str, str], ...] = ()
    if credential is not None:
        token = credential.token()
        assert isinstance(token, str)
        metadata = (("authorization", "Bearer " + token),)
    events: list[pb.FlowHistoryEvent] = []
    with grpc.insecure_channel(address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        token_bytes = b""
        while True:
            response = stub.GetHistoryEvents(
                pb.GetHistoryEventsRequest(flow_id=flow_id, run_id=run_id, next_page_token=token_bytes,
                                           estimate_page_size=page_size),
                metadata=metadata, timeout=WAIT_SECONDS)
            events.extend(response.events)
            if not response.next_page_token:
                return events
            token_bytes = response.next_page_token


class _SyncRunner:
    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="dex-test-worker", daemon=True)
        self._stopped = False

    def _run(self) -> None:
        try:
            self._worker.start()
        except BaseException as error:  # noqa: BLE001 - surfaced by start()
            self._failure.append(error)

    def start(self) -> None:
        self._thread.start()
        try:
            self._worker.wait_pull_registered(timeout=WAIT_SECONDS)
        except BaseException:
            self.stop()
            if self._failure:
                raise self._failure[0] from None
            raise

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._worker.stop()
        self._thread.join(WAIT_SECONDS)
        self._worker.close()


class LoopThread:
    """An asyncio event loop running in a daemon thread; ``call`` runs a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="dex-test-loop", daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = WAIT_SECONDS) -> T:
        """Run ``coroutine`` on the loop and return its result (bounded wait)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and join its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(WAIT_SECONDS)
        self.loop.close()


class _AsyncRunner:
    def __init__(self, worker: AsyncWorker, loop: LoopThread) -> None:
        self._worker = worker
        self._loop = loop
        self._stopped = False
        self._started: Any = None

    def start(self) -> None:
        self._started = asyncio.run_coroutine_threadsafe(self._worker.start(), self._loop.loop)
        try:
            self._loop.call(self._worker.wait_pull_registered(timeout=WAIT_SECONDS), WAIT_SECONDS + 5)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._loop.call(self._worker.stop(), WAIT_SECONDS + 10)
        if self._started is not None:
            with contextlib.suppress(BaseException):
                self._started.result(WAIT_SECONDS)
        self._loop.call(self._worker.close(), WAIT_SECONDS)


def pull_options() -> PullWorkerOptions:
    """Pull options for tests: eight slots and a short drain so teardown stays quick."""
    return PullWorkerOptions(max_concurrent_tasks=8, stop_drain_timeout=timedelta(seconds=2))


def open_harness(flows: Sequence[Flow[Any]], *, address: str, cache_dir: Path,
                 async_worker: bool = False, credential: Credential | None = None) -> Harness:
    """Build Registry, BlobCache, Client and a registered pull Worker for ``flows``.

    Args:
        flows: Flow instances (with unique types) served by the Worker.
        address: Engine address ``host:port``.
        cache_dir: Empty directory for the BlobCache.
        async_worker: Run an ``AsyncWorker`` on a loop thread instead of a sync ``Worker``.
        credential: Bearer credential for the Client and the Worker.

    Returns:
        A Harness whose Worker finished pull registration; ``close()`` tears it down.
    """
    closers: list[Callable[[], None]] = []
    try:
        registry = Registry(list(flows), allow_async_handlers=async_worker)
        cache = open_blob_cache(BlobCacheConfig(str(cache_dir), 64 * 1024 * 1024))
        closers.append(cache.close)
        worker_options = WorkerOptions(server_address=address, pull=pull_options(), credential=credential)
        runner: _SyncRunner | _AsyncRunner
        if async_worker:
            loop = LoopThread()
            closers.append(loop.close)

            async def build() -> AsyncWorker:
                return AsyncWorker(registry, cache, worker_options)  # its aio channel binds to this loop

            runner = _AsyncRunner(loop.call(build()), loop)
        else:
            runner = _SyncRunner(Worker(registry, cache, worker_options))
        runner.start()
        closers.append(runner.stop)
        client = Client(registry, cache, ClientOptions(
            server_address=address, worker_target=WorkerTarget(pull=True), credential=credential))
        closers.append(client.close)
    except BaseException:
        for closer in reversed(closers):
            with contextlib.suppress(BaseException):
                closer()
        raise
    return Harness(registry=registry, cache=cache, client=client, address=address,
                   credential=credential, worker_is_async=async_worker, _runner=runner,
                   _closers=closers)
