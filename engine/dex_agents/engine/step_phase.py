"""A Step execution's phase, with every allowed move in one table (as ``tasks.TaskState`` is for a
task's life)::

    created as  wait_for (a Step with ``wait_for``), execute (``skip_wait_for``), waiting (the Flow
                timeout handler, whose Wait is its Timer)
    wait_for -> waiting   its Wait is stored
             -> execute   it returned no Wait, or it failed for good with WaitForFailurePolicy.PROCEED
             -> failed    it failed for good (the failure route or the run's failure follows)
             -> canceled  a decision, an RPC or the run's close canceled it
    waiting  -> execute   its Wait is satisfied
             -> canceled
    execute  -> done      it returned its decision
             -> failed    it failed for good
             -> canceled
    done, failed, canceled: final

A retry keeps the phase (the attempt number grows). Every phase change of a stored Step goes
through :func:`check_move` (``RowCache.update_step`` and ``RowCache.cancel_active_steps`` call it);
a row restored by a reset is created in the phase its history gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

Phase = Literal["wait_for", "waiting", "execute", "done", "failed", "canceled"]

MOVES: Final[Mapping[Phase, frozenset[Phase]]] = {
    "wait_for": frozenset({"waiting", "execute", "failed", "canceled"}),
    "waiting": frozenset({"execute", "canceled"}),
    "execute": frozenset({"done", "failed", "canceled"}),
    "done": frozenset(),
    "failed": frozenset(),
    "canceled": frozenset(),
}
"""Phase -> the phases it may move to."""

CREATED_AS: Final[frozenset[Phase]] = frozenset({"wait_for", "execute", "waiting"})
ACTIVE_PHASES: Final[tuple[Phase, ...]] = ("wait_for", "waiting", "execute")
"""The phases of an execution that has not ended (the ones that may move at all)."""


class IllegalStepTransition(RuntimeError):
    """A Step execution was moved along a move its phase table does not allow (an engine bug)."""


def check_move(seid: str, old: Phase, new: Phase) -> None:
    """Allow ``old -> new`` (or staying in ``old``).

    Raises:
        IllegalStepTransition: the table does not allow the move.
    """
    if new != old and new not in MOVES[old]:
        raise IllegalStepTransition(f"step execution {seid}: {old} -> {new} is not allowed")


def parse(value: str) -> Phase:
    """The phase stored as ``value``.

    Raises:
        ValueError: ``value`` is no phase.
    """
    match value:
        case "wait_for" | "waiting" | "execute" | "done" | "failed" | "canceled":
            return value
        case _:
            raise ValueError(f"unknown step phase {value!r}")
