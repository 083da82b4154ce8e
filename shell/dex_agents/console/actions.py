"""The operator actions the console offers: each is one route (``POST /api/sessions/{id}/<name>``, a
JSON object of its fields) and one form on the session page, both made from ``OPERATOR_ACTIONS``.

Invariants:
    * An action only delivers an input the session (the core) reduces, or a Dex call, through the
      session client; it decides nothing here. Adding one the session client gains is one entry.
    * ``action_values`` checks the body against the action's fields before anything is sent: an
      unknown field, a missing required one or one of the wrong type is a ``ValueError`` naming it
      (the route answers 400 ``bad_request``).
    * An action of an approval (``scope="interrupt"``) takes the pending interrupt's ``interrupt_id``
      too, and is offered on each pending approval rather than on the session; one of a tool call
      (``scope="tool_call"``) takes its ``tool_call_id`` and is offered on each open call of the
      running turn; one of an unknown outcome (``scope="unknown_outcome"``) on each call of the
      transcript whose outcome is unknown.
    * An action whose input the session did not apply (a ``False`` answer) raises ``NotApplied``
      (409 ``not_applied``, with the action's reason).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, final

from dex_agents.client import AsyncSessionClient
from dex_agents.console.views import rewound_calls_json

__all__ = ["OPERATOR_ACTIONS", "ActionField", "ActionValues", "NotApplied", "OperatorAction", "action_values"]

ActionValues = Mapping[str, str | int | None]
"""An action's checked fields by name (``None``: an optional field left out)."""

ActionRun = Callable[[AsyncSessionClient, str, ActionValues], Awaitable[dict[str, object]]]
"""Run the action on (client, session ID, its checked fields); returns the JSON answer."""


@final
class NotApplied(Exception):
    """The session answered that the action's input changed nothing (it says why)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ActionField:
    """One field of an action: its JSON name, its label on the page, its type and bounds.

    ``kind="milliseconds"`` is an integer of milliseconds that the page asks for in minutes;
    ``kind="choice"`` one of ``choices``; ``prefill`` names the key of the session's state whose value
    the page puts in the field."""

    name: str
    label: str
    kind: Literal["text", "integer", "milliseconds", "choice"] = "text"
    required: bool = False
    minimum: int = 1
    prefill: str | None = None
    choices: tuple[str, ...] = ()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorAction:
    """One operator action: its route name, its button, what it does, its fields, whether it asks first."""

    name: str
    label: str
    description: str
    run: ActionRun
    fields: tuple[ActionField, ...] = ()
    scope: Literal["session", "interrupt", "tool_call", "unknown_outcome"] = "session"
    confirm: bool = False
    while_set: str | None = None
    """The page offers the action only while the session's state has this key set (``None``: always)."""

    @property
    def all_fields(self) -> tuple[ActionField, ...]:
        """Its fields, the scope's key first (``interrupt_id`` for an approval's action, ``tool_call_id``
        for a tool call's)."""
        if self.scope == "interrupt":
            return (ActionField(name="interrupt_id", label="interrupt", required=True), *self.fields)
        if self.scope in ("tool_call", "unknown_outcome"):
            return (ActionField(name="tool_call_id", label="tool call", required=True), *self.fields)
        return self.fields


def action_values(action: OperatorAction, body: Mapping[str, object]) -> dict[str, str | int | None]:
    """``body``'s fields checked against ``action``'s (see the module docstring)."""
    fields = {field.name: field for field in action.all_fields}
    if unknown := sorted(set(body) - set(fields)):
        raise ValueError(f"{action.name} takes {sorted(fields) or 'no fields'}; unknown: {unknown}")
    values: dict[str, str | int | None] = {}
    for name, field in fields.items():
        value = body.get(name)
        if value is None or value == "":
            if field.required:
                raise ValueError(f"{name} is required")
            values[name] = None
        elif field.kind == "text":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-blank string")
            values[name] = value
        elif field.kind == "choice":
            if value not in field.choices:
                raise ValueError(f"{name} must be one of {list(field.choices)}, got {value!r}")
            values[name] = str(value)
        else:
            if not isinstance(value, int) or isinstance(value, bool) or value < field.minimum:
                raise ValueError(f"{name} must be an integer >= {field.minimum}")
            values[name] = value
    return values


def _text(values: ActionValues, name: str) -> str | None:
    value = values[name]
    assert value is None or isinstance(value, str)
    return value


