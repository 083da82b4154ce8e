"""The Attribute lock table, shared by Steps and RPCs, in memory.

A holder (``step:<execution id>`` or ``rpc:<task id>``) takes all its keys of a run at once, when
none is held by another holder, and keeps them until it releases them all. A Step method that finds
a key held waits in its run's queue (first come, first served); :meth:`AttributeLocks.release` hands
the run's waiting Steps back to the caller, which launches them again (they take the keys then, or
wait again). An RPC that finds a key held fails instead (the caller's business). Nothing here walks
the whole table: a release touches only the holder's keys and its run's queue.

Locks are not persisted: after a restart the re-dispatched methods take them again. Every method runs
under the engine lock (the engine passes its lock assertion as ``guard``).
"""

from __future__ import annotations

from collections.abc import Callable


class AttributeLocks:
    """Key owners, holdings and the Steps waiting for keys, per run."""

    def __init__(self, guard: Callable[[], None] = lambda: None) -> None:
        self._guard = guard
        self.owners: dict[tuple[int, str], str] = {}
        """(run, key) -> its holder."""
        self._holdings: dict[tuple[int, str], set[str]] = {}
        """(run, holder) -> the keys it holds."""
        self._waiting: dict[int, dict[str, None]] = {}
        """Run -> the Step executions waiting for a key, in arrival order."""

    def held(self, uid: int, keys: list[str], holder: str) -> list[str]:
        """The keys of ``keys`` held by someone other than ``holder``."""
        self._guard()
        return [key for key in keys if self.owners.get((uid, key), holder) != holder]

    def acquire(self, uid: int, keys: list[str], holder: str) -> None:
        """Take the keys (the caller checked they are free)."""
        self._guard()
        for key in keys:
            self.owners[(uid, key)] = holder
        self._holdings.setdefault((uid, holder), set()).update(keys)

    def release(self, uid: int, holder: str) -> list[str]:
        """Free every key ``holder`` holds; returns the run's waiting Step executions (no longer
        waiting) when a key was freed, for the caller to launch again."""
        self._guard()
        freed = [key for key in self._holdings.pop((uid, holder), ()) if self.owners.get((uid, key)) == holder]
        for key in freed:
            del self.owners[(uid, key)]
        if not freed:
            return []
        return list(self._waiting.pop(uid, {}))

    def wait(self, uid: int, seid: str) -> None:
        """The Step execution waits for a key of its run (once, in arrival order)."""
        self._guard()
        self._waiting.setdefault(uid, {})[seid] = None

    def stop_waiting(self, uid: int, seid: str) -> None:
        """The Step execution no longer waits (canceled)."""
        self._guard()
        waiting = self._waiting.get(uid)
        if waiting is not None:
            waiting.pop(seid, None)
            if not waiting:
                del self._waiting[uid]

    def forget_run(self, uid: int) -> None:
        """The run closed: none of its Steps waits any more."""
        self._guard()
        self._waiting.pop(uid, None)

    def waiting(self, uid: int) -> list[str]:
        """The run's waiting Step executions, in arrival order (for tests and diagnostics)."""
        return list(self._waiting.get(uid, {}))
