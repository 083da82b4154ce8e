"""``FileGate``: pause Worker code at an exact point until another process lets it through.

The gate's state lives in files under a directory both sides share, never in memory, so it works
the same whether the Worker runs in the caller's process or a child, and across a Worker that was
killed and restarted (``dex-agents demo --crash`` kills its Worker at one; tests use it the same way).

Invariants: ``<name>.reached`` exists once Worker code arrived at the gate; ``<name>.released``
exists once the other side let it through. Worker code never passes the gate before the released
file exists, and a released gate stays released (a rerun after a kill passes straight through)
until ``reset()``.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Final, final

__all__ = ["GATE_TIMEOUT_SECONDS", "FileGate", "checked_file_name"]

GATE_TIMEOUT_SECONDS: Final = 120.0
"""How long Worker code waits at a gate by default before it fails instead of hanging forever."""

_GATE_POLL_SECONDS: Final = 0.01


def checked_file_name(name: str) -> str:
    """``name`` if it is a plain file name, else a ``ValueError``."""
    if not name or name in {".", ".."} or "/" in name or os.sep in name or "\0" in name:
        raise ValueError(f"name must be a plain file name, got {name!r}")
    return name


@final
class FileGate:
    """Pause Worker code at an exact point until the other side (a test, the demo) releases it.

    Worker side: ``mark_reached()`` (or ``await mark_reached_async()``) at the point to pause.
    Other side: ``wait_until_reached()``, then act (for example SIGKILL the Worker), then
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
        self.name = checked_file_name(name)
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
        deadline = time.monotonic() + timeout
        while not self.is_reached():
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout:g} s waiting for gate {self.name!r} to be reached "
                                   f"({self.reached_path})")
            time.sleep(_GATE_POLL_SECONDS)

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
