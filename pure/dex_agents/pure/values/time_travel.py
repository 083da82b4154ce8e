"""The records of a rewind (ours, not the spec's): what ``SessionClient.rewind`` tells the session it
removed, and the audit the session keeps of it (the ``SessionRewinds`` AttributeMap, by the run the
rewind replaced).

A rewind is Dex's time travel (``ResetFlow``) of the session's run to the point right after a turn
ended; side effects of the removed turns are not undone, so the record names every tool call of
those turns that may have had one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from pyrsistent.typing import PVector

from dex_agents.pure.values.session import ToolCallStatus, ToolEffect


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RewoundToolCall:
    """A tool call of a removed turn that may have had an effect (its tool is not a ``read`` and it was
    not rejected or left awaiting approval): its last committed record."""

    tool_call_id: str
    turn_id: str
    tool_name: str
    effect: ToolEffect
    status: ToolCallStatus
    idempotency_key: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RecordSessionRewindInput:
    """Input of ``record_session_rewind`` (ours): the rewind ``SessionClient.rewind`` just made.

    Attributes:
        to_turn: The turn the session went back to (its state is the one right after it ended).
        reason: Why, as the operator gave it (``None``: none given).
        previous_run_id: The Dex run the rewind replaced (its history keeps the removed turns).
        removed_turn_count: How many turns after ``to_turn`` had started (the running one included).
        tool_calls: The removed turns' tool calls that may have had an effect, in commit order.
    """

    to_turn: int
    reason: str | None
    previous_run_id: str
    removed_turn_count: int
    tool_calls: PVector[RewoundToolCall]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRewind:
    """One ``SessionRewinds`` instance (key: ``previous_run_id``): the audit of one rewind, the
    ``record_session_rewind`` input with the Worker clock when the session recorded it."""

    to_turn: int
    reason: str | None
    previous_run_id: str
    removed_turn_count: int
    tool_calls: PVector[RewoundToolCall]
    rewound_at: str


__all__ = ["RecordSessionRewindInput", "RewoundToolCall", "SessionRewind"]
