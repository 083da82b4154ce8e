"""``ChildGroup``: a child process leading its own process group, its output appended to a log file.
The engine child (``EngineProcess``) and the Worker child (``dex_agents.serving.WorkerProcess``) run
this way.

Invariants:
    * The child runs in a new session (its own process group, whose id is the child's pid), so a
      group signal reaches every process it started. Its stdin is a pipe held only by this process:
      when this process dies, however it dies, the child sees end of file and can stop by itself.
    * The leader is reaped only after the group was sent SIGKILL (``returncode`` peeks without
      reaping), so a group signal never reaches a recycled pid.
    * Every child still running when this interpreter exits is SIGKILLed (``atexit``).

Stdlib only: a process that just launches children imports neither grpc nor the SDK.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, TypeVar, final

__all__ = ["ChildGroup", "NotReady", "log_tail"]

T = TypeVar("T")
_POLL_SECONDS: Final = 0.01
_LOG_TAIL_BYTES: Final = 4000


def log_tail(path: Path, limit: int = _LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of the log at ``path``, decoded leniently, for error messages."""
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - limit))
            return log.read().decode("utf-8", "replace").strip() or "(log is empty)"
    except OSError as error:
        return f"(log unreadable: {error})"


class NotReady(Exception):
    """The child did not become ready: it exited (``status``), or ``timeout`` passed (``status`` is
    ``None``; the group was killed). Its text says which, to follow the child's name."""

    def __init__(self, status: int | None, timeout: float) -> None:
        super().__init__(f"exited with status {status} before it was ready" if status is not None
                         else f"printed no ready line within {timeout:g} s (killed)")
        self.status = status


_live: set[ChildGroup] = set()
_live_lock = threading.Lock()


def _kill_leftovers() -> None:
    with _live_lock:
        leftovers = list(_live)
    for child in leftovers:
        child.kill()


atexit.register(_kill_leftovers)


@final
class ChildGroup:
    """A running child in its own process group; build it with ``ChildGroup.spawn``."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path) -> None:
        """Wrap a started child; use ``ChildGroup.spawn``."""
        self._process = process
        self.pid = process.pid
        self.log_path = log_path
        self._lock = threading.Lock()

    @classmethod
    def spawn(cls, command: Sequence[str], log_path: Path, *, environment: Mapping[str, str] | None = None,
              working_directory: Path | None = None) -> tuple[ChildGroup, int]:
        """Start ``command`` appending its stdout and stderr to ``log_path`` (created with its
        directory when absent); the child and the log offset where its output begins."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            offset = log.tell()
            process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                       env=None if environment is None else dict(environment),
                                       cwd=working_directory, start_new_session=True)
        child = cls(process, log_path)
        with _live_lock:
            _live.add(child)
        return child, offset

    def await_ready(self, offset: int, find: Callable[[str], T | None], timeout: float) -> T:
        """What ``find`` finds in the log written since ``offset``, once it finds something.

        Raises:
            NotReady: the child exited first, or ``timeout`` seconds passed (the group is killed).
        """
        deadline = time.monotonic() + timeout
        while True:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                found = find(log.read().decode("utf-8", "replace"))
            if found is not None:
                return found
            status = self.returncode
            if status is not None:
                raise NotReady(status, timeout)
            if time.monotonic() >= deadline:
                self.kill()
                raise NotReady(None, timeout)
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

    def stop(self, grace: float) -> None:
        """SIGTERM the group, wait up to ``grace`` seconds for the child to exit, then SIGKILL whatever
        is left of the group and reap (idempotent)."""
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
        return f"ChildGroup(pid={self.pid}, returncode={self.returncode}, log_path={self.log_path!r})"
