"""Coalescing of live text and reasoning deltas, as a pure state machine over given timestamps.

The events writer merges consecutive deltas of one kind into one ``text_delta`` / ``reasoning_delta``
event. Each function takes the buffer (and the caller's ``now_ms``) and returns a ``CoalescerStep``:
the new buffer and the events to write now, in order.

Rules:
    * A delta of the buffered kind is appended; a delta of the other kind first flushes the buffer.
    * After a delta is added, the buffer is flushed when it holds at least ``FLUSH_AT_CHARACTERS``
      (1,024) characters, or when ``FLUSH_AFTER_MS`` (100 ms) have passed since its first delta
      (``now_ms - first_delta_ms >= 100``). 1,024 is a threshold, not a cap: a single long delta is
      written whole, never split. Characters are Python ``str`` characters (code points).
    * ``flush_if_due(buffer, now_ms)`` applies the time rule without a new delta, for a timer tick
      the shell schedules at ``flush_due_at(buffer)``; ``flush(buffer)`` writes whatever is buffered,
      on close and before any other event so that events keep their order.
    * An empty delta carries nothing: it neither starts a buffer nor changes its kind; it only lets
      a due flush happen.
    * A ``now_ms`` earlier than the first delta's (a clock step back) never makes a flush due by time.

Invariants: no event is empty; the events' texts, in order, concatenate to the deltas' texts of each
kind run; after any step at ``now_ms`` the buffer is empty or holds fewer than 1,024 characters first
buffered less than 100 ms before ``now_ms``.

The events are data ready for an ``AgentEvent`` (type and ``{"text"}`` payload); the caller supplies
``turn_id``, ``attempt`` and ``step_execution_id`` through ``CoalescedDelta.to_event``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, TypeAlias, assert_never, final

from pyrsistent import pmap, pvector
from pyrsistent.typing import PVector

from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.values.session import AgentEvent

FLUSH_AFTER_MS: Final = 100
"""A buffer is flushed once this many milliseconds have passed since its first delta."""

FLUSH_AT_CHARACTERS: Final = 1024
"""A buffer is flushed once it holds at least this many characters."""


@final
class DeltaKind(StrEnum):
    """The kind of a live delta; the value is its event type."""

    TEXT = "text_delta"
    REASONING = "reasoning_delta"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CoalescedDelta:
    """One event to write: a non-empty run of consecutive deltas of one kind."""

    kind: DeltaKind
    text: str

    @property
    def type(self) -> str:
        """The ``AgentEvent.type``: ``text_delta`` or ``reasoning_delta``."""
        return self.kind.value

    @property
    def payload(self) -> JsonObject:
        """The ``AgentEvent.payload``: ``{"text": <text>}``."""
        text: JsonValue = self.text
        return pmap({"text": text})

    def to_event(self, *, turn_id: str | None, attempt: int, step_execution_id: str) -> AgentEvent:
        """The ``AgentEvent`` of this delta, for the Step invocation the caller names."""
        return AgentEvent(
            type=self.type,
            turn_id=turn_id,
            attempt=attempt,
            step_execution_id=step_execution_id,
            payload=self.payload,
        )


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class EmptyDeltaBuffer:
    """Nothing is buffered."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PendingDeltas:
    """Deltas of one kind waiting to be written. ``text`` is non-empty; ``first_delta_ms`` is when the
    first of them arrived."""

    kind: DeltaKind
    text: str
    first_delta_ms: int


DeltaBuffer: TypeAlias = EmptyDeltaBuffer | PendingDeltas
"""The coalescer's state."""

EMPTY_DELTA_BUFFER: Final = EmptyDeltaBuffer()
"""The buffer to start from."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CoalescerStep:
    """The buffer after one input, and the events to write now, in order."""

    buffer: DeltaBuffer
    flushed: PVector[CoalescedDelta]


def _written(pending: PendingDeltas) -> CoalescedDelta:
    return CoalescedDelta(kind=pending.kind, text=pending.text)


def _is_due_by_time(pending: PendingDeltas, now_ms: int) -> bool:
    return now_ms - pending.first_delta_ms >= FLUSH_AFTER_MS


def _is_due(pending: PendingDeltas, now_ms: int) -> bool:
    return len(pending.text) >= FLUSH_AT_CHARACTERS or _is_due_by_time(pending, now_ms)


def _settle(pending: PendingDeltas, now_ms: int, already_flushed: tuple[CoalescedDelta, ...]) -> CoalescerStep:
    if _is_due(pending, now_ms):
        return CoalescerStep(buffer=EMPTY_DELTA_BUFFER, flushed=pvector((*already_flushed, _written(pending))))
    return CoalescerStep(buffer=pending, flushed=pvector(already_flushed))


def add_delta(buffer: DeltaBuffer, kind: DeltaKind, text: str, now_ms: int) -> CoalescerStep:
    """Buffer one delta written at ``now_ms``; return what must be written now."""
    if text == "":
        return flush_if_due(buffer, now_ms)
    match buffer:
        case EmptyDeltaBuffer():
            return _settle(PendingDeltas(kind=kind, text=text, first_delta_ms=now_ms), now_ms, ())
        case PendingDeltas(kind=buffered_kind, text=buffered_text, first_delta_ms=first_delta_ms):
            if buffered_kind == kind:
                merged = PendingDeltas(kind=kind, text=buffered_text + text, first_delta_ms=first_delta_ms)
                return _settle(merged, now_ms, ())
            fresh = PendingDeltas(kind=kind, text=text, first_delta_ms=now_ms)
            return _settle(fresh, now_ms, (_written(buffer),))
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(buffer)


def flush_if_due(buffer: DeltaBuffer, now_ms: int) -> CoalescerStep:
    """Flush the buffer if ``FLUSH_AFTER_MS`` have passed since its first delta (a timer tick)."""
    match buffer:
        case EmptyDeltaBuffer():
            return CoalescerStep(buffer=buffer, flushed=pvector())
        case PendingDeltas():
            return _settle(buffer, now_ms, ())
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(buffer)


def flush(buffer: DeltaBuffer) -> CoalescerStep:
    """Flush whatever is buffered: on close, and before writing any other event."""
    match buffer:
        case EmptyDeltaBuffer():
            return CoalescerStep(buffer=buffer, flushed=pvector())
        case PendingDeltas():
            return CoalescerStep(buffer=EMPTY_DELTA_BUFFER, flushed=pvector([_written(buffer)]))
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(buffer)


def flush_due_at(buffer: DeltaBuffer) -> int | None:
    """When the buffer falls due by time (``first_delta_ms + 100``), or ``None`` when it is empty."""
    match buffer:
        case EmptyDeltaBuffer():
            return None
        case PendingDeltas(first_delta_ms=first_delta_ms):
            return first_delta_ms + FLUSH_AFTER_MS
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(buffer)


__all__ = [
    "EMPTY_DELTA_BUFFER",
    "FLUSH_AFTER_MS",
    "FLUSH_AT_CHARACTERS",
    "CoalescedDelta",
    "CoalescerStep",
    "DeltaBuffer",
    "DeltaKind",
    "EmptyDeltaBuffer",
    "PendingDeltas",
    "add_delta",
    "flush",
    "flush_due_at",
    "flush_if_due",
]
