"""Deadline polling for conditions no Client call can wait for directly.

Invariants: the probe runs at least once, even with a zero timeout; the only pauses are the
``interval`` sleeps between probes, never past the deadline; and a timeout names what was awaited
and the last thing the probe returned or raised. The clock and the sleep are injectable, so tests
of code built on ``poll_until`` need not wait in real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["poll_until"]

T = TypeVar("T")


def poll_until(
    probe: Callable[[], T | None],
    *,
    timeout: float = 30.0,
    interval: float = 0.01,
    description: str = "the condition",
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """Call ``probe`` until it returns something other than ``None``, and return that.

    An ``Exception`` raised by the probe counts as "not yet" (it is remembered and the probe runs
    again); other ``BaseException``s, such as ``KeyboardInterrupt``, propagate at once.

    Args:
        probe: The condition; ``None`` means "not yet".
        timeout: Seconds from the first probe until giving up.
        interval: Seconds to sleep between probes.
        description: What is awaited, for the timeout message.
        sleep: Sleeps between probes (default ``time.sleep``).
        monotonic: The clock the deadline is measured on (default ``time.monotonic``).

    Returns:
        The first result other than ``None``.

    Raises:
        ValueError: ``timeout`` or ``interval`` is negative.
        TimeoutError: The deadline passed; the message names ``description`` and the last result
            or exception, which is also chained as the cause.
    """
    if timeout < 0 or interval < 0:
        raise ValueError(f"timeout and interval must not be negative, got {timeout} and {interval}")
    deadline = monotonic() + timeout
    while True:
        last_error: Exception | None = None
        try:
            value = probe()
        except Exception as error:  # noqa: BLE001 - a failing probe is retried until the deadline
            last_error = error
        else:
            if value is not None:
                return value
        remaining = deadline - monotonic()
        if remaining <= 0:
            last = "returned None" if last_error is None else f"raised {last_error!r}"
            raise TimeoutError(
                f"timed out after {timeout:g} s waiting for {description}; the last probe {last}"
            ) from last_error
        sleep(min(interval, remaining))
