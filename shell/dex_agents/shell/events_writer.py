"""``StreamAgentEventWriter``: the live events of one Step attempt, written to the ``AgentEvents`` Stream.

Invariants:
    * Every event carries the writer's ``turn_id``, the Step ``attempt`` and ``step_execution_id``.
    * Consecutive text or reasoning deltas are merged by the pure coalescer
      (``dex_agents.pure.machine.coalescing``): up to 100 ms or 1,024 characters. Any other event first
      flushes the buffered deltas, so events keep the order they were written in.
    * After ``close()`` (the Step handler returns) every write is dropped.
    * The payloads of the session's own events a runner writes (``tool_call_started``,
      ``tool_call_finished``) come from ``dex_agents.pure.machine.events``, the builders the core uses.
    * Events are best effort: an event larger than the Stream's byte budget, or one the SDK refuses,
      is dropped and logged; a write never fails the Step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final, final

from dex import AsyncContext, Stream
from returns.pipeline import is_successful

from dex_agents.pure.machine.coalescing import (
    EMPTY_DELTA_BUFFER,
    CoalescerStep,
    DeltaBuffer,
    DeltaKind,
    add_delta,
    flush,
    flush_due_at,
    flush_if_due,
)
from dex_agents.pure.machine.events import (
    TOOL_CALL_FINISHED,
    TOOL_CALL_STARTED,
    tool_call_finished_payload,
    tool_call_started_payload,
)
from dex_agents.pure.wire.json_value import JsonObject
from dex_agents.pure.values.session import AgentEvent, ToolCallStatus
from dex_agents.pure.wire import JSON_VALUE_TYPE, encode, from_json_data

_LOGGER: Final = logging.getLogger(__name__)


@final
class StreamAgentEventWriter:
    """The ``AgentEventWriter`` of one Step attempt (see the module docstring)."""

    def __init__(
        self,
        context: AsyncContext,
        stream: Stream[AgentEvent],
        turn_id: str | None,
        now_ms: Callable[[], int],
    ) -> None:
        self._context = context
        self._stream = stream
        self._turn_id = turn_id
        self._now_ms = now_ms
        self._buffer: DeltaBuffer = EMPTY_DELTA_BUFFER
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    @property
    def turn_id(self) -> str | None:
        return self._turn_id

    @property
    def attempt(self) -> int:
        return self._context.attempt

    def write_text_delta(self, text: str) -> None:
        self._add_delta(DeltaKind.TEXT, text)

    def write_reasoning_delta(self, text: str) -> None:
        self._add_delta(DeltaKind.REASONING, text)

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None:
        self.write_event(TOOL_CALL_STARTED, tool_call_started_payload(tool_call_id, tool_name))

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: ToolCallStatus) -> None:
        payload = tool_call_finished_payload(tool_call_id, tool_name, ToolCallStatus(status))
        self.write_event(TOOL_CALL_FINISHED, payload)

    def write_event(self, event_type: str, payload: Mapping[str, object]) -> None:
        """Write an event with a JSON-object ``payload`` of plain Python values (dropped when it is not one)."""
        if self._closed:
            return
        decoded = from_json_data(dict(payload), JSON_VALUE_TYPE)
        if not is_successful(decoded) or not isinstance(decoded.unwrap(), Mapping):
            _LOGGER.warning("dropped %s event: its payload is not a JSON object", event_type)
            return
        value = decoded.unwrap()
        assert isinstance(value, Mapping)
        self.write_session_event(self._stamped(event_type, value))

    def write_session_event(self, event: AgentEvent) -> None:
        """Write an event the session built (already stamped), after the buffered deltas."""
        if self._closed:
            return
        self._apply(flush(self._buffer))
        self._write(event)

    def close(self) -> None:
        """Flush the buffered deltas and drop every later write."""
        if self._closed:
            return
        self._apply(flush(self._buffer))
        self._closed = True
        self._cancel_timer()

    def _stamped(self, event_type: str, payload: JsonObject) -> AgentEvent:
        return AgentEvent(
            type=event_type,
            turn_id=self._turn_id,
            attempt=self._context.attempt,
            step_execution_id=self._context.step_execution_id,
            payload=payload,
        )

    def _add_delta(self, kind: DeltaKind, text: str) -> None:
        if self._closed:
            return
        self._apply(add_delta(self._buffer, kind, text, self._now_ms()))

    def _apply(self, step: CoalescerStep) -> None:
        self._buffer = step.buffer
        for delta in step.flushed:
            self._write(delta.to_event(turn_id=self._turn_id, attempt=self.attempt,
                                       step_execution_id=self._context.step_execution_id))
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        due_ms = flush_due_at(self._buffer)
        if due_ms is None:
            self._cancel_timer()
        elif self._timer is None:
            delay = max(0, due_ms - self._now_ms()) / 1000
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self._closed:
            self._apply(flush_if_due(self._buffer, self._now_ms()))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _write(self, event: AgentEvent) -> None:
        capacity = self._stream.stream_capacity_bytes
        size = _size_bound(event)
        if size is None or size > capacity:
            size = len(encode(event))
        if size > capacity:
            _LOGGER.warning("dropped %s event of %d bytes: over the Stream's %d-byte budget",
                            event.type, size, self._stream.stream_capacity_bytes)
            return
        try:
            self._stream.write(self._context, event)
        except Exception:  # events are best effort: a refused write must not fail the Step
            _LOGGER.exception("dropped %s event: the Stream write failed", event.type)


_MAX_ESCAPE: Final = 6
"""The most ASCII characters one character can take in the wire JSON (``\\uXXXX``)."""

_FIXED_BOUND: Final = 512
"""More than the field names, numbers, quotes and separators of an event with a flat payload."""


def _size_bound(event: AgentEvent) -> int | None:
    """An upper bound of the event's encoded size when its payload is flat (cheaper than encoding it),
    else ``None``."""
    strings = len(event.type) + len(event.turn_id or "") + len(event.step_execution_id)
    for key, value in event.payload.items():
        if isinstance(value, str):
            strings += len(value)
        elif not isinstance(value, (bool, int, float)) and value is not None:
            return None
        strings += len(key) + 24
    return strings * _MAX_ESCAPE + _FIXED_BOUND


__all__ = ["StreamAgentEventWriter"]
