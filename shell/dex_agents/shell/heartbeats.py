"""Heartbeats of an async Step: periodic ones while the runner works, and one proven sent before a
single-attempt tool runs.

Dex re-delivers an attempt with the same attempt number when its Worker disconnects before sending
any output. A tool Step therefore sends a heartbeat and waits until the Worker's gRPC stream has
taken that frame before it calls the tool, so a crash during the tool fails the attempt
(-> ``outcome_unknown``) instead of running the tool again.

Under ``AsyncWorker`` ``await context.heartbeat()`` only queues the frame (SDK 1.23.0). The Worker's
stream task writes queued frames one at a time and takes the next frame from the queue only after
the previous ``write`` completed. ``heartbeat_sent`` queues the heartbeat and then a second one as a
marker, and returns once the queue is empty: the marker was taken, so the heartbeat's ``write`` had
completed. That reads the SDK's per-invocation output queue (private); when it is missing (another
SDK version) the Step fails before the tool runs, which is the safe side.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from dex import AsyncContext

_SETTLE_SECONDS: Final = 0.0002
"""Pause between checks of the output queue once a few immediate re-checks did not see it drain."""

_IMMEDIATE_CHECKS: Final = 8


class HeartbeatNotProvenError(RuntimeError):
    """The SDK gave no way to see that a heartbeat left the Worker; the tool did not run."""


def _output_queue(context: AsyncContext) -> asyncio.Queue[object]:
    emitter = getattr(context, "_output_emitter", None)
    queue = getattr(emitter, "queue", None)
    if not isinstance(queue, asyncio.Queue):
        raise HeartbeatNotProvenError(
            "cannot prove that the heartbeat left the Worker (this dex SDK has no per-invocation output "
            "queue); the single-attempt tool was not run"
        )
    return queue


async def heartbeat_sent(context: AsyncContext) -> None:
    """Send a heartbeat and return once the Worker's stream has written it (see the module docstring).

    Raises:
        HeartbeatNotProvenError: the SDK's output queue is not there; nothing ran.
        asyncio.CancelledError: the invocation was cancelled.
    """
    queue = _output_queue(context)
    await context.heartbeat()
    await context.heartbeat()
    checks = 0
    while not queue.empty():
        checks += 1
        await asyncio.sleep(0 if checks <= _IMMEDIATE_CHECKS else _SETTLE_SECONDS)


@contextlib.asynccontextmanager
async def background_heartbeats(context: AsyncContext, interval_seconds: float) -> AsyncIterator[None]:
    """Heartbeat every ``interval_seconds`` while the ``async with`` body runs; stopped before it exits
    (a heartbeat after the invocation closed would raise)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval_seconds)
            await context.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


__all__ = ["HeartbeatNotProvenError", "background_heartbeats", "heartbeat_sent"]
