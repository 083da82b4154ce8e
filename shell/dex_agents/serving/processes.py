"""``WorkerProcess``: a Worker child process that can be stopped gracefully or SIGKILLed at once.

The Worker children of ``dex-agents demo`` and ``chat`` (``python -m dex_agents.cli worker ...``)
and of tests (``dex_agents.testing.KillableWorkerProcess``) run this way.

Invariants:
    * A ``WorkerProcess`` runs ``python <arguments>`` with this interpreter in a new session (its
      own process group, whose id is the child's pid), so ``kill`` reaches every process the Worker
      started. Its stdin is a pipe held only by this process: when this process dies, however it
      dies, the child sees end of file and can stop by itself.
    * ``start`` returns only once the child wrote a line starting with ``ready_prefix`` to the log
      after the point where this start began appending (a restart that reuses the log waits for a
      new ready line), and fails with the log's tail when the child exits or the timeout passes first.
    * The leader is reaped only after the group was sent SIGKILL (``returncode`` peeks without
      reaping), so a group signal never reaches a recycled pid.
    * Every child still running when this interpreter exits is SIGKILLed (``atexit``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

from dex_agents.serving.worker import WORKER_LABEL

__all__ = ["STOP_GRACE_SECONDS", "WORKER_READY_PREFIX", "WorkerProcess", "WorkerStartError", "log_tail"]

WORKER_READY_PREFIX: Final = f"{WORKER_LABEL} ready"
"""How the ready line of ``dex-agents worker`` starts."""

STOP_GRACE_SECONDS: Final = 10.0
_POLL_SECONDS: Final = 0.01
_LOG_TAIL_BYTES: Final = 4000


class WorkerStartError(RuntimeError):
    """The Worker child exited or printed no ready line in time; the message carries its log tail."""


def log_tail(path: Path, limit: int = _LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of the log at ``path``, decoded leniently, for error messages."""
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - limit))
            return log.read().decode("utf-8", "replace").strip() or "(log is empty)"
    except OSError as error:
        return f"(log unreadable: {error})"


_live: set[WorkerProcess] = set()
_live_lock = threading.Lock()


def _kill_leftovers() -> None:
    with _live_lock:
        leftovers = list(_live)
    for worker in leftovers:
        worker.kill()


atexit.register(_kill_leftovers)


@final
class WorkerProcess:
    """A Worker child in its own process group; build it with ``WorkerProcess.start``."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path) -> None:
        """Wrap a started child; use ``WorkerProcess.start``."""
        self._process = process
        self.pid = process.pid
        self.log_path = log_path
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls,
        arguments: Sequence[str],
        *,
        log_path: Path,
        environment: Mapping[str, str] | None = None,
        ready_prefix: str = WORKER_READY_PREFIX,
        ready_timeout: float = 30.0,
        working_directory: Path | None = None,
    ) -> WorkerProcess:
        """Run ``python <arguments>`` and wait until it prints a line starting with ``ready_prefix``.

        Args:
            arguments: The interpreter's arguments, e.g. ``["-m", "dex_agents.cli", "worker", ...]``.
            log_path: File the child's stdout and stderr are appended to (created when absent).
            environment: Variables added to this process's environment for the child.
            ready_prefix: How the child's ready line starts.
            ready_timeout: Seconds to wait for the ready line.
            working_directory: The child's working directory; default this process's.

        Returns:
            The running, ready child.

        Raises:
            WorkerStartError: The child exited, or printed no ready line within ``ready_timeout``
                (it is killed then); the message includes the log's tail.
        """
        child_environment = {**os.environ, **(environment or {})}
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            offset = log.tell()
            process = subprocess.Popen(
                [sys.executable, *arguments],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_environment,
                cwd=working_directory,
                start_new_session=True,
            )
        worker = cls(process, log_path)
        with _live_lock:
            _live.add(worker)
        try:
            worker._await_ready(offset, ready_prefix, ready_timeout)
        except BaseException:
            worker.kill()
            raise
        return worker

    def _await_ready(self, offset: int, ready_prefix: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if _has_ready_line(self.log_path, offset, ready_prefix):
                return
            status = self.returncode
            if status is not None:
                raise WorkerStartError(
                    f"Worker child {self.pid} exited with status {status} before it was ready; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            if time.monotonic() >= deadline:
                raise WorkerStartError(
                    f"Worker child {self.pid} printed no ready line within {timeout:g} s (killed); "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            time.sleep(_POLL_SECONDS)

    @property
    def returncode(self) -> int | None:
        """The child's exit status (negative: killed by that signal), or ``None`` while it runs.

        Peeks without reaping, so a later ``kill`` still reaches the whole group.
        """
        if self._process.returncode is not None:
            return self._process.returncode
        try:
            status = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped concurrently
            return self._process.poll()
        if status is None or status.si_pid == 0:
            return None
        return status.si_status if status.si_code == os.CLD_EXITED else -status.si_status

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the child (idempotent)."""
        with self._lock:
            self._kill_and_reap()

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Stop gracefully: SIGTERM the group, wait up to ``grace`` seconds for the child to exit
        (the Worker drains), then SIGKILL whatever is left of the group and reap (idempotent)."""
        with self._lock:
            if self._process.returncode is None:
                self._signal_group(signal.SIGTERM)
                deadline = time.monotonic() + grace
                while self.returncode is None and time.monotonic() < deadline:
                    time.sleep(_POLL_SECONDS)
            self._kill_and_reap()

    def _signal_group(self, signal_number: signal.Signals) -> None:
        if self._process.returncode is None:  # not reaped: the group id cannot have been reused
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal_number)

    def _kill_and_reap(self) -> None:
        self._signal_group(signal.SIGKILL)
        self._process.wait()
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        with _live_lock:
            _live.discard(self)

    def __repr__(self) -> str:
        return f"WorkerProcess(pid={self.pid}, returncode={self.returncode}, log_path={self.log_path!r})"


def _has_ready_line(log_path: Path, offset: int, ready_prefix: str) -> bool:
    with log_path.open("rb") as log:
        log.seek(offset)
        text = log.read().decode("utf-8", "replace")
    return any(line.strip().startswith(ready_prefix) for line in text.splitlines())
