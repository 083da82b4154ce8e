"""Durability levels of the engine's commits (what a committed change survives).

The default, ``power-loss``, fsyncs every commit (SQLite ``synchronous=FULL``). ``process-crash``
(``synchronous=NORMAL``) is a named opt-in: commits survive the engine process's crash, not an OS
crash or power loss. The value is the command line's spelling (``--durability``).
"""

from __future__ import annotations

import enum


class Durability(enum.Enum):
    """What a committed change survives; the value is the command line's spelling."""

    POWER_LOSS = "power-loss"
    """Every commit is fsync'd (SQLite ``synchronous=FULL``): survives an OS crash or power loss."""
    PROCESS_CRASH = "process-crash"
    """Commits are written but not fsync'd (``synchronous=NORMAL``): survive the engine process's
    crash, not an OS crash or power loss."""

    @property
    def sqlite_synchronous(self) -> str:
        """The SQLite ``synchronous`` setting that gives this level."""
        return "FULL" if self is Durability.POWER_LOSS else "NORMAL"

    @property
    def description(self) -> str:
        """A one-line statement of the level for ready lines and benchmark output."""
        if self is Durability.POWER_LOSS:
            return f"power-loss (fsync per commit, SQLite synchronous={self.sqlite_synchronous})"
        return ("process-crash (no fsync: commits survive a process crash, not an OS crash; "
                f"SQLite synchronous={self.sqlite_synchronous})")


__all__ = ["Durability"]
