"""Start the local engine from Python: in this process, or as a child process in its own group.

Invariants:
    * ``start_engine`` yields an engine that already serves; leaving the ``with`` block stops it and
      removes the temporary database directory it made (a caller's ``db_path`` is kept).
    * An ``EngineProcess`` runs ``python -m dex_agents.engine.cli engine`` in a new session (its own
      process group), logging to a file; ``start`` returns only once the ready line is in the log,
      and fails with the log's tail when the child exits or the timeout passes first.
    * Every child still running when this interpreter exits is killed (``atexit``); and a child
      whose parent died without running ``atexit`` (SIGKILL) stops by itself when its stdin, a pipe
      held only by the parent, reaches end of file. A crashed test run leaves no engine behind.
    * A default (temporary) log is removed when the child stops, is killed, or fails to start (the
      error carries its tail); only a parent killed outright leaves it behind. A given log is kept.
    * Both ways of starting create a missing database directory, so ``start_engine(db_path)``
      behaves the same in process and as a child (the command line alone refuses one, exit 2).
    * Importing this module imports neither grpc nor the server: a process that only launches
      children (``EngineProcess``) never pays for them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Protocol, final

from dex_agents.engine.durability import Durability
from dex_agents.engine.timing import EngineTiming

__all__ = ["READY_PREFIX", "EngineProcess", "EngineStartError", "RunningEngine", "start_engine"]

LOOPBACK: Final = "127.0.0.1"
READY_PREFIX: Final = "dex-agents engine ready on "
"""The CLI's ready line: READY_PREFIX + host:port, then ``; durability <level description>``."""
_READY_PATTERN: Final = re.compile(re.escape(READY_PREFIX) + r"(?P<host>\S+):(?P<port>\d+)(?:;[^\n]*)?$", re.M)
_POLL_SECONDS: Final = 0.01
_STOP_GRACE_SECONDS: Final = 10.0
_LOG_TAIL_BYTES: Final = 4000


class RunningEngine(Protocol):
    """What ``start_engine`` yields: a serving engine's address (``127.0.0.1:<port>``)."""

    @property
    def address(self) -> str: ...

    @property
    def port(self) -> int: ...


class EngineStartError(RuntimeError):
    """The engine child did not become ready; the message carries its log tail."""


def _log_tail(path: Path) -> str:
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - _LOG_TAIL_BYTES))
            return log.read().decode("utf-8", "replace").strip() or "(log is empty)"
    except OSError as error:
        return f"(log unreadable: {error})"


_live: set[EngineProcess] = set()
_live_lock = threading.Lock()


def _kill_leftovers() -> None:
    with _live_lock:
        leftovers = list(_live)
    for engine in leftovers:
        engine.kill()


atexit.register(_kill_leftovers)


