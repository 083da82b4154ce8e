"""Named scenarios for each row of the spec's RPC table."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyrsistent import pvector

from dex_agents.pure.machine.effects import PublishToChannel, PublishToChannelInstance, SetAttribute, WriteEvent
from dex_agents.pure.values.persistence import INTERRUPT_RESOLUTIONS, PENDING_INTERRUPTS, QUEUED_USER_MESSAGES, StepType
from dex_agents.pure.values.rpc import AgentMessagePage, AgentSnapshot
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.values.session import AgentInterruptResolution, AgentUsage, AgentUserMessage, ToolEffect

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    answer_of,
    completed,
    moves,
    of_type,
    requested,
    started_session,
    tool_call,
)


@pytest.mark.parametrize("text", ["", " ", "\n\t "])
def test_send_user_message_answers_false_for_blank_text_and_queues_nothing(text: str) -> None:
    session = Session()
    session.start(None)
    t = session.send(text)
    assert answer_of(t) is False
    assert list(t.effects[:-1]) == [] and t.state.queued_message_count == 0


def test_send_user_message_queues_the_text_and_answers_true() -> None:
    session = Session()
    session.start(None)
    t = session.send("  hello  ")
    assert answer_of(t) is True
    assert of_type(t.effects, PublishToChannel) == [
        PublishToChannel(channel=QUEUED_USER_MESSAGES, value=AgentUserMessage(text="  hello  "))
    ]
    assert t.state.queued_message_count == 1


def test_a_message_sent_during_a_turn_starts_the_next_turn() -> None:
    session = started_session()
    session.send("and order 43?")
    assert session.state.queued_message_count == 1
    done = session.model(completed("42 shipped"))
    assert moves(done) == [(StepType.AWAIT_USER_MESSAGE, None)]
    t = session.user_message_arrives("and order 43?")
    assert t.state.agent_state is not None and t.state.agent_state.current_turn_id == "turn-2"
    assert t.state.queued_message_count == 0
    assert [m.sequence for m in t.state.messages] == [1, 2, 3]


def test_rpcs_never_write_the_event_stream() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    for t in (session.send("x"), session.resolve("turn-1:w", True), session.snapshot(), session.list_messages()):
        assert of_type(t.effects, WriteEvent) == []


def test_resolve_interrupt_removes_the_interrupt_publishes_the_resolution_and_answers_true() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    t = session.resolve("turn-1:w", False, "no thanks")
    assert answer_of(t) is True
    assert t.state.pending_interrupts == pvector()
    assert of_type(t.effects, SetAttribute) == [SetAttribute(attribute=PENDING_INTERRUPTS, value=pvector())]
    (published,) = of_type(t.effects, PublishToChannelInstance)
    assert (published.channel_map, published.key) == (INTERRUPT_RESOLUTIONS, "turn-1:w")
    resolution = published.value
    assert isinstance(resolution, AgentInterruptResolution) and resolution.resolved_at is not None
    assert replace(resolution, resolved_at=None) == AgentInterruptResolution(
        interrupt_id="turn-1:w", approved=False, rejection_message="no thanks")


def test_resolve_interrupt_answers_false_when_not_pending() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    unknown = session.resolve("turn-1:nope", True)
    assert answer_of(unknown) is False and list(unknown.effects[:-1]) == []
    assert answer_of(session.resolve("turn-1:w", True)) is True
    duplicate = session.resolve("turn-1:w", True)
    assert answer_of(duplicate) is False and list(duplicate.effects[:-1]) == []


def test_resolve_interrupt_answers_false_from_the_deadline_on() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=10_000))
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    session.now_ms = T0_MS + 10_000
    t = session.resolve("turn-1:w", True)
    assert answer_of(t) is False
    assert len(t.state.pending_interrupts) == 1


def test_resolve_interrupt_just_before_the_deadline_wins() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=10_000))
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    session.now_ms = T0_MS + 9_999
    assert answer_of(session.resolve("turn-1:w", True)) is True


def test_get_agent_snapshot_before_the_session_starts_has_a_null_state() -> None:
    t = Session().snapshot()
    assert answer_of(t) == AgentSnapshot(
        state=None,
        messages=pvector(),
        pending_interrupts=pvector(),
        tool_calls=pvector(),
        usage=AgentUsage(),
        queued_message_count=0,
    )


def test_get_agent_snapshot_lists_state_messages_interrupts_records_in_deferral_order_usage_and_queue() -> None:
    session = started_session()
    session.model(requested(tool_call("z"), tool_call("w", ToolEffect.UNCLASSIFIED), tool_call("a")))
    session.send("next")
    snapshot = answer_of(session.snapshot())
    assert isinstance(snapshot, AgentSnapshot)
    assert snapshot.state == session.state.agent_state
    assert [m.sequence for m in snapshot.messages] == [1]
    assert [i.interrupt_id for i in snapshot.pending_interrupts] == ["turn-1:w"]
    assert [r.tool_call_id for r in snapshot.tool_calls] == ["z", "w", "a"]
    assert [r.deferral_order for r in snapshot.tool_calls] == [0, 1, 2]
    assert snapshot.usage == session.state.usage
    assert snapshot.queued_message_count == 1


def test_list_agent_messages_pages_oldest_first_with_a_default_and_clamped_limit() -> None:
    session = started_session("m1")
    session.model(completed(*[f"m{n}" for n in range(2, 61)]))
    default_page = answer_of(session.list_messages())
    assert isinstance(default_page, AgentMessagePage)
    assert [m.sequence for m in default_page.messages] == list(range(11, 61))
    assert default_page.next_before_sequence == 11
    older = answer_of(session.list_messages(before_sequence=11, limit=1000))
    assert isinstance(older, AgentMessagePage)
    assert [m.sequence for m in older.messages] == list(range(1, 11)) and older.next_before_sequence is None
    tiny = answer_of(session.list_messages(limit=0))
    assert isinstance(tiny, AgentMessagePage) and [m.sequence for m in tiny.messages] == [60]


def test_reading_rpcs_leave_the_state_unchanged() -> None:
    session = started_session()
    before = session.state
    assert session.snapshot().state == before
    assert session.list_messages().state == before
