"""``StepRun``: one Step invocation as the shell performs it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import final

from dex import AsyncContext

from dex_agents.pure.step_inputs import Invocation
from dex_agents.shell.events_writer import StreamAgentEventWriter
from dex_agents.shell.runtime import SessionRuntime


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepRun:
    """The Context, the session runtime, the attempt's event writer, the invocation facts and the
    attempt's deadline (its start on the Worker clock plus the method timeout)."""

    context: AsyncContext
    runtime: SessionRuntime
    writer: StreamAgentEventWriter
    invocation: Invocation
    deadline: datetime

    def now(self) -> Invocation:
        """The invocation facts with the clock read again (for a fact observed later in the attempt)."""
        return replace(self.invocation, now_ms=self.runtime.timing.now_ms())


def attempt_deadline(started_ms: int, timeout_seconds: int) -> datetime:
    """When an attempt that started at ``started_ms`` reaches its method timeout (UTC)."""
    return datetime.fromtimestamp((started_ms + timeout_seconds * 1000) / 1000, UTC)


__all__ = ["StepRun", "attempt_deadline"]
