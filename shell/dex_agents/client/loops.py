# Generated from async_loops.py by scripts/unasync.py: edit that file, then run the script.
"""The session client's loops that pause between tries: a call repeated after transient failures, a
call repeated after lock conflicts, a read polled until it satisfies a condition, and closing.

Invariants:
    * Every loop stops at its deadline (``time.monotonic``), never sleeping past it, and raises the
      last failure (``poll_until``: a ``TimeoutError`` chained to the last read error).
    * Pauses grow by doubling up to a cap; ``poll_until`` pauses ``poll_interval`` every time.
    * ``close_all`` runs every step even after one failed, then raises the first failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from dex import RpcLockConflictError

from dex_agents.client.errors import SessionNotFoundError
from dex_agents.client.retries import (
    LOCK_RETRY_FIRST_SECONDS,
    LOCK_RETRY_MAX_SECONDS,
    RETRY_FIRST_SECONDS,
    RETRY_MAX_SECONDS,
    is_transient,
)
from dex_agents.client.values import NOTHING_READ, timeout_message

__all__ = ["close_all", "pause", "poll_until", "repeat", "repeat_lock_conflicts"]

T = TypeVar("T")
V = TypeVar("V")


def pause(seconds: float) -> None:
    """Sleep ``seconds``."""
    time.sleep(seconds)


def _repeat_while(call: Callable[[], T], seconds: float, should_repeat: Callable[[Exception], bool],
                        first_pause: float, max_pause: float) -> T:
    deadline = time.monotonic() + seconds
    wait = first_pause
    while True:
        try:
            return call()
        except Exception as error:
            remaining = deadline - time.monotonic()
            if not should_repeat(error) or remaining <= 0:
                raise
            time.sleep(min(wait, remaining))
            wait = min(wait * 2, max_pause)


def repeat(call: Callable[[], T], seconds: float) -> T:
    """``call()``, tried again after each transient failure (``retries.is_transient``) until ``seconds``."""
    return _repeat_while(call, seconds, is_transient, RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS)


def _is_lock_conflict(error: Exception) -> bool:
    return isinstance(error, RpcLockConflictError)


def repeat_lock_conflicts(call: Callable[[], T], seconds: float) -> T:
    """``call()``, tried again after each ``RpcLockConflictError`` (the RPC did not run) until ``seconds``."""
    return _repeat_while(call, seconds, _is_lock_conflict, LOCK_RETRY_FIRST_SECONDS, LOCK_RETRY_MAX_SECONDS)


def poll_until(read: Callable[[], V], accept: Callable[[V], T | None], *, seconds: float,
                     poll_interval: float, session_id: str, description: str) -> T:
    """The first non-``None`` ``accept(value)`` of a successful ``read()``, reading every ``poll_interval``;
    a failed read is read again, but ``SessionNotFoundError`` is final.

    Raises:
        TimeoutError: Nothing accepted within ``seconds``; names the session, ``description`` and the
            last value seen, chained to the last read error.
    """
    deadline = time.monotonic() + seconds
    last_seen: object = NOTHING_READ
    last_error: Exception | None = None
    while True:
        try:
            value = read()
        except SessionNotFoundError:
            raise  # final: reading again finds no session either
        except Exception as error:  # noqa: BLE001 - a failed read is retried until the deadline
            last_error = error
        else:
            last_seen, last_error = value, None
            accepted = accept(value)
            if accepted is not None:
                return accepted
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(timeout_message(session_id, description, seconds, last_seen, last_error)) \
                from last_error
        time.sleep(min(poll_interval, remaining))


def close_all(steps: Sequence[Callable[[], None]]) -> None:
    """Run every close step even if one fails; raise the first failure at the end."""
    errors: list[BaseException] = []
    for step in steps:
        try:
            step()
        except BaseException as error:  # noqa: BLE001 - every step must run
            errors.append(error)
    if errors:
        raise errors[0]
