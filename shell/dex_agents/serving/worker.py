"""``run_worker``: serve agents' sessions from this process until it is told to stop.

The body of ``dex-agents worker`` (and of the Worker children of ``dex-agents demo``/``chat`` and of
tests): one pull ``AsyncWorker`` (``session_worker``) for the given Flows.

Invariants:
    * Every Flow can serve sessions (not a ``session_flow_definition``), their Flow types are
      distinct, and the task slots are a positive int; otherwise ``ValueError`` before anything starts.
    * The ready line ``<label> ready: serving <types> on <server> (<n> task slots)`` is printed (and
      flushed) only after the Worker's pull registration; a ``progress`` callback, when given, is told
      before it connects and once it is registered (before the ready line).
    * SIGTERM or SIGINT (or, when asked, end of file on a piped stdin: the launching process is gone)
      stops the Worker gracefully: running tasks drain, then ``<label> stopped (<reason>)`` is
      printed and the function returns. A Worker that fails or stops by itself raises instead.
    * The BlobCache lives in a temporary directory (under ``TMPDIR``) removed on every exit except
      SIGKILL.
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

import grpc
from dex import AsyncWorker, BlobCacheConfig, Credential, open_blob_cache

from dex_agents.logs import server_back
from dex_agents.shell.error_chain import error_chain
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.worker import DEFAULT_MAX_CONCURRENT_TASKS, session_registry, session_worker

__all__ = ["REGISTRATION_SECONDS", "WORKER_LABEL", "WorkerCredentialError", "check_servable", "ready_line", "run_worker"]

WORKER_LABEL: Final = "dex-agents worker"
"""How the product's Worker names itself in its ready and stopped lines."""

REGISTRATION_SECONDS: Final = 30.0
"""How long the Worker may take to register with the server before the process fails."""

_BLOB_CACHE_BYTES: Final = 64 * 1024 * 1024
_REGISTRATION_POLL_SECONDS: Final = 0.5
_STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


class WorkerCredentialError(RuntimeError):
    """The Dex server refused the Worker's credential (``UNAUTHENTICATED``/``PERMISSION_DENIED``):
    none was sent (``missing``) or it is not the server's token.

    Attributes:
        server_address: The server that refused it.
        missing: True when the Worker sent no credential.
    """

    def __init__(self, server_address: str, *, missing: bool, detail: str) -> None:
        what = "no credential was sent (missing)" if missing else "the token sent is wrong"
        super().__init__(f"the Dex server at {server_address} refused the Worker's credential: {what}: {detail}")
        self.server_address = server_address
        self.missing = missing


