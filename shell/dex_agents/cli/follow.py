"""Following a session's ``AgentEvents`` Stream live with ``Client.read_stream`` long polls.

Invariants:
    * ``follow_events`` returns the resume token after the last event it handled, so a caller can
      continue exactly where it stopped; it returns as soon as ``until()`` holds (checked before
      every read and after every event).
    * It never waits forever: when no event arrives for ``idle_timeout`` seconds it raises a
      ``CliError``; ``check()`` runs between reads so a caller can fail fast (a dead Worker).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from dex import LongPollTimeoutError, StreamMessage

from dex_agents.cli.errors import CliError
from dex_agents.pure.values import AgentEvent
from dex_agents.testing.session_client import AgentSessionTestClient

__all__ = ["follow_events", "retained_events"]

LONG_POLL: Final = timedelta(seconds=1)


def retained_events(sessions: AgentSessionTestClient, session_id: str) -> tuple[list[AgentEvent], str]:
    """Every retained event of the session, oldest first, and the resume token after the newest."""
    newest_first: list[StreamMessage[AgentEvent]] = []
    page_token = ""
    while True:
        page = sessions.client.list_stream_messages(session_id, sessions.flow.agent_events, 100, page_token)
        newest_first.extend(page.messages)
        if not page.next_page_token:
            break
        page_token = page.next_page_token
    token = newest_first[0].resume_token if newest_first else ""
    return [message.value for message in reversed(newest_first)], token


def follow_events(sessions: AgentSessionTestClient, session_id: str, on_event: Callable[[AgentEvent], None], *,
                  resume_token: str = "", until: Callable[[], bool] = lambda: False,
                  check: Callable[[], None] = lambda: None, idle_timeout: float | None = None) -> str:
    """Hand every new event to ``on_event`` until ``until()`` holds; returns the last resume token."""
    last_event = time.monotonic()
    while not until():
        check()
        try:
            message = sessions.client.read_stream(session_id, sessions.flow.agent_events, resume_token, LONG_POLL)
        except LongPollTimeoutError:
            if idle_timeout is not None and time.monotonic() - last_event > idle_timeout:
                raise CliError(f"session {session_id}: no event for {idle_timeout:g} s",
                               hint="is a Worker serving this Flow type?") from None
            continue
        resume_token = message.resume_token
        last_event = time.monotonic()
        on_event(message.value)
    return resume_token
