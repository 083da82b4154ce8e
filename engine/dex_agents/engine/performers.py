"""The contract between the engine core's effects loop and the components that perform its
effects: what the loop may ask of each (``core.EngineCore.wire`` is given one of each, once), and
the error it raises when anything it calls tries to run it again.

A performer runs under the engine lock, inside the loop, and never performs an effect itself: its
follow-ups go back to the loop as data (``EngineCore.after_commit``). A leaf: it imports no engine
module but ``rows``.
"""

from __future__ import annotations

import sqlite3
from typing import Protocol

from .rows import Effects

__all__ = ["EffectsLoopReentered", "FlowEffects", "RunEffects", "StepEffects", "WaitEffects"]


class EffectsLoopReentered(RuntimeError):
    """Something the effects loop called tried to run the loop again (an operation must hand its
    effects over with ``after_commit``, never perform them)."""


class StepEffects(Protocol):
    """What the effects loop asks of the Step operations (``steps.StepOps``)."""

    def launch(self, uid: int, seid: str) -> None:
        """Dispatch the Step's current method."""

    def drop_task(self, uid: int, seid: str) -> None:
        """Stop the task of a canceled or closed Step execution."""


class WaitEffects(Protocol):
    """What the effects loop and a publish ask of the Waits (``step_waits.StepWaits``)."""

    def check_waits(self, uid: int) -> None:
        """Re-evaluate the run's waiting Steps."""

    def complete_waits(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Complete, in the open transaction, the run's Waits its publishes satisfied."""

    def fire_timer(self, uid: int, seid: str, idx: int) -> None:
        """A Timer's time came."""


class FlowEffects(Protocol):
    """What the effects loop asks of the Flow operations (``flows.FlowOps``)."""

    def arm_timeout(self, uid: int, timeout_ms: int, timeout_policy: int) -> None:
        """Close the run when its Flow timeout passes."""


class RunEffects(Protocol):
    """What the effects loop asks of the continue-as-new operations (``continue_as_new``)."""

    def continue_if_due(self, uid: int, events: int) -> None:
        """Roll the run over if its history (``events`` long) exceeds its threshold."""
