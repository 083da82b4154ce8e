"""Heartbeats never turn a Step's success into a failure, and the heartbeat proof is bounded."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

import pytest
from dex import AsyncContext

from dex_agents.shell.heartbeats import HeartbeatNotProvenError, background_heartbeats, heartbeat_sent


class FakeContext:
    """The two things the heartbeats use of an ``AsyncContext``: ``heartbeat()`` and the SDK's queue."""

    step_execution_id = "CallSingleAttemptTool-1"

    def __init__(self, *, failing: bool = False, with_queue: bool = True) -> None:
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        if with_queue:
            self._output_emitter = SimpleNamespace(queue=self.queue)
        self.failing = failing
        self.heartbeats = 0
        self.failed = asyncio.Event()

    async def heartbeat(self) -> None:
        self.heartbeats += 1
        if self.failing:
            self.failed.set()
            raise RuntimeError("the invocation's stream is closed")
        self.queue.put_nowait("heartbeat")

    def as_context(self) -> AsyncContext:
        return cast(AsyncContext, self)


def test_a_failing_background_heartbeat_does_not_fail_the_work_that_succeeded() -> None:
    context = FakeContext(failing=True)

    async def work() -> str:
        async with background_heartbeats(context.as_context(), interval_seconds=0.001):
            await context.failed.wait()  # the tool returns after a heartbeat failed beside it
            return "tool output"

    assert asyncio.run(work()) == "tool output"
    assert context.heartbeats >= 1


def test_the_heartbeat_proof_gives_up_at_its_deadline_when_the_stream_never_drains() -> None:
    context = FakeContext()  # nothing takes frames off the queue: a stalled stream

    async def prove() -> None:
        await asyncio.wait_for(heartbeat_sent(context.as_context(), deadline_seconds=0.05), timeout=10)

    with pytest.raises(HeartbeatNotProvenError, match="not written within 0.05 s"):
        asyncio.run(prove())


def test_the_heartbeat_proof_returns_once_the_stream_wrote_both_frames() -> None:
    context = FakeContext()

    async def prove() -> list[object]:
        written: list[object] = []

        async def stream() -> None:  # the Worker's sender: one frame at a time
            while len(written) < 2:
                written.append(await context.queue.get())

        sender = asyncio.create_task(stream())
        await heartbeat_sent(context.as_context(), deadline_seconds=10)
        await sender
        return written

    assert asyncio.run(prove()) == ["heartbeat", "heartbeat"]


def test_without_the_sdks_output_queue_the_proof_fails_before_anything_runs() -> None:
    context = FakeContext(with_queue=False)
    with pytest.raises(HeartbeatNotProvenError, match="no per-invocation output queue"):
        asyncio.run(heartbeat_sent(context.as_context()))
    assert context.heartbeats == 0
