"""The engine lock's discipline, checkable: :func:`assert_engine_lock_held` raises unless the
calling thread holds the engine's ``RLock``. Every method documented as running under the engine
lock calls it first, so a caller that forgot the lock fails at once instead of racing."""

from __future__ import annotations

import threading
from typing import Protocol, cast


class EngineLockNotHeld(AssertionError):
    """A method that runs under the engine lock was called without it (an engine bug)."""


class _OwnedLock(Protocol):
    def _is_owned(self) -> bool: ...


def assert_engine_lock_held(lock: threading.RLock) -> None:
    """Raise :class:`EngineLockNotHeld` unless the current thread holds ``lock``."""
    if not cast(_OwnedLock, lock)._is_owned():
        raise EngineLockNotHeld(f"the engine lock is not held by {threading.current_thread().name}")