async def _stop(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    await client.stop(session_id, _text(values, "reason"))
    return {"stopped": True}


async def _compact(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    return {"compacting": await client.compact(session_id)}


async def _extend_deadline(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    interrupt_id, deadline_ms = _text(values, "interrupt_id"), values["deadline_ms"]
    assert interrupt_id is not None and isinstance(deadline_ms, int)
    if not await client.extend_interrupt_deadline(session_id, interrupt_id, deadline_ms):
        raise NotApplied(f"the deadline of {interrupt_id!r} was not moved: it is not pending, never expires, "
                         f"has passed, or the new deadline is not later")
    return {"extended": True, "interrupt_id": interrupt_id, "deadline_ms": deadline_ms}


async def _rewind(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    to_turn = values["to_turn"]
    assert isinstance(to_turn, int)
    audit = await client.rewind(session_id, to_turn, _text(values, "reason"))
    return {"rewound": True, "to_turn": audit.to_turn, "removed_turn_count": audit.removed_turn_count,
            "previous_run_id": audit.previous_run_id, "rewound_at": audit.rewound_at,
            "tool_calls": rewound_calls_json(audit.tool_calls)}


async def _fork(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    at_turn, new_session_id = values["at_turn"], _text(values, "new_session_id")
    assert isinstance(at_turn, int) and new_session_id is not None
    run_id = await client.fork(session_id, at_turn, new_session_id)
    return {"forked": True, "session_id": new_session_id, "run_id": run_id, "at_turn": at_turn}


async def _cancel_turn(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    turn_id, reason = _text(values, "turn_id"), _text(values, "reason")
    assert turn_id is not None and reason is not None
    if not await client.cancel_turn(session_id, turn_id, reason):
        raise NotApplied(f"turn {turn_id!r} was not canceled: it is not the running turn, or is being canceled already")
    return {"canceled": True, "turn_id": turn_id}


async def _cancel_tool_call(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    tool_call_id, reason = _text(values, "tool_call_id"), _text(values, "reason")
    assert tool_call_id is not None and reason is not None
    if not await client.cancel_tool_call(session_id, tool_call_id, reason):
        raise NotApplied(f"tool call {tool_call_id!r} was not canceled: it is not open")
    return {"canceled": True, "tool_call_id": tool_call_id}


async def _settle(client: AsyncSessionClient, session_id: str, values: ActionValues) -> dict[str, object]:
    tool_call_id, status = _text(values, "tool_call_id"), _text(values, "status")
    told, resolver = _text(values, "output_or_message"), _text(values, "resolver")
    assert tool_call_id is not None and status is not None and told is not None and resolver is not None
    await client.resolve_tool_outcome(session_id, tool_call_id, status, told, resolver=resolver,
                                      reason=_text(values, "reason"))
    return {"settled": True, "tool_call_id": tool_call_id, "status": status}


_TOLD_WHY: Final = ActionField(name="reason", label="why (told to the model)", required=True)

OPERATOR_ACTIONS: Final[tuple[OperatorAction, ...]] = (
    OperatorAction(name="cancel_turn", label="Cancel turn", run=_cancel_turn, while_set="current_turn_id",
                   fields=(ActionField(name="turn_id", label="turn", required=True, prefill="current_turn_id"),
                           _TOLD_WHY),
                   description="cancel the running turn (its model call and tool Steps); the model reads why"),
    OperatorAction(name="cancel_tool_call", label="Cancel call", run=_cancel_tool_call, scope="tool_call",
                   fields=(_TOLD_WHY,),
                   description="cancel this open tool call; the model reads 'cancelled by the user: <why>' "
                               "as its result and the turn goes on"),
    OperatorAction(name="resolve_tool_outcome", label="Settle outcome", run=_settle, scope="unknown_outcome",
                   fields=(ActionField(name="status", label="status", kind="choice", required=True,
                                       choices=("succeeded", "failed")),
                           ActionField(name="output_or_message", label="the tool's output, or its error",
                                       required=True),
                           ActionField(name="resolver", label="resolver (who settles it)", required=True),
                           ActionField(name="reason", label="reason (audit)")),
                   description="settle a call whose outcome is unknown as succeeded or failed; the model is told "
                               "in the session's next message"),
    OperatorAction(name="compact", label="Compact history", run=_compact,
                   description="summarize the oldest turns before the next model call (the transcript stays whole)"),
    OperatorAction(name="stop", label="Stop session", run=_stop, confirm=True,
                   fields=(ActionField(name="reason", label="reason (kept by Dex)"),),
                   description="stop the session's run (Dex cancels it); the reason is the run's stop reason"),
    OperatorAction(name="rewind", label="Rewind", run=_rewind, confirm=True,
                   fields=(ActionField(name="to_turn", label="to turn", kind="integer", required=True, minimum=0),
                           ActionField(name="reason", label="reason (audit)")),
                   description="take the session back to right after turn to_turn ended (side effects are not "
                               "undone: the answer names the removed turns' tool calls that may have had one)"),
    OperatorAction(name="fork", label="Fork", run=_fork,
                   fields=(ActionField(name="at_turn", label="at turn", kind="integer", required=True, minimum=0),
                           ActionField(name="new_session_id", label="new session ID", required=True)),
                   description="start a new session with this one's conversation right after turn at_turn"),
    OperatorAction(name="extend_deadline", label="Extend deadline", run=_extend_deadline, scope="interrupt",
                   fields=(ActionField(name="deadline_ms", label="minutes from now",
                                       kind="milliseconds", required=True),),
                   description="move the approval's deadline later (deadline_ms: milliseconds from now)"),
)
