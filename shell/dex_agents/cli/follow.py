"""Following a session's events live with the session client's long polls.

Invariants:
    * ``follow_events`` returns the cursor after the last event it handled, so a caller can continue
      exactly where it stopped; it returns as soon as ``until()`` holds (checked before every read
      and after every event).
    * It never waits forever when given an ``idle_timeout``: when no event arrives for that long it
      raises a ``CliError``; ``check()`` runs between reads so a caller can fail fast (a dead Worker).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dex_agents.cli.errors import CliError
from dex_agents.client import SessionClient
from dex_agents.pure.values.session import AgentEvent

__all__ = ["follow_events"]


def follow_events(sessions: SessionClient, session_id: str, on_event: Callable[[AgentEvent], None], *,
                  cursor: str = "", until: Callable[[], bool] = lambda: False,
                  check: Callable[[], None] = lambda: None, idle_timeout: float | None = None) -> str:
    """Hand every event after ``cursor`` to ``on_event`` until ``until()`` holds; returns the last cursor."""
    last_event = time.monotonic()
    while not until():
        check()
        item = sessions.next_event(session_id, cursor, wait=1.0)
        if item is None:
            if idle_timeout is not None and time.monotonic() - last_event > idle_timeout:
                raise CliError(f"session {session_id}: no event for {idle_timeout:g} s",
                               hint="is a Worker serving this Flow type?")
            continue
        cursor = item.cursor
        last_event = time.monotonic()
        on_event(item.event)
    return cursor
