"""The results of the latest round: what the model reads about each tool call it just made.

Invariant: ``latest_round_results`` returns exactly one result per call of the round, in the order
the model made them (the deferral order), each from the call's final record; it never returns a
record of an earlier round of the turn, so no result is fed back twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, final

from dex_agents.adapters.kit.run_state import RunState
from dex_agents.pure.machine.texts import describe_tool_call_outcome
from dex_agents.pure.values.session import AgentToolCall, ToolCallStatus


class ToolOutcome(StrEnum):
    """How a call ended, as frameworks name it (Pydantic AI's ``ToolReturnPart.outcome`` values, and
    ``unknown`` for a write whose outcome is unknown)."""

    SUCCESS = "success"
    FAILED = "failed"
    DENIED = "denied"
    UNKNOWN = "unknown"


_OUTCOMES: Final[Mapping[ToolCallStatus, ToolOutcome]] = {
    ToolCallStatus.SUCCEEDED: ToolOutcome.SUCCESS,
    ToolCallStatus.FAILED: ToolOutcome.FAILED,
    ToolCallStatus.REJECTED: ToolOutcome.DENIED,
    ToolCallStatus.OUTCOME_UNKNOWN: ToolOutcome.UNKNOWN,
    ToolCallStatus.CANCELED: ToolOutcome.DENIED,
}
"""A call an operator cancelled (``canceled``) reads as the user's refusal to let it finish: ``denied``."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """One call's result for the model.

    Attributes:
        tool_call_id: The model's call ID.
        tool_name: The called tool.
        text: ``describe_tool_call_outcome(record)``: the output, or a sentence saying it failed, was
            rejected or has an unknown outcome.
        outcome: How it ended.
        record: The final record itself.
    """

    tool_call_id: str
    tool_name: str
    text: str
    outcome: ToolOutcome
    record: AgentToolCall


def latest_round_results(run_state: RunState, records: Sequence[AgentToolCall]) -> list[ToolResult]:
    """The results of ``run_state``'s round from the turn's ``records`` (``turn.tool_calls``).

    Raises:
        RuntimeError: a call of the round has no record, or its record is not final (the session
            runs the model only once every record of the turn is final).
    """
    by_id = {record.tool_call_id: record for record in records}
    results: list[ToolResult] = []
    for call_id in run_state.round_call_ids:
        record = by_id.get(call_id)
        if record is None:
            raise RuntimeError(f"the turn has no record of tool call {call_id!r} of the latest round")
        outcome = _OUTCOMES.get(record.status)
        if outcome is None:
            raise RuntimeError(f"tool call {call_id!r} is still {record.status.value} when the model runs")
        results.append(
            ToolResult(
                tool_call_id=call_id,
                tool_name=record.tool_name,
                text=describe_tool_call_outcome(record),
                outcome=outcome,
                record=record,
            )
        )
    return results


__all__ = ["ToolOutcome", "ToolResult", "latest_round_results"]
