"""File-based coordination between a test and Worker code in other processes.

Both helpers keep their state in files under a directory the test owns, never in memory, so they
work the same whether the Worker runs in the test process or in a child process, and across a
Worker that was killed and restarted. ``FileGate`` is the product's (``dex_agents.serving.gate``,
which the demo's crash uses), re-exported here.

Invariants:
    * ``InvocationLog``: ``<name>.invocations`` holds one line per ``record`` call, each appended
      with a single ``write`` on a descriptor opened with ``O_APPEND``, so concurrent writers in
      several processes never interleave within a line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import final

from dex_agents.serving.gate import GATE_TIMEOUT_SECONDS as GATE_TIMEOUT_SECONDS
from dex_agents.serving.gate import FileGate as FileGate
from dex_agents.serving.gate import checked_file_name

__all__ = ["GATE_TIMEOUT_SECONDS", "FileGate", "InvocationLog"]


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
        self.name = checked_file_name(name)
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
