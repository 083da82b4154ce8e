"""What the session clients return besides the spec's values (``NoWorkerError`` and
``SessionExistsError`` are ``errors``', named here too).

Invariants:
    * A cursor is the Dex Stream resume token of the last event handed out (``""``: before the
      first); passing it back continues right after that event, never repeating or skipping one the
      Stream still retains.
    * ``EventPage.missed_events`` is true only when the cursor's event is no longer retained (the
      Flow type's ``AgentEvents`` byte budget dropped it), so events between it and the page's first
      may be lost; rebuild from ``snapshot`` then.
    * ``StateCondition`` is data: a predicate over the committed ``AgentState`` and what it awaits,
      shared by the sync and the async client. An event never proves a state: a turn's end event is
      written before the commit that ends it (``turn_ended`` waits for the commit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast, final

from dex import StreamMessage
from pyrsistent import thaw

from dex_agents.client.errors import NoWorkerError, SessionExistsError
from dex_agents.pure.machine import events as kinds
from dex_agents.pure.machine.keys import turn_number_of
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt, AgentState, AgentStatus, AgentUsage

__all__ = [
    "PendingApproval",
    "DEFAULT_WORKER_PROBE_SECONDS",
    "EventPage",
    "NOTHING_READ",
    "NoWorkerError",
    "PendingInterruptOf",
    "SessionEvent",
    "SessionOverview",
    "SessionExistsError",
    "StateCondition",
    "edit_verdict",
    "page_after",
    "status_is",
    "turn_ended",
    "turns_completed",
    "timeout_message",
    "turns_ended",
]

DEFAULT_WORKER_PROBE_SECONDS: Final = 1
"""How long ``check_worker`` waits for a Worker to take its probe (whole seconds: a Dex RPC timeout)."""

NOTHING_READ: Final = object()
"""A wait's last value seen before any read succeeded."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEvent:
    """One ``AgentEvents`` message of a session, with the cursor that continues after it.

    ``event`` is the core's immutable ``AgentEvent`` (its payload a pyrsistent map); ``payload`` and
    ``to_json()`` are the same as plain JSON data, ready for ``json.dumps``."""

    event: AgentEvent
    cursor: str
    created_at: datetime

    @classmethod
    def of(cls, message: StreamMessage[AgentEvent]) -> SessionEvent:
        """The event of a Stream message read by a Dex Client."""
        return cls(event=message.value, cursor=message.resume_token, created_at=message.created_time)

    @property
    def payload(self) -> dict[str, Any]:
        """The event's payload as plain JSON data (``dict``, ``list``, ``str``, ...), a fresh copy:
        ``json.dumps(item.payload)`` works, where ``item.event.payload`` is the core's immutable map."""
        return cast(dict[str, Any], thaw(self.event.payload))

    def to_json(self) -> dict[str, Any]:
        """The whole event as plain JSON data: ``cursor``, ``type``, ``turn_id``, ``attempt``,
        ``step_execution_id``, ``payload`` and ``created_at`` (ISO 8601); what the console sends."""
        event = self.event
        return {"cursor": self.cursor, "type": event.type, "turn_id": event.turn_id, "attempt": event.attempt,
                "step_execution_id": event.step_execution_id, "payload": self.payload,
                "created_at": self.created_at.isoformat()}


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOverview:
    """A session's committed ``AgentState``, ``PendingInterrupts`` and ``AgentUsage``, read at once
    (``state`` and ``usage`` are ``None`` before they were first written)."""

    state: AgentState | None
    pending_interrupts: Sequence[AgentInterrupt]
    usage: AgentUsage | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class EventPage:
    """Retained events after a cursor, oldest first, and the cursor after the last of them."""

    events: tuple[SessionEvent, ...]
    cursor: str
    missed_events: bool


