"""File-based coordination between a test and Worker code in other processes.

Both helpers keep their state in files under a directory the test owns, never in memory, so they
work the same whether the Worker runs in the test process or in a child process, and across a
Worker that was killed and restarted.

Invariants:
    * ``FileGate``: ``<name>.reached`` exists once Worker code arrived at the gate;
      ``<name>.released`` exists once the test let it through. Worker code never passes the gate
      before the released file exists, and a released gate stays released (a rerun after a kill
      passes straight through) until ``reset()``.
    * ``InvocationLog``: ``<name>.invocations`` holds one line per ``record`` call, each appended
      with a single ``write`` on a descriptor opened with ``O_APPEND``, so concurrent writers in
      several processes never interleave within a line.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Final, final

from dex_agents.testing.polling import poll_until

__all__ = ["GATE_TIMEOUT_SECONDS", "FileGate", "InvocationLog"]

GATE_TIMEOUT_SECONDS: Final = 120.0
"""How long Worker code waits at a gate by default before it fails instead of hanging forever."""

_GATE_POLL_SECONDS: Final = 0.01


def _checked_name(name: str) -> str:
    if not name or name in {".", ".."} or "/" in name or os.sep in name or "\0" in name:
        raise ValueError(f"name must be a plain file name, got {name!r}")
    return name


@final
class FileGate:
    """Pause Worker code at an exact point until the test releases it.

    Worker side: ``mark_reached()`` (or ``await mark_reached_async()``) at the point to pause.
    Test side: ``wait_until_reached()``, then act (for example SIGKILL the Worker), then
    ``release()``.
    """

    def __init__(self, directory: Path, name: str) -> None:
        """Name a gate; no file is touched until it is used.

        Args:
            directory: Where the gate's files live (created on first use); shared by the test
                and the Worker.
            name: The gate's name, a plain file name.

        Raises:
            ValueError: ``name`` is empty or contains a path separator.
        """
        self.directory = directory
        self.name = _checked_name(name)
        self.reached_path = directory / f"{name}.reached"
        self.released_path = directory / f"{name}.released"

    def _arrive(self) -> float:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.reached_path.touch()
        return time.monotonic()

    def _timed_out(self, started: float, timeout: float | None) -> bool:
        return timeout is not None and time.monotonic() - started >= timeout

    def mark_reached(self, *, timeout: float | None = GATE_TIMEOUT_SECONDS) -> None:
        """Worker side: record arrival, then block (sleeping briefly between checks) until released.

        Args:
            timeout: Seconds to wait for the release; ``None`` waits forever.

        Raises:
            TimeoutError: Nobody released the gate within ``timeout``.
        """
        started = self._arrive()
        while not self.released_path.exists():
            if self._timed_out(started, timeout):
                raise TimeoutError(f"gate {self.name!r} was not released within {timeout:g} s")
            time.sleep(_GATE_POLL_SECONDS)

    async def mark_reached_async(self, *, timeout: float | None = GATE_TIMEOUT_SECONDS) -> None:
        """Worker side, for async code: like ``mark_reached`` but awaits ``asyncio.sleep`` between checks.

        Raises:
            TimeoutError: Nobody released the gate within ``timeout``.
        """
        started = self._arrive()
        while not self.released_path.exists():
            if self._timed_out(started, timeout):
                raise TimeoutError(f"gate {self.name!r} was not released within {timeout:g} s")
            await asyncio.sleep(_GATE_POLL_SECONDS)

    def is_reached(self) -> bool:
        """Test side: whether Worker code arrived at the gate since the last ``reset``."""
        return self.reached_path.exists()

    def wait_until_reached(self, timeout: float = 30.0) -> None:
        """Test side: block until Worker code arrived at the gate.

        Raises:
            TimeoutError: Nothing arrived within ``timeout`` seconds.
        """
        poll_until(lambda: True if self.is_reached() else None, timeout=timeout,
                   description=f"gate {self.name!r} to be reached ({self.reached_path})")

    def release(self) -> None:
        """Test side: let every current and future arrival through (until ``reset``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.released_path.touch()

    def reset(self) -> None:
        """Test side: forget arrival and release, so the gate pauses the next arrival again."""
        self.released_path.unlink(missing_ok=True)
        self.reached_path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"FileGate(directory={self.directory!r}, name={self.name!r})"


@final
class InvocationLog:
    """Count real runs of Worker code (for example tool calls) across processes and restarts."""

    def __init__(self, directory: Path, name: str) -> None:
        """Name a log; the file is created by the first ``record``.

        Args:
            directory: Where the log file lives (created on first ``record``).
            name: The log's name, a plain file name.

        Raises:
            ValueError: ``name`` is empty or contains a path separator.
        """
        self.directory = directory
        self.name = _checked_name(name)
        self.path = directory / f"{name}.invocations"

    def record(self, entry: str) -> None:
        """Append ``entry`` as one line, atomically with respect to other writers.

        Raises:
            ValueError: ``entry`` contains a line break.
        """
        if "\n" in entry or "\r" in entry:
            raise ValueError(f"entry must be one line, got {entry!r}")
        self.directory.mkdir(parents=True, exist_ok=True)
        line = (entry + "\n").encode("utf-8")
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            written = os.write(descriptor, line)
        finally:
            os.close(descriptor)
        if written != len(line):
            raise OSError(f"short append to {self.path}: {written} of {len(line)} bytes")

    def entries(self) -> list[str]:
        """Every recorded entry, in the order the writes landed (empty before the first)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return text.split("\n")[:-1]

    def count(self, entry: str | None = None) -> int:
        """How many entries were recorded, or how many equal ``entry`` when it is given."""
        entries = self.entries()
        return len(entries) if entry is None else entries.count(entry)

    def __repr__(self) -> str:
        return f"InvocationLog(directory={self.directory!r}, name={self.name!r})"
