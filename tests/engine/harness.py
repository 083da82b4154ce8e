"""Shared helpers of the engine conformance suite: probes, gates, polling, worker harnesses.

Everything here uses only the public API of dex-python-sdk 1.23.0, so the suite runs unchanged
against a real Dex server (``DEX_SERVER_ADDRESS``) and against the local engine. Invariants:
every helper waits with a deadline (no bare sleeps as synchronisation) and every resource it
opens is closed by the harness teardown, even when a test fails half way.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

from dex import (
    AsyncWorker,
    BlobCache,
    BlobCacheConfig,
    Client,
    ClientOptions,
    Credential,
    Flow,
    FlowResult,
    PullWorkerOptions,
    Registry,
    Worker,
    WorkerOptions,
    WorkerTarget,
    open_blob_cache,
)
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

StartT = TypeVar("StartT")
T = TypeVar("T")

WAIT_SECONDS = 30.0
"""Upper bound for anything the suite waits for; reaching it means the behaviour is missing."""

FLOW_WAIT = timedelta(seconds=30)
"""Server-side long-poll bound for ``wait_for_flow``."""

GATE_SECONDS = 40.0
"""How long a gated handler blocks at most before giving up on its own."""


def eventually(predicate: Callable[[], T | None], *, what: str, timeout: float = WAIT_SECONDS) -> T:
    """Poll ``predicate`` until it returns a value other than ``None``/``False``, or fail.

    Args:
        predicate: Called repeatedly; exceptions propagate.
        what: Description used in the failure message.
        timeout: Seconds before the assertion fails.

    Returns:
        The first truthy result.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


def retry_until(action: Callable[[], T], *, what: str, timeout: float = WAIT_SECONDS,
                retry_on: tuple[type[BaseException], ...] = (Exception,)) -> T:
    """Call ``action`` until it stops raising one of ``retry_on``; re-raise after the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return action()
        except retry_on:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s: {what}") from None
            time.sleep(0.05)


class Probe:
    """Thread-safe event log that Step and RPC handlers write and tests read and await."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._events: list[tuple[str, object]] = []

    def record(self, name: str, value: object = None) -> None:
        """Append one named event and wake waiters."""
        with self._condition:
            self._events.append((name, value))
            self._condition.notify_all()

    def values(self, name: str) -> list[object]:
        """Return the values recorded under ``name``, in order."""
        with self._condition:
            return [value for key, value in self._events if key == name]

    def names(self) -> list[str]:
        """Return all event names in recording order."""
        with self._condition:
            return [key for key, _ in self._events]

    def wait(self, name: str, count: int = 1, timeout: float = WAIT_SECONDS) -> list[object]:
        """Block until ``name`` was recorded ``count`` times; return its values."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                found = [value for key, value in self._events if key == name]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"timed out waiting for {count} x {name!r}; recorded: {self._events!r}")
                self._condition.wait(remaining)


class Gate:
    """A latch that gated handlers block on; tests open it (teardown always opens it)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def open(self) -> None:
        """Release every current and future waiter."""
        self._event.set()

    def is_open(self) -> bool:
        """Return whether the gate was opened."""
        return self._event.is_set()

    def block(self, should_stop: Callable[[], bool] = lambda: False) -> bool:
        """Wait until opened, ``should_stop()`` holds, or ``GATE_SECONDS`` pass; True if opened."""
        deadline = time.monotonic() + GATE_SECONDS
        while time.monotonic() < deadline:
            if self._event.wait(0.05):
                return True
            if should_stop():
                return False
        return False

    async def block_async(self) -> bool:
        """Async variant of :meth:`block` (polls without blocking the event loop)."""
        deadline = time.monotonic() + GATE_SECONDS
        while time.monotonic() < deadline:
            if self._event.is_set():
                return True
            await asyncio.sleep(0.05)
        return False


class NamedFlow(Flow[StartT]):
    """A Flow whose type name is chosen per test (Flow types must be unique on a server).

    Each instance carries its own :class:`Probe` and :class:`Gate`, which its Steps reach
    through the Flow they were built with.
    """

    def __init__(self, flow_type: str) -> None:
        self._flow_type = flow_type
        self.probe = Probe()
        self.gate = Gate()

    def get_flow_type(self) -> str:
        """Return the per-test unique Flow type."""
        return self._flow_type


_COUNTER = itertools.count(1)
_RUN_TAG = uuid.uuid4().hex[:8]


def unique_name(prefix: str) -> str:
    """Return a name unique on the server across test runs: ``<prefix>-<run>-<n>``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", prefix)[:40]
    return f"{safe}-{_RUN_TAG}-{next(_COUNTER)}"


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
        """Wait (long-poll, bounded) for the Flow to close and return its result."""
        return self.client.wait_for_flow(flow_id, timeout=FLOW_WAIT)

    def history(self, flow_id: str) -> list[pb.FlowHistoryEvent]:
        """Read the whole history with the raw FlowService stub (the Client has no history API)."""
        return read_history(self.address, flow_id, self.credential)

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


def read_history(address: str, flow_id: str, credential: Credential | None = None,
                 run_id: str = "") -> list[pb.FlowHistoryEvent]:
    """Page through ``GetHistoryEvents`` and return every event in server order."""
    import grpc

    metadata: tuple[tuple[str, str], ...] = ()
    if credential is not None:
        token = credential.token()
        assert isinstance(token, str)
        metadata = (("authorization", "Bearer " + token),)
    events: list[pb.FlowHistoryEvent] = []
    with grpc.insecure_channel(address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)  # type: ignore[no-untyped-call]
        token_bytes = b""
        while True:
            response = cast(pb.GetHistoryEventsResponse, stub.GetHistoryEvents(
                pb.GetHistoryEventsRequest(flow_id=flow_id, run_id=run_id, next_page_token=token_bytes),
                metadata=metadata, timeout=WAIT_SECONDS))
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


@dataclass(frozen=True)
class Box(Generic[T]):
    """An immutable holder used to hand one value from a helper thread to a test."""

    value: T


def in_thread(action: Callable[[], T]) -> Callable[[float], T]:
    """Run ``action`` in a daemon thread; return a joiner that yields its result or raises."""
    outcome: list[Box[T]] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(Box(action()))
        except BaseException as error:  # noqa: BLE001 - re-raised in join
            failure.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout: float = WAIT_SECONDS) -> T:
        thread.join(timeout)
        if thread.is_alive():
            raise AssertionError("background call did not finish in time")
        if failure:
            raise failure[0]
        return outcome[0].value

    return join


@contextlib.contextmanager
def opened(harness: Harness) -> Iterator[Harness]:
    """Context manager form of a Harness."""
    try:
        yield harness
    finally:
        harness.close()