def page_after(newest_first: Sequence[StreamMessage[AgentEvent]], cursor: str, *, found: bool) -> EventPage:
    """The page of events newer than ``cursor`` from retained messages read newest first, up to the
    cursor's own message (``found``) or to the oldest retained one."""
    events = tuple(SessionEvent.of(message) for message in reversed(newest_first))
    last = events[-1].cursor if events else cursor
    return EventPage(events=events, cursor=last, missed_events=bool(cursor) and not found)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StateCondition:
    """A condition on a session's committed ``AgentState`` (see ``turns_ended`` and its siblings)."""

    description: str
    predicate: Callable[[AgentState], bool]

    def accept(self, state: AgentState | None) -> AgentState | None:
        """``state`` when it is there and meets the condition (what a wait returns), else ``None``."""
        return state if state is not None and self.predicate(state) else None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """A pending interrupt and the session that holds it: the session asked about, or one of its
    sub-agents' child sessions (resolve it through either)."""

    session_id: str
    interrupt: AgentInterrupt


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PendingInterruptOf:
    """A wait for a pending interrupt, of a ``tool_name`` call when given."""

    tool_name: str | None = None

    @property
    def description(self) -> str:
        return "a pending interrupt" + ("" if self.tool_name is None else f" of tool {self.tool_name!r}")

    def accept(self, pending: Sequence[AgentInterrupt]) -> AgentInterrupt | None:
        """The first pending interrupt that matches, else ``None``."""
        return next((interrupt for interrupt in pending if self.tool_name in (None, interrupt.tool_name)), None)


def turns_ended(count: int) -> StateCondition:
    """``count`` turns ended (completed or failed) and no turn runs."""
    return StateCondition(
        description=f"{count} ended turn(s) and no turn running",
        predicate=lambda state: state.ended_turn_count >= count and state.current_turn_id is None,
    )


def turn_ended(turn_id: str) -> StateCondition:
    """The turn ``turn_id`` (``turn-<n>``) ended: ``n`` turns completed or failed (turns end in order).

    Its ``turn_completed``/``turn_failed`` event is written before the Step that ends the turn
    commits, so a reader of events waits on this before it reads what the turn stored.

    Raises:
        ValueError: ``turn_id`` is not ``turn-<n>``.
    """
    number = turn_number_of(turn_id)
    return StateCondition(description=f"turn {turn_id} ended (committed)",
                          predicate=lambda state: state.ended_turn_count >= number)


def turns_completed(count: int) -> StateCondition:
    """``count`` turns completed (a failed turn does not count)."""
    return StateCondition(description=f"{count} completed turn(s)",
                          predicate=lambda state: state.completed_turn_count >= count)


def status_is(status: AgentStatus | str) -> StateCondition:
    """``AgentState.status`` is ``status``.

    Raises:
        ValueError: ``status`` is not an ``AgentStatus`` value.
    """
    wanted = AgentStatus(status)
    return StateCondition(description=f"status {wanted.value!r}", predicate=lambda state: state.status is wanted)


def edit_verdict(event: AgentEvent, interrupt_id: str) -> tuple[bool, str | None] | None:
    """What ``event`` says of an approval of ``interrupt_id`` with edited arguments: (True, None) once
    the session resolved it with the edit, (False, why) once the tool's schema refused the edit (the
    interrupt is pending again), ``None`` for any other event."""
    if event.payload.get("interrupt_id") != interrupt_id:
        return None
    if event.type == kinds.INTERRUPT_RESOLVED:
        return True, None
    if event.type == kinds.APPROVAL_REFUSED:
        return False, str(event.payload.get("error"))
    return None


def timeout_message(session_id: str, description: str, seconds: float, last_seen: object,
                    cause: BaseException | None) -> str:
    """Why a wait timed out: the session, what was awaited, the last value seen, the last read error."""
    seen = "nothing was read" if last_seen is NOTHING_READ else repr(last_seen)
    read_error = "" if cause is None else f"; the last read raised {cause!r}"
    return (f"session {session_id!r}: timed out after {seconds:g} s waiting for {description}; "
            f"last value seen: {seen}{read_error}")