def _refused_credential(error: BaseException, server_address: str, credential: Credential | None
                        ) -> WorkerCredentialError | None:
    """The credential error behind a failed start (the SDK reports it as a protocol mismatch), if it is one."""
    for current in error_chain(error):
        code = getattr(current, "code", None)
        if isinstance(current, grpc.RpcError) and callable(code) and code() in (
                grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            details = getattr(current, "details", None)
            detail = str(details() if callable(details) else current)
            return WorkerCredentialError(server_address, missing=credential is None, detail=detail)
    return None


def ready_line(label: str, flows: Sequence[AgentSessionFlow], server_address: str, task_slots: int) -> str:
    """The line printed once the Worker is registered; it starts with ``f"{label} ready"``."""
    flow_types = ", ".join(flow.get_flow_type() for flow in flows)
    return f"{label} ready: serving {flow_types} on {server_address} ({task_slots} task slots)"


def check_servable(flows: Sequence[AgentSessionFlow], task_slots: int) -> None:
    """Raise ``ValueError`` unless a Worker can serve ``flows`` with ``task_slots`` slots."""
    if not flows:
        raise ValueError("a Worker needs at least one agent Flow")
    for flow in flows:
        if not flow.serves_sessions:
            raise ValueError(f"Flow type {flow.get_flow_type()!r} is a Client's definition (session_flow_definition) "
                             f"with no runner; a Worker serves the Flow from create_agent_session_flow")
    flow_types = [flow.get_flow_type() for flow in flows]
    duplicates = sorted({flow_type for flow_type in flow_types if flow_types.count(flow_type) > 1})
    if duplicates:
        raise ValueError(f"two agents share the Flow type {', '.join(duplicates)}; each needs its own")
    if type(task_slots) is not int or task_slots < 1:
        raise ValueError(f"task slots must be a positive int, got {task_slots!r}")


def run_worker(flows: Sequence[AgentSessionFlow], server_address: str, *,
               task_slots: int = DEFAULT_MAX_CONCURRENT_TASKS, credential: Credential | None = None,
               label: str = WORKER_LABEL, stop_on_stdin_eof: bool = False,
               progress: Callable[[str], None] | None = None) -> str:
    """Serve ``flows`` from this process until SIGTERM or SIGINT (see the module docstring).

    Args:
        flows: The agents' session Flows (distinct Flow types).
        server_address: The Dex server, ``host:port``.
        task_slots: Tasks the Worker runs at once (Steps and RPCs share them; one is kept for RPCs).
        credential: The server's bearer credential, if it needs one.
        label: How the Worker names itself in its ready and stopped lines.
        stop_on_stdin_eof: Also stop when a piped stdin reaches end of file (for launchers).
        progress: Told, before the ready line, when the Worker connects and when it is registered.

    Returns:
        Why it stopped (``"SIGTERM"``, ``"SIGINT"`` or ``"end of stdin"``).

    Raises:
        ValueError: see ``check_servable``.
        TimeoutError: The Worker did not register within ``REGISTRATION_SECONDS``.
        WorkerCredentialError: The server refused the Worker's credential (missing or wrong).
        RuntimeError: The Worker stopped by itself.
        BaseException: Whatever made the Worker's start fail (for example, no server answered).
    """
    check_servable(flows, task_slots)
    return asyncio.run(_serve(flows, server_address, task_slots, credential, label, stop_on_stdin_eof,
                              progress or _quiet))


def _quiet(_: str) -> None:
    """No progress lines (a Worker started by code prints only its ready and stopped lines)."""


async def _serve(flows: Sequence[AgentSessionFlow], server_address: str, task_slots: int,
                 credential: Credential | None, label: str, stop_on_stdin_eof: bool,
                 progress: Callable[[str], None]) -> str:
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    reasons: list[str] = []

    def request_stop(reason: str) -> None:
        reasons.append(reason)
        stop_requested.set()

    for number in _STOP_SIGNALS:
        loop.add_signal_handler(number, request_stop, number.name)
    stdin_transport = (await _watch_stdin(loop, lambda: request_stop("end of stdin"))) if stop_on_stdin_eof else None
    directory = Path(tempfile.mkdtemp(prefix="dex-agents-worker-"))
    try:
        blob_cache = open_blob_cache(BlobCacheConfig(str(directory / "blob-cache"), _BLOB_CACHE_BYTES))
        try:
            worker = session_worker(session_registry(flows), blob_cache, server_address,
                                    max_concurrent_tasks=task_slots, credential=credential)
            flow_types = ", ".join(flow.get_flow_type() for flow in flows)
            progress(f"connecting to the Dex server at {server_address} (Flow types {flow_types})")
            try:
                await _run_until_stopped(worker, stop_requested,
                                         ready_line(label, flows, server_address, task_slots), server_address,
                                         lambda: progress(f"registered Flow types {flow_types} with {server_address}"))
            except Exception as error:
                refused = _refused_credential(error, server_address, credential)
                if refused is not None:
                    raise refused from error
                raise
            reason = ", ".join(dict.fromkeys(reasons))
            print(f"{label} stopped ({reason})", flush=True)
            return reason
        finally:
            blob_cache.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if stdin_transport is not None:
            stdin_transport.close()
        for number in _STOP_SIGNALS:
            loop.remove_signal_handler(number)


async def _watch_registration(worker: AsyncWorker, server_address: str) -> None:
    """Log once when the Worker is registered again after the server was reported unreachable."""
    while True:
        await asyncio.sleep(_REGISTRATION_POLL_SECONDS)
        queues = worker.pull_registration_state().queues
        if queues and all(queue.has_registered_stream for queue in queues):
            server_back(server_address)


async def _run_until_stopped(worker: AsyncWorker, stop_requested: asyncio.Event, ready: str,
                             server_address: str = "", registered_hook: Callable[[], None] = lambda: None) -> None:
    serving = asyncio.create_task(worker.start())
    stopping = asyncio.create_task(stop_requested.wait())
    registered = asyncio.create_task(worker.wait_pull_registered(timeout=REGISTRATION_SECONDS))
    watching: asyncio.Task[None] | None = None
    try:
        await asyncio.wait((registered, serving, stopping), return_when=asyncio.FIRST_COMPLETED)
        if registered.done() and not serving.done():
            registered.result()
            registered_hook()
            print(ready, flush=True)
            watching = asyncio.create_task(_watch_registration(worker, server_address))
            await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if watching is not None:
            watching.cancel()
        stopping.cancel()
        registered.cancel()
        await asyncio.gather(registered, return_exceptions=True)  # its failure, if any, is the start's
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
