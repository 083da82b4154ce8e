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
completed. The queue is an SDK internal (``sdk_private``).

Invariants:
    * The proof is bounded: when the queue has not drained by the deadline (a flow-controlled stream,
      a dead sender task) or the SDK has no queue, it raises ``HeartbeatNotProvenError`` and the tool
      does not run. Between checks it backs off from immediate re-checks to at most 10 ms.
    * A background heartbeat that fails is logged and retried at the next period; it never fails the
      body it runs beside, so a tool that returned is recorded as having returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Final

from dex import AsyncContext

from dex_agents.shell.sdk_private import invocation_output_queue
from dex_agents.shell.timing import DEFAULT_HEARTBEAT_PROOF_SECONDS

_IMMEDIATE_CHECKS: Final = 8
_FIRST_PAUSE_SECONDS: Final = 0.0002
_LONGEST_PAUSE_SECONDS: Final = 0.01
_LOGGER: Final = logging.getLogger(__name__)


class HeartbeatNotProvenError(RuntimeError):
    """No proof that the heartbeat left the Worker (see the module docstring); the tool did not run."""


async def heartbeat_sent(context: AsyncContext, *, deadline_seconds: float = DEFAULT_HEARTBEAT_PROOF_SECONDS) -> None:
    """Send a heartbeat and return once the Worker's stream has written it (see the module docstring).

    Raises:
        HeartbeatNotProvenError: the SDK has no output queue, or the queue did not drain within
            ``deadline_seconds``; nothing ran.
        asyncio.CancelledError: the invocation was cancelled.
    """
    queue = invocation_output_queue(context)
    if queue is None:
        raise HeartbeatNotProvenError(
            "cannot prove that the heartbeat left the Worker (this dex SDK has no per-invocation output "
            "queue); the single-attempt tool was not run")
    await context.heartbeat()
    await context.heartbeat()
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + deadline_seconds
    checks = 0
    pause = _FIRST_PAUSE_SECONDS
    while not queue.empty():
        if loop.time() >= give_up_at:
            raise HeartbeatNotProvenError(
                f"the heartbeat was not written within {deadline_seconds:g} s (the Worker's stream to Dex "
                "is stalled); the single-attempt tool was not run")
        checks += 1
        if checks <= _IMMEDIATE_CHECKS:
            await asyncio.sleep(0)
        else:
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_SECONDS)


@contextlib.asynccontextmanager
async def background_heartbeats(context: AsyncContext, interval_seconds: float) -> AsyncIterator[None]:
    """Heartbeat every ``interval_seconds`` while the ``async with`` body runs; stopped before it exits
    (a heartbeat after the invocation closed would raise). A failed heartbeat is logged, never raised."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval_seconds)
            try:
                await context.heartbeat()
            except Exception:  # noqa: BLE001 - a missed heartbeat must not fail the Step's work
                _LOGGER.warning("a background heartbeat of %s failed; retrying in %g s",
                                getattr(context, "step_execution_id", "a Step"), interval_seconds, exc_info=True)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


__all__ = ["HeartbeatNotProvenError", "background_heartbeats", "heartbeat_sent"]
