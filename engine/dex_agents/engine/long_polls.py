"""Long polls, all of them: the wait of one call (``LongPoll``), the table of waits by what they wait
for (``LongPolls``: a commit wakes only the waits of what it touched), the one wait loop every long
poll runs (``LongPolls.wait_until``), and the fair bound on how many run at once (``Admission``).

Served long polls: ``WaitForFlow`` (key ``("closed", uid)``), ``WaitForStepCompletion``
(``("state", uid)``), ``WaitForAttribute`` (``("attribute", (uid, key))``) and ``ReadStream``
(``("stream", (flow_type, stream, flow_id))``).

Invariants:
* A wait holds the engine lock except while it sleeps on its condition (a condition over that lock),
  so what it checks and what it waits for are read under one lock: no wake-up is lost between them.
* A poll whose client cancelled, or whose place a lighter client took (``abandoned``), ends at once
  with ``LONG_POLL_TIME_OUT`` carrying the ``reason``; a stopping engine ends every poll.
* Long polls wait on real time (they bound a client's request), not on the engine's clock; a poll
  waits at most ``EngineTiming.long_poll_cap`` (the SDK's Client re-attaches its waits by itself).
* Admission: while fewer than ``limit`` polls run, every one is admitted. At the bound, a newcomer
  whose client (a gRPC peer: one channel) holds at least two fewer polls than the heaviest client
  takes that client's oldest place (it is preempted); otherwise the newcomer is refused
  (``RESOURCE_EXHAUSTED``). So a client never loses a poll to one that holds as many.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

import grpc

from .errors import ServiceError, invalid, long_poll_timeout

T = TypeVar("T")

WaitKind = Literal["closed", "state", "attribute", "stream"]
"""Long-poll wake-ups: a run closed; a committed state change of a run; a write of one Attribute
(or its run's close); a Stream append."""
WaitKey = tuple[WaitKind, object]
"""What a long poll waits for: ``("closed", uid)``, ``("state", uid)``, ``("attribute", (uid, key))``
or ``("stream", (flow_type, stream, flow_id))``."""

ABANDONED = "the caller cancelled the wait"
PREEMPTED = "the wait gave its place to another client's (too many concurrent long polls)"


class LongPoll:
    """One long-poll call's wait: a condition over the engine lock, woken by a commit it concerns,
    by its client's cancel or its preemption (``abandoned``, with the ``reason``), or by shutdown."""

    def __init__(self, lock: threading.RLock) -> None:
        self.condition = threading.Condition(lock)
        self.abandoned = False
        self.reason = ABANDONED


def long_poll_seconds(requested: float, default: float, cap: float) -> float:
    """The server-side wait of a long poll: the requested seconds (the default for 0), capped at
    ``cap`` (``EngineTiming.long_poll_cap``)."""
    return min(requested or default, cap)


def update_deadline(request_timeout_seconds: int, handler_timeout_seconds: int, default: float,
                    cap: float) -> tuple[float, bool]:
    """The deadline (``time.monotonic``) of a wait on an update (a Step's completion, an Attribute's
    value), and whether it is the request's own timeout (then it ends with REQUEST_TIMEOUT, not
    LONG_POLL_TIME_OUT): a request timeout within ``cap`` bounds the wait, else the long-poll wait
    (the request's or the handler's seconds, ``default`` for none) capped at ``cap``."""
    if request_timeout_seconds < 0 or handler_timeout_seconds < 0:
        raise invalid("timeouts must not be negative")
    if request_timeout_seconds and request_timeout_seconds <= cap:
        return time.monotonic() + request_timeout_seconds, True
    return time.monotonic() + long_poll_seconds(request_timeout_seconds or handler_timeout_seconds, default, cap), False


@dataclass(frozen=True, slots=True)
class Ready(Generic[T]):
    """A long poll's check found what it waits for."""

    value: T


class LongPolls:
    """The waits of one engine by key; every method runs under the engine lock (``guard``)."""

    def __init__(self, lock: threading.RLock, guard: Callable[[], None], stopped: Callable[[], bool]) -> None:
        self._lock = lock
        self._guard = guard
        self._stopped = stopped
        self._waiters: dict[WaitKey, set[LongPoll]] = {}

    def new(self) -> LongPoll:
        """A new long poll's wait (a condition over the engine lock)."""
        return LongPoll(self._lock)

    @property
    def waiting(self) -> bool:
        """Whether any poll waits now (commits skip the wake-ups when none does)."""
        return bool(self._waiters)

    def keys(self) -> list[WaitKey]:
        """What the polls wait for now."""
        return list(self._waiters)

    def notify(self, key: WaitKey) -> None:
        """Wake the long polls waiting for ``key`` (cheap when nobody waits)."""
        self._guard()
        for poll in self._waiters.get(key, ()):
            poll.condition.notify_all()

    def notify_all(self) -> None:
        """Wake every long poll (used on shutdown)."""
        self._guard()
        for polls in self._waiters.values():
            for poll in polls:
                poll.condition.notify_all()

    def abandon(self, poll: LongPoll, reason: str = ABANDONED) -> None:
        """The poll's client is gone (or its place was taken): wake it so its thread is freed at
        once; it ends with ``reason``."""
        self._guard()
        poll.abandoned = True
        poll.reason = reason
        poll.condition.notify_all()

    def wait_change(self, key: WaitKey, timeout: float, poll: LongPoll | None = None) -> None:
        """Wait until a change of ``key`` is committed, ``timeout`` passes, or the poll is abandoned
        (then return at once)."""
        self._guard()
        poll = poll if poll is not None else LongPoll(self._lock)
        if poll.abandoned:
            return
        polls = self._waiters.setdefault(key, set())
        polls.add(poll)
        try:
            poll.condition.wait(timeout)
        finally:
            polls.discard(poll)
            if not polls and self._waiters.get(key) is polls:
                del self._waiters[key]

    def wait_until(self, check: Callable[[], Ready[T] | WaitKey], deadline: float, poll: LongPoll | None,
                   expired: Callable[[], ServiceError]) -> T:
        """The loop of every long poll: ``check`` (under the lock) gives what it waits for when it is
        there, else the key to wait on; an abandoned poll ends with its reason, a passed ``deadline``
        (``time.monotonic``) or a stopping engine with ``expired()``."""
        self._guard()
        while True:
            found = check()
            if isinstance(found, Ready):
                return found.value
            if poll is not None and poll.abandoned:
                raise long_poll_timeout(poll.reason)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._stopped():
                raise expired()
            self.wait_change(found, remaining, poll)


@dataclass(eq=False, slots=True)
class Ticket:
    """One admitted long poll."""

    client: str
    preempt: Callable[[], None]
    order: int = 0
    preempted: bool = field(default=False)


class Admission:
    """Admits long polls within ``limit``, fairly per client (thread-safe, its own lock: it is
    called before the engine lock is taken)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._clients: dict[str, dict[Ticket, None]] = {}
        """Client -> its admitted polls, oldest first."""
        self._total = 0
        self._order = itertools.count()

    def admit(self, client: str, preempt: Callable[[], None]) -> Ticket | None:
        """A place for a new poll of ``client`` (``preempt`` ends it early if a lighter client needs
        its place), or None when refused."""
        victim: Ticket | None = None
        with self._lock:
            mine = len(self._clients.get(client, ()))
            if self._total >= self.limit:
                heaviest = max(self._clients.values(), key=len, default=None)
                if heaviest is None or len(heaviest) < mine + 2:
                    return None
                victim = next(iter(heaviest))
                self._forget(victim)
                victim.preempted = True
            ticket = Ticket(client, preempt, next(self._order))
            self._clients.setdefault(client, {})[ticket] = None
            self._total += 1
        if victim is not None:
            victim.preempt()
        return ticket

    def release(self, ticket: Ticket) -> None:
        """The poll ended (a preempted one was already released)."""
        with self._lock:
            self._forget(ticket)

    def held(self, client: str) -> int:
        """How many polls ``client`` holds now."""
        with self._lock:
            return len(self._clients.get(client, ()))

    def _forget(self, ticket: Ticket) -> None:
        polls = self._clients.get(ticket.client)
        if polls is None or ticket not in polls:
            return
        del polls[ticket]
        self._total -= 1
        if not polls:
            del self._clients[ticket.client]


@contextmanager
def admitted(polls: LongPolls, admission: Admission, client: str,
             on_cancel: Callable[[Callable[[], None]], bool],
             call_later: Callable[[float, Callable[[], None]], object]) -> Iterator[LongPoll]:
    """A new long poll of ``client`` within the fair bound, for the block: its client's cancel
    (``on_cancel`` registers a callback; False means the call is already over) or its preemption
    wakes it at once. Refused at the bound: ``ServiceError`` RESOURCE_EXHAUSTED.

    The wake-ups run on gRPC's polling thread or a refused caller's: they are handed to the
    scheduler's thread (``call_later``), which takes the engine lock, rather than wait for it there."""
    poll = polls.new()

    def wake(reason: str) -> None:
        call_later(0.0, lambda: polls.abandon(poll, reason))

    ticket = admission.admit(client, lambda: wake(PREEMPTED))
    if ticket is None:
        raise ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                           f"too many concurrent long polls (at most {admission.limit}, "
                           "shared fairly between clients); retry later")
    try:
        if not on_cancel(lambda: wake(ABANDONED)):
            poll.abandoned = True
        yield poll
    finally:
        admission.release(ticket)
