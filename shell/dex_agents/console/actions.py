"""The operator actions the console offers: each is one route (``POST /api/sessions/{id}/<name>``) and
one button on the session page, both made from ``OPERATOR_ACTIONS``.

Invariants: an action only delivers an input the session (the core) reduces; it decides nothing
here. Adding one the session client gained (cancel, settle an outcome, rewind, fork) is one entry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, final

from dex_agents.client import AsyncSessionClient

__all__ = ["OPERATOR_ACTIONS", "OperatorAction"]

ActionRun = Callable[[AsyncSessionClient, str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Run the action on (client, session ID, JSON body); returns the JSON answer."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorAction:
    """One operator action: its route name, its button, what it does, and whether it asks first."""

    name: str
    label: str
    description: str
    run: ActionRun
    confirm: bool = False


async def _stop(client: AsyncSessionClient, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
    await client.stop(session_id)
    return {"stopped": True}


async def _compact(client: AsyncSessionClient, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"compacting": await client.compact(session_id)}


OPERATOR_ACTIONS: Final[tuple[OperatorAction, ...]] = (
    OperatorAction(name="compact", label="Compact history", run=_compact,
                   description="summarize the oldest turns before the next model call (the transcript stays whole)"),
    OperatorAction(name="stop", label="Stop session", run=_stop, confirm=True,
                   description="stop the session's run (Dex cancels it)"),
)
