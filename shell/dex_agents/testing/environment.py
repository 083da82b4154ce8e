"""``AgentTestEnvironment``: Registry, BlobCache, Client and an optional in-process Worker for tests.

Invariants:
    * The Registry comes from ``session_registry(flows)``, so the Client and every Worker (in this
      process or a child) use the same session codecs.
    * The Client advertises the pull target, so sessions it starts are served by pull Workers only.
    * At most one in-process ``AsyncWorker`` runs at a time, on a daemon thread running its own
      event loop; it is built on that loop (its gRPC channel binds to the loop) and is registered
      before ``start``/``start_worker`` return.
    * ``close`` (idempotent) stops the Worker, closes every session client it handed out, the
      Client and the BlobCache, stops the loop thread and removes the temporary directory: nothing
      the environment made outlives it.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import CancelledError, Future
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar, final

from dex import AsyncWorker, BlobCache, BlobCacheConfig, Client, ClientOptions, Registry, WorkerTarget, open_blob_cache

from dex_agents.client.shared import run_all
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.sdk_private import large_message_channels
from dex_agents.shell.worker import DEFAULT_MAX_CONCURRENT_TASKS, session_registry, session_worker
from dex_agents.testing.session_client import AgentSessionTestClient

__all__ = ["AgentTestEnvironment"]

T = TypeVar("T")

BLOB_CACHE_BYTES: Final = 64 * 1024 * 1024
"""Size bound of the environment's BlobCache."""

WORKER_REGISTRATION_SECONDS: Final = 30.0
"""How long ``start``/``start_worker`` wait for the in-process Worker's pull registration."""

WORKER_STOP_SECONDS: Final = 60.0
"""Upper bound on a graceful Worker stop (the SDK drains running tasks for up to 30 s)."""


@final
class _LoopThread:
    """An asyncio event loop running on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="dex-agents-test-worker", daemon=True)
        self._thread.start()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        return self.submit(coroutine).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(WORKER_STOP_SECONDS)
        if not self._thread.is_alive():
            self.loop.close()


class WorkerServingError(RuntimeError):
    """The in-process Worker's serving task ended with an error (raised when the Worker stops)."""


@final
class _InProcessWorker:
    """One registered ``AsyncWorker`` on the loop thread, with its serving task."""

    def __init__(self, worker: AsyncWorker, serving: Future[None]) -> None:
        self.worker = worker
        self.serving = serving

    @classmethod
    def start(cls, loop: _LoopThread, build: Callable[[], AsyncWorker]) -> _InProcessWorker:
        async def construct() -> AsyncWorker:
            return build()  # on the loop: the Worker's grpc.aio channel binds to it

        worker = loop.call(construct(), WORKER_REGISTRATION_SECONDS)
        running = cls(worker, loop.submit(worker.start()))
        try:
            loop.call(worker.wait_pull_registered(timeout=WORKER_REGISTRATION_SECONDS),
                      WORKER_REGISTRATION_SECONDS + 5)
        except BaseException:
            running.stop(loop)
            raise
        return running

    def stop(self, loop: _LoopThread) -> None:
        """Drain and close the Worker, then collect its serving task: an error it stopped with is
        raised (as ``WorkerServingError``), so a test whose Worker failed underneath it fails."""
        try:
            loop.call(self.worker.close(), WORKER_STOP_SECONDS)
        finally:
            try:
                self.serving.result(WORKER_STOP_SECONDS)
            except CancelledError:
                pass
            except Exception as error:
                raise WorkerServingError(f"the in-process Worker stopped with an error: {error!r}") from error


