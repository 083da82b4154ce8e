"""Synchronisation helpers of the engine conformance suite: probes, gates, polling with deadlines,
background calls, per-test Flow types.

Invariant: every wait here has a deadline, and no helper sleeps as a substitute for an event; the
only sleeps are the short pauses between polls of a condition that has a deadline.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, TypeVar

from dex import Flow, PersistenceSchema, Step, StepList, Stream

StartT = TypeVar("StartT")
T = TypeVar("T")

WAIT_SECONDS = 30.0
"""Upper bound for anything the suite waits for; reaching it means the behaviour is missing."""

FLOW_WAIT = timedelta(seconds=30)
"""Server-side long-poll bound for ``wait_for_flow``."""

GATE_SECONDS = 40.0
"""How long a gated handler blocks at most before giving up on its own."""

ADDRESS_ENV = "DEX_SERVER_ADDRESS"
"""Set to a real Dex server's address to run the suite against it instead of the local engine."""

POLICY_SECOND = 1.0 if os.environ.get(ADDRESS_ENV, "").strip() else 0.25
"""Real seconds per second of a Step policy (retry intervals, method and heartbeat timeouts): the
local engine under test runs with this ``EngineTiming.policy_second`` so retries and timeouts play
out quickly; a real Dex server keeps whole seconds. Timers and Flow timeouts are not scaled."""



def eventually(predicate: Callable[[], T | None], *, what: str, timeout: float = WAIT_SECONDS) -> T:
    """Poll ``predicate`` until it returns a value other than ``None``/``False``, or fail.

    Args:
        predicate: Called repeatedly; exceptions propagate.
        what: Description used in the failure message.
        timeout: Seconds before the assertion fails.

    Returns:
        The first truthy result.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


def retry_until(action: Callable[[], T], *, what: str, timeout: float = WAIT_SECONDS,
                retry_on: tuple[type[BaseException], ...] = (Exception,)) -> T:
    """Call ``action`` until it stops raising one of ``retry_on``; re-raise after the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return action()
        except retry_on:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s: {what}") from None
            time.sleep(0.05)


class Probe:
    """Thread-safe event log that Step and RPC handlers write and tests read and await."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._events: list[tuple[str, object]] = []

    def record(self, name: str, value: object = None) -> None:
        """Append one named event and wake waiters."""
        with self._condition:
            self._events.append((name, value))
            self._condition.notify_all()

    def values(self, name: str) -> list[object]:
        """Return the values recorded under ``name``, in order."""
        with self._condition:
            return [value for key, value in self._events if key == name]

    def names(self) -> list[str]:
        """Return all event names in recording order."""
        with self._condition:
            return [key for key, _ in self._events]

    def wait(self, name: str, count: int = 1, timeout: float = WAIT_SECONDS) -> list[object]:
        """Block until ``name`` was recorded ``count`` times; return its values."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                found = [value for key, value in self._events if key == name]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"timed out waiting for {count} x {name!r}; recorded: {self._events!r}")
                self._condition.wait(remaining)


class Gate:
    """A latch that gated handlers block on; tests open it (teardown always opens it)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def open(self) -> None:
        """Release every current and future waiter."""
        self._event.set()

    def is_open(self) -> bool:
        """Return whether the gate was opened."""
        return self._event.is_set()

    def block(self, should_stop: Callable[[], bool] = lambda: False) -> bool:
        """Wait until opened, ``should_stop()`` holds, or ``GATE_SECONDS`` pass; True if opened."""
        deadline = time.monotonic() + GATE_SECONDS
        while time.monotonic() < deadline:
            if self._event.wait(0.05):
                return True
            if should_stop():
                return False
        return False

    async def block_async(self) -> bool:
        """Async variant of :meth:`block` (polls without blocking the event loop)."""
        deadline = time.monotonic() + GATE_SECONDS
        while time.monotonic() < deadline:
            if self._event.is_set():
                return True
            await asyncio.sleep(0.05)
        return False


class NamedFlow(Flow[StartT]):
    """A Flow whose type name is chosen per test (Flow types must be unique on a server).

    Each instance carries its own :class:`Probe` and :class:`Gate`, which its Steps reach
    through the Flow they were built with.
    """

    def __init__(self, flow_type: str) -> None:
        self._flow_type = flow_type
        self.probe = Probe()
        self.gate = Gate()

    def get_flow_type(self) -> str:
        """Return the per-test unique Flow type."""
        return self._flow_type


class SingleStepFlow(NamedFlow[StartT]):
    """A per-test Flow of one Step type, whose Step is built with the Flow (to reach its probe and gate)."""

    def __init__(self, flow_type: str, step: Callable[[NamedFlow[StartT]], Step[StartT]]) -> None:
        super().__init__(flow_type)
        self._step = step

    def get_steps(self) -> StepList[StartT]:
        """Return the one Step type, as the start Step."""
        return StepList.start_step(self._step(self))


class StreamStepFlow(NamedFlow[StartT]):
    """A per-test Flow of one Step type that owns one ``Stream[str]``, ``events`` (Stream objects belong
    to exactly one Flow, so each instance builds its own)."""

    def __init__(self, flow_type: str, step: Callable[[StreamStepFlow[StartT]], Step[StartT]],
                 capacity_bytes: int = 1024 * 1024) -> None:
        super().__init__(flow_type)
        self._step = step
        self.events = Stream("Events", str, capacity_bytes)

    def get_steps(self) -> StepList[StartT]:
        """Return the one Step type, as the start Step."""
        return StepList.start_step(self._step(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        """Declare the Flow's Stream."""
        return PersistenceSchema.of(self.events)


_COUNTER = itertools.count(1)
_RUN_TAG = uuid.uuid4().hex[:8]


def unique_name(prefix: str) -> str:
    """Return a name unique on the server across test runs: ``<prefix>-<run>-<n>``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", prefix)[:40]
    return f"{safe}-{_RUN_TAG}-{next(_COUNTER)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Box(Generic[T]):
    """An immutable holder used to hand one value from a helper thread to a test."""

    value: T


def in_thread(action: Callable[[], T]) -> Callable[[float], T]:
    """Run ``action`` in a daemon thread; return a joiner that yields its result or raises."""
    outcome: list[Box[T]] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(Box(value=action()))
        except BaseException as error:  # noqa: BLE001 - re-raised in join
            failure.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout: float = WAIT_SECONDS) -> T:
        thread.join(timeout)
        if thread.is_alive():
            raise AssertionError("background call did not finish in time")
        if failure:
            raise failure[0]
        return outcome[0].value

    return join
