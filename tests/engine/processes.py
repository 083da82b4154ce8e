"""Child processes of the suite: pull Workers that a test can SIGKILL at an exact point.

A :class:`WorkerProcess` runs ``python -m tests.engine.worker_child`` in its own process group
(new session), waits for its ready line on stdout, and kills the whole group on ``kill()``.
Every process started here is killed at interpreter exit if a test left it running.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dex

from tests.engine.harness import WAIT_SECONDS

READY_PREFIX = "worker ready "
REPO_ROOT = Path(__file__).resolve().parents[2]
_LIVE: set[subprocess.Popen[str]] = set()


def engine_is_healthy(address: str, tmp_path: Path) -> bool:
    """Ask the engine at ``address`` for its health with a throwaway Client (cache under ``tmp_path``)."""
    cache = dex.open_blob_cache(dex.BlobCacheConfig(str(tmp_path / "blobs"), 1 << 20))
    client = dex.Client(dex.Registry([]), cache, dex.ClientOptions(server_address=address))
    try:
        return client.health_check()
    finally:
        client.close()
        cache.close()


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(WAIT_SECONDS)
    _LIVE.discard(process)


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_LIVE):
        _kill_group(process)


class WorkerProcess:
    """A pull Worker child serving one ``KillFlow`` type (see ``tests.engine.worker_child``)."""

    def __init__(self, process: subprocess.Popen[str], log_path: Path) -> None:
        self._process = process
        self._log_path = log_path

    @property
    def pid(self) -> int:
        """The child's pid (also its process-group id)."""
        return self._process.pid

    @classmethod
    def start(cls, *, address: str, flow_type: str, gate_dir: Path, token_file: Path | None = None,
              timeout: float = WAIT_SECONDS) -> WorkerProcess:
        """Start the child and return once it printed its ready line (Worker registered)."""
        log_path = gate_dir / f"worker-{time.monotonic_ns()}.log"
        command = [sys.executable, "-m", "tests.engine.worker_child", "--address", address,
                   "--flow-type", flow_type, "--gate-dir", str(gate_dir)]
        if token_file is not None:
            command += ["--token-file", str(token_file)]
        with log_path.open("w") as log:
            process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=log, text=True,
                                       start_new_session=True)
        _LIVE.add(process)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(process.stdout.readline() if process.stdout else ""),
                                  daemon=True)
        reader.start()
        reader.join(timeout)
        if not lines or not lines[0].startswith(READY_PREFIX):
            _kill_group(process)
            raise AssertionError(f"worker child not ready within {timeout:.0f}s; stdout {lines!r}; "
                                 f"log: {log_path.read_text()[-3000:]}")
        return cls(process, log_path)

    def kill(self) -> None:
        """SIGKILL the child's whole process group and reap it."""
        _kill_group(self._process)

    def stop(self) -> None:
        """SIGTERM (graceful Worker stop), then SIGKILL if it lingers."""
        if self._process.poll() is None:
            try:
                os.killpg(self._process.pid, signal.SIGTERM)
                self._process.wait(15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        _kill_group(self._process)
