"""Rendering a session's ``AgentEvents`` for a terminal, grouped by turn and attempt.

Invariants:
    * Within one ``step_execution_id`` only the highest attempt's text counts: a delta of a lower
      attempt than one already seen is dropped, and the first delta of a higher attempt prints a
      note that the earlier attempt's text is discarded.
    * Text and reasoning deltas stream inline; every other event starts on a fresh line.
    * ``usage_recorded`` events are summed per turn and printed once the turn ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from rich.console import Console

from dex_agents.pure.machine import events as kinds
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.session import AgentEvent, AgentUsage

__all__ = ["EventView", "format_usage", "latest_attempts_only"]

_STATUS_STYLES: Final = {"succeeded": "green", "failed": "red", "outcome_unknown": "bold red", "rejected": "yellow"}


def format_usage(usage: AgentUsage) -> str:
    """``requests=1 input_tokens=12 output_tokens=3`` (cache counts only when non-zero)."""
    parts = [f"requests={usage.requests}", f"input_tokens={usage.input_tokens}",
             f"output_tokens={usage.output_tokens}"]
    if usage.cache_read_tokens:
        parts.append(f"cache_read_tokens={usage.cache_read_tokens}")
    if usage.cache_write_tokens:
        parts.append(f"cache_write_tokens={usage.cache_write_tokens}")
    return " ".join(parts)


def _count(payload: Mapping[str, JsonValue], key: str) -> int:
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_json(value: JsonValue) -> AgentUsage:
    """An ``AgentUsage`` from its wire JSON object (missing or bad counts read as 0)."""
    if not isinstance(value, Mapping):
        return AgentUsage()
    return AgentUsage(requests=_count(value, "requests"), input_tokens=_count(value, "input_tokens"),
                      output_tokens=_count(value, "output_tokens"),
                      cache_read_tokens=_count(value, "cache_read_tokens"),
                      cache_write_tokens=_count(value, "cache_write_tokens"))


def _add(left: AgentUsage, right: AgentUsage) -> AgentUsage:
    return AgentUsage(requests=left.requests + right.requests, input_tokens=left.input_tokens + right.input_tokens,
                      output_tokens=left.output_tokens + right.output_tokens,
                      cache_read_tokens=left.cache_read_tokens + right.cache_read_tokens,
                      cache_write_tokens=left.cache_write_tokens + right.cache_write_tokens)


def latest_attempts_only(events: Iterable[AgentEvent]) -> list[AgentEvent]:
    """``events`` without the text and reasoning deltas of superseded attempts of their Step."""
    listed = list(events)
    highest: dict[str, int] = {}
    for event in listed:
        highest[event.step_execution_id] = max(highest.get(event.step_execution_id, 0), event.attempt)
    return [event for event in listed
            if event.type not in (kinds.TEXT_DELTA, kinds.REASONING_DELTA)
            or event.attempt >= highest[event.step_execution_id]]


def _text(payload: Mapping[str, JsonValue], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ("" if value is None else str(value))


class EventView:
    """Prints events as they arrive; remembers turns, attempts and usage."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.turn_numbers: dict[str, int] = {}
        self.ended_turns: dict[str, str] = {}
        self.turn_usage: dict[str, AgentUsage] = {}
        self.session_usage = AgentUsage()
        self.finished_tools: dict[tuple[str, str], tuple[str, str]] = {}
        """``(turn_id, tool_call_id)`` -> ``(tool_name, status)`` of every finished tool call."""
        self._attempts: dict[str, int] = {}
        self._inline = False

    def _line(self, text: str, style: str | None = None) -> None:
        if self._inline:
            self.console.print()
            self._inline = False
        self.console.print(text, style=style, markup=False, highlight=False)

    def _inline_text(self, text: str, style: str | None) -> None:
        self.console.print(text, end="", style=style, markup=False, highlight=False, soft_wrap=True)
        self._inline = bool(text) and not text.endswith("\n")

    def finish_line(self) -> None:
        """End an open line of streamed text."""
        if self._inline:
            self.console.print()
            self._inline = False

    def show(self, event: AgentEvent) -> None:
        """Render one event."""
        payload = event.payload
        if event.type in (kinds.TEXT_DELTA, kinds.REASONING_DELTA):
            seen = self._attempts.get(event.step_execution_id)
            if seen is not None and event.attempt < seen:
                return
            if seen is not None and event.attempt > seen:
                self._line(f"  (model call retried: attempt {event.attempt}; the text of attempt {seen} is discarded)",
                           "yellow")
            self._attempts[event.step_execution_id] = event.attempt
            style = "dim italic" if event.type == kinds.REASONING_DELTA else None
            self._inline_text(_text(payload, "text"), style)
            return
        self._attempts[event.step_execution_id] = max(self._attempts.get(event.step_execution_id, 0), event.attempt)
        turn_id = event.turn_id or "?"
        attempt = f" (attempt {event.attempt})" if event.attempt > 1 else ""
        match event.type:
            case kinds.TURN_STARTED:
                number = self.turn_numbers.setdefault(turn_id, len(self.turn_numbers) + 1)
                self.finish_line()
                self.console.rule(f"turn {number}", style="cyan")
            case kinds.TURN_COMPLETED:
                self._end_turn(turn_id, "completed", "green")
            case kinds.TURN_FAILED:
                self._line(f"turn failed: {_text(payload, 'error')}", "bold red")
                self._end_turn(turn_id, "failed", "red")
            case kinds.TOOL_CALL_DEFERRED:
                approval = ", needs approval" if payload.get("requires_approval") is True else ""
                self._line(f"  tool {_text(payload, 'tool_name')} requested ({_text(payload, 'effect')}{approval})",
                           "blue")
            case kinds.TOOL_CALL_STARTED:
                self._line(f"  tool {_text(payload, 'tool_name')} started{attempt}", "blue")
            case kinds.TOOL_CALL_FINISHED:
                status = _text(payload, "status")
                self.finished_tools[(turn_id, _text(payload, "tool_call_id"))] = (_text(payload, "tool_name"), status)
                self._line(f"  tool {_text(payload, 'tool_name')} finished: {status}{attempt}",
                           _STATUS_STYLES.get(status, "blue"))
            case kinds.INTERRUPT_RAISED:
                self._line(f"  approval needed for {_text(payload, 'tool_name')} "
                           f"(interrupt {_text(payload, 'interrupt_id')})", "bold magenta")
            case kinds.INTERRUPT_RESOLVED:
                if payload.get("approved") is True:
                    self._line(f"  interrupt {_text(payload, 'interrupt_id')} approved", "green")
                else:
                    reason = _text(payload, "rejection_message")
                    self._line(f"  interrupt {_text(payload, 'interrupt_id')} rejected"
                               + (f": {reason}" if reason else ""), "yellow")
            case kinds.TOOL_OUTCOME_SETTLED:
                by = "its reconcile check" if payload.get("settled_by") == "reconcile" else _text(payload, "resolver")
                self._line(f"  tool {_text(payload, 'tool_name')}: the unknown outcome was settled by {by}: "
                           f"{_text(payload, 'status')}", "bold green")
            case kinds.SUB_AGENT_ENDED:
                self._line(f"  sub-agent {_text(payload, 'tool_name')}: child session {_text(payload, 'child_session_id')} "
                           f"ended {_text(payload, 'child_status')}; its usage {format_usage(usage_from_json(payload.get('usage')))} "
                           "added to this session's", "blue")
            case kinds.USAGE_RECORDED:
                recorded = usage_from_json(payload.get("recorded"))
                self.turn_usage[turn_id] = _add(self.turn_usage.get(turn_id, AgentUsage()), recorded)
                self.session_usage = usage_from_json(payload.get("session"))
            case _:
                self._line(f"  {event.type}{attempt}: {dict(payload)}", "dim")

    def _end_turn(self, turn_id: str, outcome: str, style: str) -> None:
        self.ended_turns[turn_id] = outcome
        number = self.turn_numbers.get(turn_id)
        usage = self.turn_usage.get(turn_id, AgentUsage())
        label = f"turn {number}" if number is not None else f"turn {turn_id}"
        self._line(f"{label} {outcome}; usage: {format_usage(usage)} (session: {format_usage(self.session_usage)})",
                   style)
