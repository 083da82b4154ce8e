"""``run_agent_worker_process``: the body of a Worker child module for ``KillableWorkerProcess``.

A test's Worker child module builds its Flows and calls ``run_agent_worker_process(flows)``::

    # tests/worker_main.py, run as ``python -m tests.worker_main``
    from dex_agents.testing import run_agent_worker_process
    run_agent_worker_process([build_my_agent_flow(Path(os.environ["TEST_STATE_DIR"]))])

Invariants:
    * The server comes from ``DEX_SERVER_ADDRESS`` (``KillableWorkerProcess`` sets it); without it
      the function raises before anything starts.
    * ``WORKER_READY_LINE`` is printed (and flushed) only after the Worker's pull registration.
    * SIGTERM or SIGINT, or end of file on a piped stdin (the parent died), stops the Worker
      gracefully (running tasks drain) and the function returns, so the child exits 0. A Worker that
      fails or stops by itself raises instead (non-zero exit).
    * The BlobCache lives in a temporary directory (under ``TMPDIR``) that is removed on every exit
      except SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from dex import AsyncWorker, BlobCacheConfig, open_blob_cache

from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.worker import DEFAULT_MAX_CONCURRENT_TASKS, session_registry, session_worker
from dex_agents.testing.private_engine import DEX_SERVER_ADDRESS_ENV
from dex_agents.testing.processes import WORKER_READY_LINE

__all__ = ["run_agent_worker_process"]

REGISTRATION_SECONDS: Final = 30.0
"""How long the child waits for its Worker's pull registration before it fails."""

_BLOB_CACHE_BYTES: Final = 64 * 1024 * 1024
_STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


def run_agent_worker_process(flows: Sequence[AgentSessionFlow], *,
                             max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS) -> None:
    """Serve ``flows`` from this process until SIGTERM, SIGINT or end of file on a piped stdin.

    Args:
        flows: The session Flows (distinct Flow types, the same ones the test's Client registers).
        max_concurrent_tasks: Task slots of the Worker.

    Raises:
        RuntimeError: ``DEX_SERVER_ADDRESS`` is not set, or the Worker stopped by itself.
        TimeoutError: The Worker did not register within ``REGISTRATION_SECONDS``.
        BaseException: Whatever made the Worker's start fail (for example, no server answered).
    """
    server_address = os.environ.get(DEX_SERVER_ADDRESS_ENV, "").strip()
    if not server_address:
        raise RuntimeError(f"{DEX_SERVER_ADDRESS_ENV} is not set: a Worker child needs the Dex server's "
                           f"host:port (KillableWorkerProcess.start sets it)")
    if not flows:
        raise ValueError("a Worker child needs at least one Flow")
    asyncio.run(_serve(flows, server_address, max_concurrent_tasks))


async def _serve(flows: Sequence[AgentSessionFlow], server_address: str, max_concurrent_tasks: int) -> None:
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    reasons: list[str] = []

    def request_stop(reason: str) -> None:
        reasons.append(reason)
        stop_requested.set()

    for number in _STOP_SIGNALS:
        loop.add_signal_handler(number, request_stop, number.name)
    stdin_transport = await _watch_stdin(loop, lambda: request_stop("end of stdin"))
    directory = Path(tempfile.mkdtemp(prefix="dex-agents-test-worker-"))
    try:
        blob_cache = open_blob_cache(BlobCacheConfig(str(directory / "blob-cache"), _BLOB_CACHE_BYTES))
        try:
            worker = session_worker(session_registry(flows), blob_cache, server_address,
                                    max_concurrent_tasks=max_concurrent_tasks)
            await _run_until_stopped(worker, stop_requested)
            print(f"dex-agents test Worker stopped ({', '.join(reasons)})", flush=True)
        finally:
            blob_cache.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if stdin_transport is not None:
            stdin_transport.close()
        for number in _STOP_SIGNALS:
            loop.remove_signal_handler(number)


async def _run_until_stopped(worker: AsyncWorker, stop_requested: asyncio.Event) -> None:
    serving = asyncio.create_task(worker.start())
    stopping = asyncio.create_task(stop_requested.wait())
    try:
        await worker.wait_pull_registered(timeout=REGISTRATION_SECONDS)
        print(WORKER_READY_LINE, flush=True)
        await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        await worker.close()  # drains running tasks, then closes the channel
        (failure,) = await asyncio.gather(serving, return_exceptions=True)
    if failure is not None:
        raise failure
    if not stop_requested.is_set():
        raise RuntimeError("the Worker stopped by itself before any stop was requested")


class _EndOfInput(asyncio.Protocol):
    """Calls ``on_end`` once the pipe it reads is closed (end of file or error)."""

    def __init__(self, on_end: Callable[[], None]) -> None:
        self._on_end = on_end

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_end()


async def _watch_stdin(loop: asyncio.AbstractEventLoop, on_end: Callable[[], None]) -> asyncio.BaseTransport | None:
    """Call ``on_end`` when a piped stdin reaches end of file; a terminal or ``/dev/null`` is not watched."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # no usable stdin
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    transport, _ = await loop.connect_read_pipe(lambda: _EndOfInput(on_end), sys.stdin)
    return transport
