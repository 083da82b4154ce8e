"""Streams: Step writes (in ``wait_for`` and ``execute``, sync and async) are read in order with
resume tokens and source ``#<stepExecutionId>``; reads long-poll; listing is newest first with
page tokens; Clients may write to any Flow ID; the byte capacity is shared by every Flow of the
type and the oldest messages go first; a token older than the retained head resumes at the head;
a failed attempt's writes stay, and a write is an implicit heartbeat that keeps the checkpoint."""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta, timezone

import pytest
from dex import (
    AsyncContext,
    Client,
    Context,
    LongPollTimeoutError,
    PersistenceSchema,
    RetryPolicy,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    StepOutput,
    Stream,
    StreamMessage,
    Wait,
    dead_end,
    heartbeat,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, StreamStepFlow, eventually, in_thread

SHORT = timedelta(seconds=1)


class Writer(Step[list[str]]):
    def __init__(self, flow: StreamFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: list[str]) -> Generator[StepOutput, None, Wait]:
        yield self.flow.events.write(context, "from wait_for")
        return Wait.skip_immediately()

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=2))

    def execute(self, context: Context, input: list[str]) -> Generator[StepOutput, None, StepDecision]:
        if input == ["fail-once"]:
            self.flow.probe.record("checkpoint", context.get_last_heartbeat_value(int)
                                   if context.has_last_heartbeat_value() else None)
            if context.attempt == 1:
                yield heartbeat(4)
                yield self.flow.events.write(context, "written before the failure")
                raise RuntimeError("fail after writing")
            yield self.flow.events.write(context, "written by the retry")
            return dead_end()
        for value in input:
            yield self.flow.events.write(context, value)
        return dead_end()


class StreamFlow(NamedFlow[list[str]]):
    def __init__(self, flow_type: str, capacity: int = 10 * 1024 * 1024) -> None:
        super().__init__(flow_type)
        self.events = Stream("Events", str, capacity)

    def get_steps(self) -> StepList[list[str]]:
        return StepList.start_step(Writer(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(self.events)


def read_all(client: Client, flow_id: str, stream: Stream[str], count: int) -> list[StreamMessage[str]]:
    messages: list[StreamMessage[str]] = []
    token = ""
    for _ in range(count):
        message = client.read_stream(flow_id, stream, token, timeout=timedelta(seconds=10))
        messages.append(message)
        token = message.resume_token
    return messages


def test_step_writes_are_read_in_order_with_resume_tokens_and_source(dex: DexFixture) -> None:
    flow = StreamFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["m1", "m2", "m3"])
    messages = read_all(harness.client, flow_id, flow.events, 4)
    assert [m.value for m in messages] == ["from wait_for", "m1", "m2", "m3"]
    assert {m.source for m in messages} == {"#Writer-1"}
    assert len({m.resume_token for m in messages}) == 4
    assert all(m.created_time.tzinfo is timezone.utc for m in messages)
    again = harness.client.read_stream(flow_id, flow.events, messages[1].resume_token, timeout=SHORT)
    assert again.value == "m2", "a token resumes after its own message"
    with pytest.raises(LongPollTimeoutError):
        harness.client.read_stream(flow_id, flow.events, messages[-1].resume_token, timeout=SHORT)


def test_a_failed_attempt_keeps_its_writes_and_a_write_keeps_the_checkpoint(dex: DexFixture) -> None:
    flow = StreamFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["fail-once"])
    messages = read_all(harness.client, flow_id, flow.events, 3)
    assert [m.value for m in messages] == ["from wait_for", "written before the failure", "written by the retry"]
    assert {m.source for m in messages} == {"#Writer-1"}, "attempts of one execution share the source"
    assert flow.probe.values("checkpoint") == [None, 4], "a Stream write is an implicit heartbeat that keeps it"


def test_listing_is_newest_first_with_page_tokens(dex: DexFixture) -> None:
    flow = StreamFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["a", "b", "c", "d"])
    read_all(harness.client, flow_id, flow.events, 5)
    seen: list[str] = []
    token = ""
    for _ in range(10):
        page = harness.client.list_stream_messages(flow_id, flow.events, 2, token)
        assert len(page.messages) <= 2
        seen += [m.value for m in page.messages]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["d", "c", "b", "a", "from wait_for"]


def test_client_writes_to_any_flow_id_and_reads_long_poll(dex: DexFixture) -> None:
    flow = StreamFlow(dex.flow_type())
    client = dex.client(flow)
    flow_id = dex.flow_id("never-started")
    waiting = in_thread(lambda: client.read_stream(flow_id, flow.events, "", timeout=timedelta(seconds=20)))
    client.write_stream(flow_id, flow.events, "ui#1", "hello")
    message = waiting(25.0)
    assert (message.value, message.source) == ("hello", "ui#1")
    client.write_stream(flow_id, flow.events, "ui#1", "hello")
    assert client.read_stream(flow_id, flow.events, message.resume_token, timeout=SHORT).value == "hello", (
        "a repeated source appends another message")


def test_capacity_is_shared_by_the_flow_type_and_evicts_oldest_first(dex: DexFixture) -> None:
    flow = StreamFlow(dex.flow_type(), capacity=1500)
    client = dex.client(flow)
    first, second = dex.flow_id("first"), dex.flow_id("second")
    payload = "x" * 90
    for index in range(10):
        client.write_stream(first, flow.events, "test", f"{index:02d}{payload}")
    head = client.read_stream(first, flow.events, "", timeout=SHORT)
    assert head.value.startswith("00"), "one Flow ID alone stays under the capacity"
    for index in range(10):
        client.write_stream(second, flow.events, "test", f"{index:02d}{payload}")

    def retained(flow_id: str) -> list[str]:
        page = client.list_stream_messages(flow_id, flow.events, 100)
        return [m.value[:2] for m in reversed(page.messages)]

    def evicted_prefix() -> list[str] | None:
        kept = retained(first)
        return kept if kept and kept[0] != "00" else None

    kept_first = eventually(evicted_prefix, what="the type-wide budget to evict the first Flow's oldest messages")
    assert kept_first == [f"{i:02d}" for i in range(10 - len(kept_first), 10)], "only a prefix is evicted"
    kept_second = retained(second)
    assert kept_second and kept_second[-1] == "09", "the newest message is retained"
    assert kept_second == [f"{i:02d}" for i in range(10 - len(kept_second), 10)]
    resumed = client.read_stream(first, flow.events, head.resume_token, timeout=SHORT)
    assert resumed.value[:2] == kept_first[0], "a token of an evicted message resumes at the retained head"


class AsyncWriter(Step[str]):
    def __init__(self, flow: StreamStepFlow[str]) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        self.flow.events.write(context, f"{input}-1")
        self.flow.events.write(context, f"{input}-2")
        return dead_end()


def test_async_step_writes(dex: DexFixture) -> None:
    flow = StreamStepFlow(dex.flow_type(), AsyncWriter)
    harness, flow_id = dex.start_flow(flow, "async", async_worker=True)
    messages = read_all(harness.client, flow_id, flow.events, 2)
    assert [(m.value, m.source) for m in messages] == [("async-1", "#AsyncWriter-1"), ("async-2", "#AsyncWriter-1")]
