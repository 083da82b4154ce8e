"""``WorkerProcess``: a Worker child process that can be stopped gracefully or SIGKILLed at once.

The Worker children of ``dex-agents demo`` and ``chat`` (``python -m dex_agents.cli worker ...``)
and of tests (``dex_agents.testing.KillableWorkerProcess``) run this way.

Invariants:
    * A ``WorkerProcess`` runs ``python <arguments>`` with this interpreter as a ``ChildGroup``
      (``dex_agents.engine.child_group``): in its own process group, its stdin a pipe held only by
      this process, reaped only after its group was SIGKILLed, and SIGKILLed when this interpreter exits.
    * ``start`` returns only once the child wrote a line starting with ``ready_prefix`` to the log
      after the point where this start began appending (a restart that reuses the log waits for a
      new ready line), and fails with the log's tail when the child exits or the timeout passes first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, final

from dex_agents.engine.child_group import ChildGroup, NotReady, log_tail
from dex_agents.serving.worker import WORKER_LABEL

__all__ = ["STOP_GRACE_SECONDS", "WORKER_READY_PREFIX", "WorkerProcess", "WorkerStartError", "log_tail"]

WORKER_READY_PREFIX: Final = f"{WORKER_LABEL} ready"
"""How the ready line of ``dex-agents worker`` starts."""

STOP_GRACE_SECONDS: Final = 10.0


class WorkerStartError(RuntimeError):
    """The Worker child exited or printed no ready line in time; the message carries its log tail."""


@final
class WorkerProcess:
    """A Worker child in its own process group; build it with ``WorkerProcess.start``."""

    def __init__(self, child: ChildGroup) -> None:
        """Wrap a started child; use ``WorkerProcess.start``."""
        self._child = child
        self.pid = child.pid
        self.log_path = child.log_path

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
        child, offset = ChildGroup.spawn([sys.executable, *arguments], log_path,
                                         environment={**os.environ, **(environment or {})},
                                         working_directory=working_directory)

        def ready(text: str) -> bool | None:
            return any(line.strip().startswith(ready_prefix) for line in text.splitlines()) or None

        try:
            child.await_ready(offset, ready, ready_timeout)
        except BaseException as error:
            child.kill()
            if not isinstance(error, NotReady):
                raise
            raise WorkerStartError(f"Worker child {child.pid} {error}; log {log_path}:\n{log_tail(log_path)}") from None
        return cls(child)

    @property
    def returncode(self) -> int | None:
        """The child's exit status (negative: killed by that signal), or ``None`` while it runs.

        Peeks without reaping, so a later ``kill`` still reaches the whole group.
        """
        return self._child.returncode

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the child (idempotent)."""
        self._child.kill()

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Stop gracefully: SIGTERM the group, wait up to ``grace`` seconds for the child to exit
        (the Worker drains), then SIGKILL whatever is left of the group and reap (idempotent)."""
        self._child.stop(grace)

    def __repr__(self) -> str:
        return f"WorkerProcess(pid={self.pid}, returncode={self.returncode}, log_path={self.log_path!r})"
