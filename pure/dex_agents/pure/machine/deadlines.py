"""Approval deadline math. Time arrives as epoch milliseconds (``now_ms``, from the Worker clock in the
shell); nothing here reads a clock.

Invariants:
    * A deadline is ``now_ms + interrupt_deadline_ms`` when the interrupt is raised, or ``None``
      when the Flow has no ``interrupt_deadline_ms``. A deadline past ``MAX_INSTANT_MS`` (year 9999)
      is clamped to it: it never comes either way, and every deadline stays writable as an instant.
    * Dex Timers take whole seconds, so ``timer_seconds`` rounds the remaining time *up* (1 ms -> 1 s,
      2000 ms -> 2 s, 2001 ms -> 3 s) and never goes below 0 (a passed deadline fires at once). The
      Timer may therefore fire up to a second after the deadline, never before it.
    * ``is_late``: a resolution *at* the deadline or after it is late (``now_ms >= deadline_ms``),
      so a late answer never wins against the deadline Timer.
    * Instants on the wire (``AgentInterrupt.deadline``) are ISO-8601 UTC with milliseconds and ``Z``
      (``2026-01-02T03:04:05.678Z``), what ``format_instant`` writes; ``parse_instant`` reads that
      and, leniently, any extended ISO-8601 date-time with seconds and an explicit offset (fractions
      finer than a millisecond are floored). ``parse_instant(format_instant(ms)) == ms`` for every
      ``ms`` in the supported range (years 0001..9999).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = timedelta(milliseconds=1)
_MS_PER_SECOND: Final = 1000

MIN_INSTANT_MS: Final = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _ONE_MS
"""Epoch milliseconds of 0001-01-01T00:00:00.000Z, the earliest instant ``format_instant`` writes."""

MAX_INSTANT_MS: Final = (datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC) - _EPOCH) // _ONE_MS
"""Epoch milliseconds of 9999-12-31T23:59:59.999Z, the latest instant ``format_instant`` writes."""

_INSTANT_PATTERN: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})",
    flags=re.ASCII,
)


def deadline_ms(now_ms: int, interrupt_deadline_ms: int | None) -> int | None:
    """The deadline of an interrupt raised at ``now_ms``, or ``None`` when approvals never expire.

    Clamped to ``MAX_INSTANT_MS`` so that ``format_instant`` accepts it.

    Raises:
        ValueError: ``interrupt_deadline_ms`` is negative (a misconfigured Flow).
    """
    if interrupt_deadline_ms is None:
        return None
    if interrupt_deadline_ms < 0:
        raise ValueError(f"interrupt_deadline_ms must be >= 0, got {interrupt_deadline_ms}")
    return min(now_ms + interrupt_deadline_ms, MAX_INSTANT_MS)


def format_instant(epoch_ms: int) -> str:
    """Format epoch milliseconds as ISO-8601 UTC with milliseconds and ``Z``.

    >>> format_instant(0)
    '1970-01-01T00:00:00.000Z'
    >>> format_instant(1_767_323_045_678)
    '2026-01-02T03:04:05.678Z'

    Raises:
        ValueError: ``epoch_ms`` is outside years 0001..9999.
    """
    if not MIN_INSTANT_MS <= epoch_ms <= MAX_INSTANT_MS:
        raise ValueError(f"epoch_ms {epoch_ms} is outside the years 0001..9999")
    instant = _EPOCH + epoch_ms * _ONE_MS
    return (
        f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"
        f"T{instant.hour:02d}:{instant.minute:02d}:{instant.second:02d}"
        f".{instant.microsecond // 1000:03d}Z"
    )


def parse_instant(text: str) -> int:
    """Parse an ISO-8601 date-time with an explicit offset into epoch milliseconds.

    >>> parse_instant("2026-01-02T03:04:05.678Z")
    1767323045678
    >>> parse_instant("2026-01-02T05:04:05.678+02:00")
    1767323045678

    Raises:
        ValueError: ``text`` is not ``YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`` or names no
            real instant (a 13th month, say).
    """
    if _INSTANT_PATTERN.fullmatch(text) is None:
        raise ValueError(f"not an ISO-8601 instant like 2026-01-02T03:04:05.678Z: {text!r}")
    try:
        instant = datetime.fromisoformat(text)
        return (instant - _EPOCH) // _ONE_MS
    except (ValueError, OverflowError) as error:
        raise ValueError(f"not a valid instant: {text!r} ({error})") from error


MAX_TIMER_MS: Final = (2**31 - 1) * _MS_PER_SECOND
"""The longest Dex Timer, in milliseconds (whole seconds within int32)."""


def timer_seconds(now_ms: int, deadline_ms: int) -> int:
    """Whole seconds of a Dex Timer that fires at or after ``deadline_ms``: rounded up, never negative.

    >>> [timer_seconds(0, remaining) for remaining in (-5, 0, 1, 999, 1000, 2000, 2001)]
    [0, 0, 1, 1, 1, 2, 3]
    """
    remaining_ms = deadline_ms - now_ms
    if remaining_ms <= 0:
        return 0
    return -(-remaining_ms // _MS_PER_SECOND)


def is_late(now_ms: int, deadline_ms: int | None) -> bool:
    """Whether a resolution at ``now_ms`` comes too late: from the deadline on. Never without a deadline.

    >>> is_late(999, 1000), is_late(1000, 1000), is_late(10**12, None)
    (False, True, False)
    """
    return deadline_ms is not None and now_ms >= deadline_ms


__all__ = [
    "MAX_INSTANT_MS",
    "MAX_TIMER_MS",
    "MIN_INSTANT_MS",
    "deadline_ms",
    "format_instant",
    "is_late",
    "parse_instant",
    "timer_seconds",
]
