"""``SessionDriver``: a turn counts as ended once the session's committed state says so, not when its
``turn_completed`` event is read (the event is written before the Step that ends the turn commits)."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import cast

from pyrsistent import pmap
from rich.console import Console

from dex_agents.cli.session_driver import SessionDriver, auto_approver
from dex_agents.cli.view import EventView
from dex_agents.client import SessionClient, SessionEvent, StateCondition
from dex_agents.pure.machine import events as kinds
from dex_agents.pure.values.session import AgentEvent, AgentState, AgentStatus


def _state(ended: int) -> AgentState:
    return AgentState(status=AgentStatus.WAITING_FOR_USER_MESSAGE, turn_count=ended, current_turn_id=None,
                      current_turn_sequence=None, message_count=2 * ended, completed_turn_count=ended,
                      failed_turn_count=0, last_turn_error=None)


class _LaggingSessions:
    """Events that say turn 1 ended, read before the state that says so is committed."""

    def __init__(self) -> None:
        events = [AgentEvent(type=kind, turn_id="turn-1", attempt=1, step_execution_id="RunModel-1", payload=pmap())
                  for kind in (kinds.TURN_STARTED, kinds.TURN_COMPLETED)]
        self.pending = [SessionEvent(event=event, cursor=str(number), created_at=datetime.now(UTC))
                        for number, event in enumerate(events, start=1)]
        self.awaited: list[StateCondition] = []

    def next_event(self, session_id: str, after: str = "", *, wait: float = 1.0) -> SessionEvent | None:
        return self.pending.pop(0) if self.pending else None

    def wait_for(self, session_id: str, condition: StateCondition, *, timeout: float | None = None) -> AgentState:
        self.awaited.append(condition)
        return _state(1)


def test_a_turn_ends_when_its_end_is_committed() -> None:
    sessions = _LaggingSessions()
    view = EventView(Console(file=io.StringIO()))
    driver = SessionDriver(cast(SessionClient, sessions), "s-1", view, auto_approver(view.console))
    driver.wait_for_turns(1)
    assert driver.cursor == "2"
    (condition,) = sessions.awaited
    assert not condition.predicate(_state(0)) and condition.predicate(_state(1))
    assert condition.description == "turn turn-1 ended (committed)"
