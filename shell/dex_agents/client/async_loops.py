# unasync: the source of a generated synchronous twin (scripts/unasync.py)
"""The session client's loops that pause between tries: a call repeated after transient failures, a
call repeated after lock conflicts, a read polled until it satisfies a condition, and closing.

Invariants:
    * Every loop stops at its deadline (``time.monotonic``), never sleeping past it, and raises the
      last failure (``poll_until``: a ``TimeoutError`` chained to the last read error).
    * Pauses grow by doubling up to a cap; ``poll_until`` pauses ``poll_interval`` every time.
    * ``close_all`` runs every step even after one failed, then raises the first failure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
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


async def pause(seconds: float) -> None:
    """Sleep ``seconds``."""
    await asyncio.sleep(seconds)


async def _repeat_while(call: Callable[[], Awaitable[T]], seconds: float, should_repeat: Callable[[Exception], bool],
                        first_pause: float, max_pause: float) -> T:
    deadline = time.monotonic() + seconds
    wait = first_pause
    while True:
        try:
            return await call()
        except Exception as error:
            remaining = deadline - time.monotonic()
            if not should_repeat(error) or remaining <= 0:
                raise
            await asyncio.sleep(min(wait, remaining))
            wait = min(wait * 2, max_pause)


async def repeat(call: Callable[[], Awaitable[T]], seconds: float) -> T:
    """``call()``, tried again after each transient failure (``retries.is_transient``) until ``seconds``."""
    return await _repeat_while(call, seconds, is_transient, RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS)


def _is_lock_conflict(error: Exception) -> bool:
    return isinstance(error, RpcLockConflictError)


async def repeat_lock_conflicts(call: Callable[[], Awaitable[T]], seconds: float) -> T:
    """``call()``, tried again after each ``RpcLockConflictError`` (the RPC did not run) until ``seconds``."""
    return await _repeat_while(call, seconds, _is_lock_conflict, LOCK_RETRY_FIRST_SECONDS, LOCK_RETRY_MAX_SECONDS)


async def poll_until(read: Callable[[], Awaitable[V]], accept: Callable[[V], T | None], *, seconds: float,
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
            value = await read()
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
        await asyncio.sleep(min(poll_interval, remaining))


async def close_all(steps: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Run every close step even if one fails; raise the first failure at the end."""
    errors: list[BaseException] = []
    for step in steps:
        try:
            await step()
        except BaseException as error:  # noqa: BLE001 - every step must run
            errors.append(error)
    if errors:
        raise errors[0]
