"""One thread that runs callbacks at wall-clock times of the engine's clock (Timers, retries,
timeouts, back-offs).

Callbacks run under the engine lock and must re-check the state they act on (a callback may
outlive the thing it was scheduled for); they are never run twice and never early.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable

from .timing import Clock, SystemClock

_LOGGER = logging.getLogger(__name__)


class Scheduler:
    """A min-heap of (due time, callback) served by one daemon thread."""

    def __init__(self, lock: threading.RLock, clock: Clock | None = None) -> None:
        self._lock = lock
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="dex-engine-scheduler", daemon=True)

    def start(self) -> None:
        """Start serving callbacks."""
        self._thread.start()

    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` at Unix time ``when`` (seconds) or soon after."""
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._order), callback))
            if self._heap[0][2] is callback:
                self._cond.notify()

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` after ``delay`` seconds."""
        self.call_at(self._clock.time() + delay, callback)

    def stop(self) -> None:
        """Stop the thread; pending callbacks are dropped (they are re-derived on restart)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > self._clock.time()):
                    timeout = self._heap[0][0] - self._clock.time() if self._heap else None
                    self._clock.wait(self._cond, timeout)
                if self._stopped:
                    return
                _, _, callback = heapq.heappop(self._heap)
            try:
                with self._lock:
                    callback()
            except Exception:
                _LOGGER.exception("scheduled engine callback failed")
