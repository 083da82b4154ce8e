"""Fair admission of long polls: a global bound on concurrent long polls (each holds a server
thread), shared max-min fairly between clients, so one client's flood cannot refuse another's calls.

A client is a connection (gRPC's peer address: one channel of the SDK's Client or Worker). While
fewer than ``limit`` long polls run, every one is admitted. At the bound, a newcomer whose client
holds at least two fewer polls than the heaviest client takes a place from that client: the
heaviest client's oldest poll is preempted (it ends at once with ``LONG_POLL_TIME_OUT``, which the
SDK's Step and Attribute waits re-attach by themselves); otherwise the newcomer is refused
(``RESOURCE_EXHAUSTED``). So a client never loses a poll to one that holds as many, and an
application with a few waits keeps them through someone else's flood.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(eq=False, slots=True)
class Ticket:
    """One admitted long poll."""

    client: str
    preempt: Callable[[], None]
    order: int = 0
    preempted: bool = field(default=False)


class LongPollAdmission:
    """Admits long polls within ``limit``, fairly per client (thread-safe, its own lock)."""

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