@final
class EngineProcess:
    """The engine as a child process in its own process group (so tests can SIGKILL it whole)."""

    def __init__(self, process: subprocess.Popen[bytes], *, port: int, log_path: Path, owns_log: bool) -> None:
        """Wrap a started, ready child; use ``EngineProcess.start``."""
        self._process = process
        self.port = port
        self.address = f"{LOOPBACK}:{port}"
        self.pid = process.pid
        self.log_path = log_path
        self._owns_log = owns_log

    @classmethod
    def start(
        cls,
        db_path: Path,
        *,
        port: int = 0,
        token_file: Path | None = None,
        log_path: Path | None = None,
        ready_timeout: float = 30.0,
        durability: Durability = Durability.POWER_LOSS,
    ) -> EngineProcess:
        """Start the engine child on ``127.0.0.1`` and wait for its ready line.

        Args:
            db_path: SQLite database (created when absent, with its directory; reused to recover
                after a kill).
            port: Port to bind; 0 lets the child pick a free one, read back from the ready line.
            token_file: Require this bearer token on every call.
            log_path: Where the child's stdout and stderr go; default a temporary file, removed
                when the child is stopped or killed or fails to start.
            ready_timeout: Seconds to wait for the ready line.
            durability: What a commit survives (``--durability``); the default fsyncs every commit.

        Raises:
            EngineStartError: The child exited or stayed silent past ``ready_timeout``
                (the message includes the log's tail).
        """
        db_path.parent.mkdir(parents=True, exist_ok=True)
        owns_log = log_path is None
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="dex-agents-engine-", suffix=".log")
            os.close(fd)
            log_path = Path(name)
        command = [
            sys.executable,
            "-m",
            "dex_agents.engine.cli",
            "engine",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--db",
            str(db_path),
            "--stop-on-stdin-eof",
            "--durability",
            durability.value,
        ]
        if token_file is not None:
            command += ["--token-file", str(token_file)]
        with log_path.open("ab") as log:
            offset = log.tell()
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # closes when this process dies, however it dies
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            bound = cls._await_ready(process, log_path, offset, ready_timeout,
                                     "log (temporary, removed)" if owns_log else f"log {log_path}")
        except EngineStartError:
            if owns_log:
                with contextlib.suppress(OSError):
                    log_path.unlink()
            raise
        engine = cls(process, port=bound, log_path=log_path, owns_log=owns_log)
        with _live_lock:
            _live.add(engine)
        return engine

    @staticmethod
    def _await_ready(
        process: subprocess.Popen[bytes], log_path: Path, offset: int, timeout: float, log_name: str
    ) -> int:
        deadline = time.monotonic() + timeout
        while True:
            with log_path.open("rb") as log:
                log.seek(offset)
                match = _READY_PATTERN.search(log.read().decode("utf-8", "replace"))
            if match is not None:
                return int(match.group("port"))
            status = process.poll()
            if status is not None:
                raise EngineStartError(
                    f"engine exited with status {status} before it was ready; {log_name}:\n"
                    f"{_log_tail(log_path)}"
                )
            if time.monotonic() >= deadline:
                _kill_group(process)
                raise EngineStartError(
                    f"engine printed no ready line within {timeout:g} s (killed); {log_name}:\n"
                    f"{_log_tail(log_path)}"
                )
            time.sleep(_POLL_SECONDS)

    @property
    def returncode(self) -> int | None:
        """The child's exit status, or ``None`` while it runs."""
        return self._process.poll()

    def kill(self) -> None:
        """SIGKILL the whole process group and wait for the child to exit."""
        _kill_group(self._process)
        self._forget()

    def stop(self) -> None:
        """SIGTERM the child (graceful stop), then SIGKILL the group after a grace period."""
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(timeout=_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        _kill_group(self._process)
        self._forget()

    def _forget(self) -> None:
        with _live_lock:
            _live.discard(self)
        if self._owns_log:
            with contextlib.suppress(OSError):
                self.log_path.unlink()

    def __repr__(self) -> str:
        return f"EngineProcess(pid={self.pid}, address={self.address!r}, returncode={self.returncode})"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's group unless the child was already reaped (its pid may be reused)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


@contextlib.contextmanager
def start_engine(
    db_path: Path | None = None,
    *,
    token_file: Path | None = None,
    in_process: bool = True,
    port: int = 0,
    durability: Durability = Durability.POWER_LOSS,
    timing: EngineTiming | None = None,
) -> Iterator[RunningEngine]:
    """Run the engine for the duration of a ``with`` block, on ``127.0.0.1``.

    Args:
        db_path: SQLite database; ``None`` uses a temporary directory removed on exit. A missing
            directory is created (in process and as a child alike).
        token_file: Require this bearer token (the SDK's ``FileCredential`` file) on every call.
        in_process: ``True`` serves from this process; ``False`` runs an ``EngineProcess``.
        port: Port to bind; 0 picks a free one.
        durability: What a commit survives; the default fsyncs every commit.
        timing: The engine's timing policy (in process only; ``None`` is Dex's timings). Tests
            shorten it (see ``EngineTiming``).

    Yields:
        The serving engine; ``.address`` is ``127.0.0.1:<port>``.

    Raises:
        TokenFileError: ``token_file`` is unusable (in process).
        DatabaseError: the database cannot be opened for writing (in process).
        OSError: the port cannot be bound (in process).
        EngineStartError: The child engine did not become ready (child process).
        ValueError: ``timing`` was given for a child process.
    """
    if timing is not None and not in_process:
        raise ValueError("timing= applies to an in-process engine only")
    with contextlib.ExitStack() as stack:
        if db_path is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="dex-agents-engine-"))
            db_path = Path(directory) / "engine.sqlite3"
        if in_process:
            from dex_agents.engine.auth import BearerTokenInterceptor  # grpc: in process only
            from dex_agents.engine.server import EngineServer

            interceptors = [] if token_file is None else [BearerTokenInterceptor.from_path(token_file)]
            server = EngineServer(db_path, host=LOOPBACK, port=port, interceptors=interceptors,
                                  durability=durability, timing=timing)
            server.start()
            stack.callback(server.stop)
            yield server
        else:
            process = EngineProcess.start(db_path, port=port, token_file=token_file, durability=durability)
            stack.callback(process.stop)
            yield process
