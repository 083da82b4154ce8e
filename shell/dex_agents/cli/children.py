"""What ``demo`` and ``chat`` start for themselves: a scratch directory, a local engine, Workers.

A Worker child is ``python -m dex_agents.cli worker --agent <ref> --server <address>``: the same
command a user runs, with the hidden ``--stop-on-stdin-eof`` so it never outlives this process.

Invariants:
    * ``scratch_directory`` is removed at the end unless kept (``--debug``); the engine's database,
      the Workers' logs and their ``TMPDIR`` live in it.
    * ``WorkerChildren.stop_all`` stops every Worker started, newest first (each drains, then its
      process group is SIGKILLed if it has not exited).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from dex_agents.cli.errors import CliError
from dex_agents.serving.processes import WorkerProcess, WorkerStartError, log_tail

__all__ = ["WorkerChildren", "local_engine", "scratch_directory", "worker_arguments"]


@contextlib.contextmanager
def scratch_directory(keep: bool, console: Console) -> Iterator[Path]:
    """A temporary directory, removed at the end unless ``keep``."""
    directory = Path(tempfile.mkdtemp(prefix="dex-agents-demo-"))
    try:
        yield directory
    finally:
        if keep:
            console.print(f"kept {directory}", style="dim", highlight=False)
        else:
            shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def local_engine(directory: Path, console: Console) -> Iterator[str]:
    """The local engine as a child process with its database in ``directory``; yields its address."""
    from dex_agents.engine.launch import EngineProcess, EngineStartError

    with console.status("starting the local Dex engine..."):
        try:
            engine = EngineProcess.start(directory / "engine.sqlite3", log_path=directory / "engine.log")
        except EngineStartError as error:
            raise CliError(f"the local engine did not start: {str(error).splitlines()[0]}") from error
    try:
        console.print(f"engine: {engine.address}", style="dim", highlight=False)
        yield engine.address
    finally:
        engine.stop()


def worker_arguments(agent: str, server_address: str) -> list[str]:
    """The interpreter arguments of a Worker child serving ``agent``."""
    return ["-m", "dex_agents.cli", "worker", "--agent", agent, "--server", server_address, "--stop-on-stdin-eof"]


@dataclass
class WorkerChildren:
    """The Worker children of one command, all serving ``agent``: started in order, all stopped at the end."""

    agent: str
    server_address: str
    directory: Path
    environment: dict[str, str]
    console: Console
    started: list[WorkerProcess] = field(default_factory=list)

    def start(self, extra: dict[str, str] | None = None) -> WorkerProcess:
        """Start one more Worker (``extra`` added to its environment) and wait until it is ready."""
        number = len(self.started) + 1
        temporary = self.directory / "worker-tmp"
        temporary.mkdir(exist_ok=True)
        environment = {"TMPDIR": str(temporary), **self.environment, **(extra or {})}
        with self.console.status(f"starting Worker {number}..."):
            try:
                worker = WorkerProcess.start(worker_arguments(self.agent, self.server_address),
                                             log_path=self.directory / f"worker-{number}.log", environment=environment)
            except WorkerStartError as error:
                raise CliError(f"Worker {number} did not start: {_last_line(error.args[0])}",
                               hint="rerun with --debug to keep its log") from error
        self.started.append(worker)
        self.console.print(f"worker {number}: pid {worker.pid}", style="dim", highlight=False)
        return worker

    @property
    def current(self) -> WorkerProcess:
        return self.started[-1]

    def check_alive(self) -> None:
        """Raise a ``CliError`` with the last line of its log if the current Worker exited."""
        status = self.current.returncode
        if status is not None:
            raise CliError(f"the Worker exited with status {status}: {_last_line(log_tail(self.current.log_path))}",
                           hint="rerun with --debug to keep its log")

    def stop_all(self) -> None:
        for worker in reversed(self.started):
            worker.stop()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"
