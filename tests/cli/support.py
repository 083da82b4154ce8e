"""Running ``dex-agents`` as a user would: ``python -m dex_agents.cli`` in a child process.

Output goes to a pipe, not a terminal, and the environment has no ``COLUMNS``: what a user sees
when piping the command line's output or running it from a script.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from dex_agents.testing.session_client import AgentSessionTestClient
from tests.shell.agents import WORKER_MODULE, build_support_flow, unique_flow_type, worker_environment

__all__ = ["BackgroundCli", "background_cli", "cli_environment", "run_cli", "served_support_agent", "sessions_cli"]


def cli_environment(environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ``DEX_SERVER_ADDRESS`` and terminal sizes, plus ``NO_COLOR``
    and ``environment``."""
    dropped = {"DEX_SERVER_ADDRESS", "COLUMNS", "LINES"}
    child_environment = {key: value for key, value in os.environ.items() if key not in dropped}
    child_environment.update({"NO_COLOR": "1", **(environment or {})})
    return child_environment


def run_cli(*arguments: str, environment: Mapping[str, str] | None = None, timeout: float = 120.0,
            cwd: Path | None = None, stdin_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``dex-agents <arguments>`` with no terminal on stdin (``stdin_text`` piped, else nothing);
    returns its exit status and output."""
    child_environment = cli_environment(environment)
    return subprocess.run([sys.executable, "-m", "dex_agents.cli", *arguments], input=stdin_text or "",
                          capture_output=True, text=True, env=child_environment, timeout=timeout, cwd=cwd)


def sessions_cli(server_address: str) -> Callable[..., tuple[int, str, str]]:
    """``dex-agents sessions <arguments>`` against the engine at ``server_address``: its exit status,
    stdout and stderr."""
    environment = {"DEX_SERVER_ADDRESS": server_address}

    def cli(*arguments: str) -> tuple[int, str, str]:
        result = run_cli("sessions", *arguments, environment=environment)
        return result.returncode, result.stdout, result.stderr

    return cli


def served_support_agent(label: str, agent_environment: AgentEnvironmentFactory,
                         agent_sessions: AgentSessionsFactory, killable_worker: KillableWorkerFactory,
                         state_directory: Path, *, interrupt_deadline_ms: int | None = None,
                         ) -> tuple[str, AgentSessionTestClient]:
    """A new Flow type of the support agent (prefix ``label``), served by a Worker child, and a session
    client for it."""
    flow_type = unique_flow_type(label)
    flow = build_support_flow(state_directory, flow_type=flow_type, interrupt_deadline_ms=interrupt_deadline_ms)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    killable_worker(WORKER_MODULE, environment=worker_environment(state_directory, flow_type, interrupt_deadline_ms))
    return flow_type, sessions


class BackgroundCli:
    """A long-running ``dex-agents`` command (``engine``, ``worker``) whose output lines are collected."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for_line(self, prefix: str, timeout: float = 60.0) -> str:
        """The first output line starting with ``prefix`` (waiting for it), or an ``AssertionError``."""
        deadline = time.monotonic() + timeout
        while True:
            found = next((line for line in self.lines if line.startswith(prefix)), None)
            if found is not None:
                return found
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no line starting with {prefix!r}; output: {self.lines}"
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            assert line is not None, f"the command exited ({self.process.wait()}) before {prefix!r}: {self.lines}"
            self.lines.append(line)

    def stop(self, signal_number: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send ``signal_number``, wait for the exit and every output line; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal_number)
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=timeout)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return status
            if line is not None:
                self.lines.append(line)

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        if self.process.stdin is not None:
            self.process.stdin.close()


@contextlib.contextmanager
def background_cli(*arguments: str, environment: Mapping[str, str] | None = None) -> Iterator[BackgroundCli]:
    """Run ``dex-agents <arguments>`` in its own process group, stderr merged into stdout; SIGKILLed at
    the end if it still runs (a test stops it itself to check how it stops)."""
    process = subprocess.Popen([sys.executable, "-m", "dex_agents.cli", *arguments], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=cli_environment(environment), start_new_session=True)
    command = BackgroundCli(process)
    try:
        yield command
    finally:
        command.kill()
