"""Runner-output validation: the spec's runner defects, found and described as data.

A defect fails the ``RunModel`` (or message-building) attempt: the reducer answers ``FailAttempt``
with the defects' text, the state stays as committed, and Dex retries the attempt (then takes the
failure route). Nothing of a defective output is stored.

Defects of ``ToolCallsRequested``: an empty ``framework_run_state``, no tool calls, an empty tool
call ID, an ID containing ``/``, an ID repeated within the response, an ID that already has a record
in this turn, and (for any outcome) a usage count that is negative or not an int. Defects of
``build_user_message``: a message whose role is not ``user``.

Text from outside (RPC inputs, the start input) must be encodable as UTF-8: a Python ``str`` may hold
a surrogate code point (U+D800..U+DFFF; JSON's ``"\\ud800"`` decodes to one), which no UTF-8 encoder,
model API or framework accepts. ``lone_surrogate_problem`` names the first one
(``first_lone_surrogate_problem``: in several fields); the RPCs refuse such text, and ``without_lone_surrogates`` repairs the start input, which cannot be refused.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import final

from dex_agents.pure.values.runner import AgentTurnOutcome, ToolCallsRequested
from dex_agents.pure.machine.usage import is_valid_usage
from dex_agents.pure.values.session import FrameworkMessage, MessageRole


@final
class RunnerDefectKind(StrEnum):
    """What was wrong with the runner's output."""

    EMPTY_RUN_STATE = "empty_run_state"
    NO_TOOL_CALLS = "no_tool_calls"
    EMPTY_TOOL_CALL_ID = "empty_tool_call_id"
    SLASH_IN_TOOL_CALL_ID = "slash_in_tool_call_id"
    DUPLICATE_TOOL_CALL_ID = "duplicate_tool_call_id"
    TOOL_CALL_ALREADY_RECORDED = "tool_call_already_recorded"
    INVALID_USAGE = "invalid_usage"
    NOT_A_USER_MESSAGE = "not_a_user_message"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerDefect:
    """One defect, with a message that names the offending value."""

    kind: RunnerDefectKind
    message: str


def _tool_call_id_defects(tool_call_ids: Iterable[str], recorded_ids: Collection[str]) -> list[RunnerDefect]:
    defects: list[RunnerDefect] = []
    seen: set[str] = set()
    for position, tool_call_id in enumerate(tool_call_ids):
        if tool_call_id == "":
            defects.append(
                RunnerDefect(
                    kind=RunnerDefectKind.EMPTY_TOOL_CALL_ID,
                    message=f"tool call {position} has an empty tool call ID",
                )
            )
            continue
        if "/" in tool_call_id:
            defects.append(
                RunnerDefect(
                    kind=RunnerDefectKind.SLASH_IN_TOOL_CALL_ID,
                    message=f"tool call ID {tool_call_id!r} contains '/'",
                )
            )
        if tool_call_id in seen:
            defects.append(
                RunnerDefect(
                    kind=RunnerDefectKind.DUPLICATE_TOOL_CALL_ID,
                    message=f"tool call ID {tool_call_id!r} appears more than once in one response",
                )
            )
        elif tool_call_id in recorded_ids:
            defects.append(
                RunnerDefect(
                    kind=RunnerDefectKind.TOOL_CALL_ALREADY_RECORDED,
                    message=f"tool call ID {tool_call_id!r} already has a record in this turn",
                )
            )
        seen.add(tool_call_id)
    return defects


def _tool_calls_requested_defects(outcome: ToolCallsRequested, recorded_ids: Collection[str]) -> list[RunnerDefect]:
    defects: list[RunnerDefect] = []
    if outcome.framework_run_state == "":
        defects.append(
            RunnerDefect(kind=RunnerDefectKind.EMPTY_RUN_STATE, message="framework_run_state is empty")
        )
    if len(outcome.tool_calls) == 0:
        defects.append(
            RunnerDefect(kind=RunnerDefectKind.NO_TOOL_CALLS, message="ToolCallsRequested has no tool calls")
        )
    defects.extend(_tool_call_id_defects((call.tool_call_id for call in outcome.tool_calls), recorded_ids))
    return defects


