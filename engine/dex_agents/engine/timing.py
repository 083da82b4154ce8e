"""The engine's clock and timing policy, both injectable (``EngineServer(..., timing=, clock=)``).

:class:`Clock` is where every engine module reads the time and where the scheduler waits:
:class:`SystemClock` in production, :class:`ManualClock` in tests that move time by hand.
:class:`EngineTiming` holds every delay and window the engine chooses itself (dispatch wait,
back-offs, check intervals, long-poll caps) and ``policy_second``, the length of one second of the
Step policies (retry intervals, method and heartbeat timeouts, the ASYNC local phase). Production
uses the defaults; tests shorten them so the engine's behaviour plays out without waiting on real
time. Dex's own semantics (whole-second policies, Timers, Flow timeouts) are unchanged by it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    """Wall and monotonic time, and the scheduler's timed wait."""

    def time(self) -> float:
        """Wall-clock Unix time in seconds."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds (for intervals)."""
        ...

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        """Wait on ``condition`` (held by the caller) until notified or ``timeout`` clock seconds pass."""
        ...


class SystemClock:
    """The real clock."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        condition.wait(timeout)


class ManualClock:
    """A clock that moves only when :meth:`advance` is called (tests).

    Invariant: clock time passes only by :meth:`advance`, which wakes every wait on the clock. A
    wait may also return early (at most every ``_RECHECK`` real seconds, so a wait that began just as
    the clock moved cannot miss it); callers re-check their condition, as with any condition wait.
    """

    _RECHECK = 0.05

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._guard = threading.Lock()
        self._now = start
        self._elapsed = 0.0
        self._waiting: set[threading.Condition] = set()

    def time(self) -> float:
        with self._guard:
            return self._now

    def monotonic(self) -> float:
        with self._guard:
            return self._elapsed

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        with self._guard:
            self._waiting.add(condition)
        try:
            condition.wait(self._RECHECK)
        finally:
            with self._guard:
                self._waiting.discard(condition)

    def advance(self, seconds: float) -> None:
        """Move the clock forward and wake every wait on it."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        with self._guard:
            self._now += seconds
            self._elapsed += seconds
            waiting = list(self._waiting)
        for condition in waiting:
            with condition:
                condition.notify_all()


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineTiming:
    """Every timing choice of the engine (seconds unless named otherwise). Immutable."""

    dispatch_wait: float = 10.0
    """How long a task may wait for a Worker that knows it (then NO_WORKER_AVAILABLE; an RPC fails
    with WorkerInvocationError), and the window in which a task whose stream broke before any
    output is re-delivered with the same attempt."""
    policy_second: float = 1.0
    """Real seconds per second of a Step policy: retry intervals and total duration, method and
    heartbeat timeouts (and their defaults), the ASYNC local phase. 1.0 is Dex; tests shorten it."""
    deadline_check_interval: float = 0.25
    """How often method and heartbeat deadlines are checked (a timeout fires up to this late)."""
    decline_backoff: float = 0.002
    """A stream that declined a task gets none for this long, doubling per decline of the same task
    up to ``decline_backoff_max``, unless its Worker finishes a task first."""
    decline_backoff_max: float = 0.1
    saturated_window: float = 1.0
    """How long after a declined Step task a Worker counts as running at its Step capacity."""
    settle_delay: float = 0.001
    """Delay before a saturated Worker's freed stream is offered the next task."""
    first_frame_timeout: float = 10.0
    """A ``PollWorkerTask`` stream that sends no ``register`` frame within this long is cancelled."""
    long_poll_cap: float = 300.0
    """Longest server-side wait of a long poll, whatever the request asks."""
    recovery_batch_gap: float = 0.005
    """Pause between two recovery batches (calls waiting for the engine lock get it between them)."""

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"EngineTiming.{name} must be a non-negative number, not {value!r}")
        for name in ("policy_second", "deadline_check_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"EngineTiming.{name} must be positive")
