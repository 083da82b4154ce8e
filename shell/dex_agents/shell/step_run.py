"""``StepRun``: one Step invocation as the shell performs it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import final

from dex import AsyncContext

from dex_agents.pure.machine.step_inputs import Invocation
from dex_agents.shell.events_writer import StreamAgentEventWriter
from dex_agents.shell.runtime import SessionRuntime


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepRun:
    """The Context, the session runtime, the attempt's event writer, the invocation and the attempt's
    deadline (its start on the Worker clock plus the method timeout)."""

    context: AsyncContext
    runtime: SessionRuntime
    writer: StreamAgentEventWriter
    invocation: Invocation
    deadline: datetime

    def now(self) -> Invocation:
        """The invocation with the clock read again (for an input observed later in the attempt)."""
        return replace(self.invocation, now_ms=self.runtime.timing.now_ms())


def instant(epoch_ms: int) -> datetime:
    """The UTC instant of ``epoch_ms``."""
    return datetime.fromtimestamp(epoch_ms / 1000, UTC)


__all__ = ["StepRun", "instant"]