@final
class AgentTestEnvironment:
    """The Client side (and optionally the Worker) of agent sessions in a test.

    Build it with ``AgentTestEnvironment.start``; use it as a context manager or call ``close``.

    Attributes:
        server_address: The Dex server (``host:port``).
        flows: The session Flows served, in the order given.
        registry: The Registry of ``flows`` with the session codecs.
        blob_cache: The BlobCache shared by the Client and the in-process Worker.
        client: A sync Client advertising the pull Worker target.
    """

    def __init__(self, *, server_address: str, flows: Sequence[AgentSessionFlow], max_concurrent_tasks: int,
                 directory: Path, registry: Registry, blob_cache: BlobCache, client: Client) -> None:
        """Wrap opened parts; use ``AgentTestEnvironment.start``."""
        self.server_address = server_address
        self.flows: tuple[AgentSessionFlow, ...] = tuple(flows)
        self.registry = registry
        self.blob_cache = blob_cache
        self.client = client
        self._max_concurrent_tasks = max_concurrent_tasks
        self._directory = directory
        self._loop: _LoopThread | None = None
        self._worker: _InProcessWorker | None = None
        self._session_clients: list[AgentSessionTestClient] = []
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def start(cls, *, server_address: str, flows: Sequence[AgentSessionFlow], is_worker_in_process: bool = True,
              max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS) -> AgentTestEnvironment:
        """Open the Registry, BlobCache and Client, and start a registered in-process Worker if asked.

        Args:
            server_address: The Dex server (``host:port``), for example ``PrivateDexEngine.server_address``.
            flows: Session Flows with distinct Flow types (unique on the server).
            is_worker_in_process: Serve ``flows`` from this process; ``False`` when a Worker child
                (``run_agent_worker_process``) serves them.
            max_concurrent_tasks: Task slots of the in-process Worker.

        Raises:
            ValueError: ``flows`` is empty.
            TimeoutError: The in-process Worker did not register in time.
            RuntimeError: The in-process Worker could not start (for example, no server answered).
        """
        if not flows:
            raise ValueError("an AgentTestEnvironment needs at least one Flow")
        directory = Path(tempfile.mkdtemp(prefix="dex-agents-test-environment-"))
        try:
            registry = session_registry(flows)
            blob_cache = open_blob_cache(BlobCacheConfig(str(directory / "blob-cache"), BLOB_CACHE_BYTES))
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        try:
            with large_message_channels():  # a snapshot of a session with megabytes of history
                client = Client(registry, blob_cache, ClientOptions(server_address=server_address,
                                                                    worker_target=WorkerTarget(pull=True)))
        except BaseException:
            blob_cache.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        environment = cls(server_address=server_address, flows=flows, max_concurrent_tasks=max_concurrent_tasks,
                          directory=directory, registry=registry, blob_cache=blob_cache, client=client)
        if is_worker_in_process:
            try:
                environment.start_worker()
            except BaseException:
                environment.close()
                raise
        return environment

    @property
    def is_worker_running(self) -> bool:
        """Whether an in-process Worker is running."""
        return self._worker is not None

    def start_worker(self) -> None:
        """Start a new in-process Worker and wait for its pull registration (for example after
        ``stop_worker``, to test that a session survives a Worker restart).

        Raises:
            RuntimeError: A Worker is already running, the environment is closed, or the Worker
                could not start.
            TimeoutError: The Worker did not register in time.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("the AgentTestEnvironment is closed")
            if self._worker is not None:
                raise RuntimeError("an in-process Worker is already running; stop_worker() first")
            if self._loop is None:
                self._loop = _LoopThread()
            self._worker = _InProcessWorker.start(self._loop, lambda: session_worker(
                self.registry, self.blob_cache, self.server_address, max_concurrent_tasks=self._max_concurrent_tasks))

    def stop_worker(self) -> None:
        """Stop the in-process Worker gracefully (running tasks drain first); no-op when none runs."""
        with self._lock:
            worker, self._worker = self._worker, None
            if worker is not None and self._loop is not None:
                worker.stop(self._loop)

    def sessions(self, flow: AgentSessionFlow, *, timeout: float = 30.0) -> AgentSessionTestClient:
        """An ``AgentSessionTestClient`` for ``flow`` on this environment's Client (closed by ``close``).

        Raises:
            ValueError: ``flow`` is not one of this environment's Flows.
        """
        if not any(flow is served for served in self.flows):
            raise ValueError(f"Flow {flow.get_flow_type()!r} is not one of this environment's Flows")
        session_client = AgentSessionTestClient(self.client, flow, server_address=self.server_address,
                                                timeout=timeout)
        with self._lock:
            self._session_clients.append(session_client)
        return session_client

    def close(self) -> None:
        """Stop the Worker, then close session clients, Client, BlobCache and loop thread, and remove
        the temporary directory (idempotent). Every step runs even if an earlier one fails; the first
        failure is raised at the end."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        run_all([self.stop_worker, *(session_client.close for session_client in self._session_clients),
                 self.client.close, self.blob_cache.close, self._close_loop,
                 lambda: shutil.rmtree(self._directory, ignore_errors=True)])

    def _close_loop(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def __enter__(self) -> AgentTestEnvironment:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        flow_types = [flow.get_flow_type() for flow in self.flows]
        return (f"AgentTestEnvironment(server_address={self.server_address!r}, flows={flow_types!r}, "
                f"is_worker_running={self.is_worker_running}, closed={self._closed})")