def validate_turn_outcome(outcome: AgentTurnOutcome, recorded_ids: Collection[str]) -> tuple[RunnerDefect, ...]:
    """Return every defect of a ``run_model_step`` outcome (empty when it is valid).

    Args:
        outcome: What the runner returned.
        recorded_ids: Tool call IDs that already have a record in the running turn.
    """
    defects: list[RunnerDefect] = []
    if not is_valid_usage(outcome.usage):
        defects.append(
            RunnerDefect(
                kind=RunnerDefectKind.INVALID_USAGE,
                message=f"usage counts must be non-negative ints, got {outcome.usage!r}",
            )
        )
    if isinstance(outcome, ToolCallsRequested):
        defects.extend(_tool_calls_requested_defects(outcome, recorded_ids))
    return tuple(defects)


def validate_user_message(message: FrameworkMessage) -> tuple[RunnerDefect, ...]:
    """Return the defects of a ``build_user_message`` result (empty when its role is ``user``)."""
    if message.role is MessageRole.USER:
        return ()
    return (
        RunnerDefect(
            kind=RunnerDefectKind.NOT_A_USER_MESSAGE,
            message=f"build_user_message returned role {message.role.value!r}, not 'user'",
        ),
    )


def _first_surrogate(text: str) -> int | None:
    """The index of the first surrogate code point in ``text`` (the only thing UTF-8 cannot encode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def lone_surrogate_problem(text: str, field_name: str) -> str | None:
    """``None`` when ``text`` can be encoded as UTF-8, else what is wrong, naming ``field_name``.

    >>> lone_surrogate_problem("ok \\ud800", "text")
    'text contains a lone surrogate U+D800 at index 3; it cannot be encoded as UTF-8'
    """
    index = _first_surrogate(text)
    if index is None:
        return None
    return f"{field_name} contains a lone surrogate U+{ord(text[index]):04X} at index {index}; it cannot be encoded as UTF-8"


def first_lone_surrogate_problem(fields: Iterable[tuple[str | None, str]]) -> str | None:
    """``lone_surrogate_problem`` of the first ``(text, field_name)`` of ``fields`` whose text cannot be
    encoded (a ``None`` text is skipped), else ``None``.

    >>> first_lone_surrogate_problem([(None, "reason"), ("ok", "approver"), ("\\udfff", "text")])
    'text contains a lone surrogate U+DFFF at index 0; it cannot be encoded as UTF-8'
    """
    for text, name in fields:
        problem = None if text is None else lone_surrogate_problem(text, name)
        if problem is not None:
            return problem
    return None


def json_object_problem(text: str, field_name: str) -> str | None:
    """``None`` when ``text`` is one JSON object (strict: no ``NaN``, no duplicate keys), else what is
    wrong, naming ``field_name``.

    >>> json_object_problem('[1]', "edited_arguments")
    'edited_arguments must be a JSON object, got list'
    """
    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        keys = [key for key, _value in items]
        if len(set(keys)) != len(keys):
            raise ValueError("a key appears twice")
        return dict(items)

    def constant(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except ValueError as error:
        return f"{field_name} is not JSON: {error}"
    if not isinstance(value, dict):
        return f"{field_name} must be a JSON object, got {type(value).__name__}"
    return None


def without_lone_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD (same length, encodable as UTF-8)."""
    if _first_surrogate(text) is None:
        return text
    return "".join("\ufffd" if 0xD800 <= ord(character) <= 0xDFFF else character for character in text)


def describe_defects(defects: Iterable[RunnerDefect]) -> str:
    """One error text for ``FailAttempt``: ``runner defect: <message>; <message>``."""
    return "runner defect: " + "; ".join(defect.message for defect in defects)


__all__ = [
    "RunnerDefect",
    "RunnerDefectKind",
    "describe_defects",
    "json_object_problem",
    "first_lone_surrogate_problem",
    "lone_surrogate_problem",
    "validate_turn_outcome",
    "validate_user_message",
    "without_lone_surrogates",
]
