"""The engine suite's run order: the tests that mostly wait run first, spread over the first quarter.

pytest-xdist first hands each worker a run of consecutive tests, together the first quarter of the
collection, then refills the workers that run low. Long tests spread over that quarter start early
on every worker, where their waits (child processes, real-time heartbeats, back-offs, Timers and
timeouts) overlap the other workers' work; the short computing tests after them keep every worker
busy to the end. Alphabetical order would end on ``test_timeouts``, ``test_timers`` and
``test_worker_sigkill``, waiting while the cores idle. The order is deterministic, as xdist requires,
and the tests are independent, so it changes no outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

T = TypeVar("T")

SUITE_DIRECTORY: Final = Path(__file__).resolve().parent

LONG_RUNNING_MODULES: Final = frozenset({
    # child processes (engines, Workers, the CLI)
    "test_auth_engine", "test_cli_signals", "test_engine_restart", "test_launch_process",
    "test_launch_start_engine", "test_readme_engine", "test_startup", "test_startup_imports",
    "test_worker_sigkill",
    # waits on real time: heartbeats, retry back-offs, Timers, request and Flow timeouts
    "test_core_faults", "test_core_flow_timeout", "test_core_recovery", "test_dex_messages", "test_flow_completion",
    "test_retries", "test_rpcs", "test_stop_describe_wait", "test_streams", "test_timeouts", "test_timers",
    "test_dex_alignment", "test_subflows",
})
"""Modules of this directory whose tests mostly wait rather than compute."""


def is_long_running(path: Path) -> bool:
    """Whether the test module at ``path`` is one of this directory's ``LONG_RUNNING_MODULES`` (the
    ordering hook sees the whole session's tests, other directories' too)."""
    return path.resolve().parent == SUITE_DIRECTORY and path.stem in LONG_RUNNING_MODULES


def spread_early(items: Sequence[T], is_long: Callable[[T], bool]) -> list[T]:
    """``items`` with the long ones spread evenly over the first quarter (or first, if they are more).

    Each group keeps its own order; the result is a permutation of ``items``.
    """
    long = [item for item in items if is_long(item)]
    short = [item for item in items if not is_long(item)]
    front = max(len(long), len(items) // 4)
    long_slots = {position * front // len(long) for position in range(len(long))} if long else set()
    next_long, next_short = iter(long), iter(short)
    return [next(next_long) if slot in long_slots else next(next_short) for slot in range(len(items))]
