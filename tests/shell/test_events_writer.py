"""``StreamAgentEventWriter``: stamps, coalescing, ordering, capacity and close, on a recording Context."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from dex import AsyncContext, Stream

from dex_agents.pure.values.session import AgentEvent, ToolCallStatus
from dex_agents.shell.definitions import event_stream
from dex_agents.shell.events_writer import StreamAgentEventWriter


class RecordingContext:
    """Just what the writer touches: the attempt facts and the SDK's Stream write hook."""

    attempt = 2
    step_execution_id = "RunModel-3"

    def __init__(self) -> None:
        self.written: list[AgentEvent] = []

    def _write_stream(self, _definition: Stream[Any], value: AgentEvent) -> None:
        self.written.append(value)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def make_writer(capacity: int = 1 << 20) -> tuple[StreamAgentEventWriter, RecordingContext, FakeClock]:
    context, clock = RecordingContext(), FakeClock()
    writer = StreamAgentEventWriter(cast(AsyncContext, context), event_stream(capacity), "turn-4", clock)
    return writer, context, clock


def kinds(context: RecordingContext) -> list[tuple[str, dict[str, object]]]:
    return [(event.type, dict(event.payload)) for event in context.written]


def test_deltas_coalesce_and_every_event_is_stamped_with_turn_attempt_and_step_execution() -> None:
    async def scenario() -> RecordingContext:
        writer, context, _clock = make_writer()
        writer.write_text_delta("Hel")
        writer.write_text_delta("lo")
        writer.write_reasoning_delta("hmm")
        writer.write_tool_call_started("c1", "search")
        writer.close()
        return context

    context = asyncio.run(scenario())
    assert kinds(context) == [
        ("text_delta", {"text": "Hello"}),
        ("reasoning_delta", {"text": "hmm"}),
        ("tool_call_started", {"tool_call_id": "c1", "tool_name": "search"}),
    ]
    assert {(e.turn_id, e.attempt, e.step_execution_id) for e in context.written} == {("turn-4", 2, "RunModel-3")}


def test_a_delta_100_ms_after_the_first_flushes_the_buffer_by_the_injected_clock() -> None:
    async def scenario() -> list[tuple[str, dict[str, object]]]:
        writer, context, clock = make_writer()
        writer.write_text_delta("a")
        await asyncio.sleep(0)
        assert context.written == []
        clock.now += 100
        writer.write_text_delta("b")
        seen = kinds(context)
        writer.close()
        return seen

    assert asyncio.run(scenario()) == [("text_delta", {"text": "ab"})]


def test_writes_after_close_are_dropped_and_a_payload_that_is_not_json_is_dropped() -> None:
    async def scenario() -> RecordingContext:
        writer, context, _clock = make_writer()
        writer.write_event("adapter.custom", {"n": 1, "nested": {"ok": [True, None, 1.5]}})
        writer.write_event("adapter.bad", {"when": object()})
        writer.close()
        writer.write_text_delta("late")
        writer.write_tool_call_finished("c1", "search", ToolCallStatus.SUCCEEDED)
        return context

    assert [event.type for event in asyncio.run(scenario()).written] == ["adapter.custom"]


def test_an_event_larger_than_the_stream_budget_is_dropped_and_smaller_ones_still_go_out() -> None:
    async def scenario() -> RecordingContext:
        writer, context, _clock = make_writer(capacity=300)
        writer.write_text_delta("x" * 2000)
        writer.write_tool_call_finished("c1", "search", ToolCallStatus.FAILED)
        writer.close()
        return context

    assert kinds(asyncio.run(scenario())) == [
        ("tool_call_finished", {"tool_call_id": "c1", "tool_name": "search", "status": "failed"})
    ]
