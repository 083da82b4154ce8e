"""Worker child processes a test can SIGKILL at an exact point, or stop gracefully.

A thin layer over the product's ``dex_agents.serving.processes.WorkerProcess`` for a test's own
Worker child module (``python -m <entry_module>``, which calls ``run_agent_worker_process``).

Invariants: those of ``WorkerProcess`` (own process group, stdin pipe held only by this process,
``start`` returns once the child printed ``WORKER_READY_LINE`` after this start began, every child
still running at interpreter exit is SIGKILLed); the child gets ``DEX_SERVER_ADDRESS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, final

from dex_agents.client.connection import SERVER_ADDRESS_ENV
from dex_agents.serving.processes import STOP_GRACE_SECONDS, WorkerProcess
from dex_agents.serving.processes import WorkerStartError as WorkerStartError
from dex_agents.serving.processes import log_tail as log_tail

__all__ = ["WORKER_READY_LINE", "KillableWorkerProcess", "WorkerStartError", "log_tail"]

TEST_WORKER_LABEL: Final = "dex-agents test Worker"
"""How a test's Worker child names itself (``run_agent_worker_process``)."""

WORKER_READY_LINE: Final = f"{TEST_WORKER_LABEL} ready"
"""How the line a test's Worker child prints (and flushes) once its Worker is registered starts."""


@final
class KillableWorkerProcess:
    """A test's Worker child in its own process group; build it with ``KillableWorkerProcess.start``."""

    def __init__(self, process: WorkerProcess) -> None:
        """Wrap a started child; use ``KillableWorkerProcess.start``."""
        self._process = process
        self.pid = process.pid
        self.log_path = process.log_path

    @classmethod
    def start(cls, *, entry_module: str, server_address: str, log_path: Path,
              environment: Mapping[str, str] | None = None, ready_timeout: float = 30.0,
              working_directory: Path | None = None) -> KillableWorkerProcess:
        """Run ``python -m entry_module`` and wait until it prints ``WORKER_READY_LINE``.

        Args:
            entry_module: Module whose ``__main__`` runs the Worker and prints the ready line.
            server_address: Dex server ``host:port``, passed as ``DEX_SERVER_ADDRESS``.
            log_path: File the child's stdout and stderr are appended to (created when absent).
            environment: Variables added to this process's environment for the child.
            ready_timeout: Seconds to wait for the ready line.
            working_directory: The child's working directory; default this process's.

        Raises:
            WorkerStartError: The child exited, or printed no ready line within ``ready_timeout``
                (it is killed then); the message includes the log's tail.
        """
        process = WorkerProcess.start(
            ["-m", entry_module], log_path=log_path,
            environment={**(environment or {}), SERVER_ADDRESS_ENV: server_address},
            ready_prefix=WORKER_READY_LINE, ready_timeout=ready_timeout, working_directory=working_directory)
        return cls(process)

    @property
    def returncode(self) -> int | None:
        """The child's exit status (negative: killed by that signal), or ``None`` while it runs."""
        return self._process.returncode

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the child (idempotent)."""
        self._process.kill()

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM the group, wait up to ``grace`` seconds for the child to drain and exit, then
        SIGKILL whatever is left of the group and reap (idempotent)."""
        self._process.stop(grace)

    def __repr__(self) -> str:
        return f"KillableWorkerProcess(pid={self.pid}, returncode={self.returncode}, log_path={self.log_path!r})"
