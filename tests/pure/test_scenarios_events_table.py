"""Named scenarios for each row of the spec's events table: the type, the exact payload keys and
values, and ``turn_id`` / ``attempt`` / ``step_execution_id`` on every event."""

from __future__ import annotations

from pyrsistent import pmap

from dex_agents.pure.machine import events
from dex_agents.pure.machine.coalescing import EMPTY_DELTA_BUFFER, DeltaKind, add_delta, flush
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.values.session import AgentEvent, AgentUsage, ToolEffect

from tests.pure.golden_fixtures import usage_object
from tests.pure.scenario_support import (
    T0_MS,
    completed,
    events_of,
    requested,
    started_session,
    tool_call,
)


def only(events: list[AgentEvent], event_type: str) -> AgentEvent:
    matching = [event for event in events if event.type == event_type]
    assert len(matching) == 1, f"expected one {event_type} in {[e.type for e in events]}"
    return matching[0]


def test_turn_started_carries_the_sequence_of_the_user_message() -> None:
    session = started_session()
    event = only(session.attempt_events(), "turn_started")
    assert event.payload == pmap({"sequence": 1})
    assert (event.turn_id, event.attempt, event.step_execution_id) == ("turn-1", 1, "step-1")


def test_turn_completed_carries_the_count_of_messages_the_final_model_call_appended() -> None:
    session = started_session()
    t = session.model(completed("one", "two"), attempt=2)
    event = only(events_of(t), "turn_completed")
    assert event.payload == pmap({"message_count": 2})
    assert (event.turn_id, event.attempt, event.step_execution_id) == ("turn-1", 2, "step-2")
    assert [e.type for e in events_of(t)] == ["usage_recorded", "turn_completed"]


def test_turn_failed_carries_the_error() -> None:
    session = started_session()
    t = session.turn_fails("boom")
    assert only(events_of(t), "turn_failed").payload == pmap({"error": "boom"})


def test_tool_call_deferred_carries_id_name_effect_and_approval() -> None:
    session = started_session()
    t = session.model(requested(tool_call("a", ToolEffect.IDEMPOTENT_WRITE, tool_name="refund")))
    event = only(events_of(t), "tool_call_deferred")
    assert event.payload == pmap(
        {"tool_call_id": "a", "tool_name": "refund", "effect": "idempotent_write", "requires_approval": False}
    )
    assert event.turn_id == "turn-1"


def test_tool_call_started_carries_id_and_name() -> None:
    session = started_session()
    session.model(requested(tool_call("a", tool_name="search")))
    t = session.tool_started("a")
    event = only(events_of(t), "tool_call_started")
    assert event.payload == pmap({"tool_call_id": "a", "tool_name": "search"})
    assert (event.turn_id, event.step_execution_id) == ("turn-1", "step-3")


def test_tool_call_finished_carries_the_final_status_including_a_rejection() -> None:
    session = started_session()
    session.model(requested(tool_call("a", tool_name="search"), tool_call("w", ToolEffect.UNCLASSIFIED, tool_name="pay")))
    succeeded = session.run_tool("a")
    assert only(events_of(succeeded), "tool_call_finished").payload == pmap(
        {"tool_call_id": "a", "tool_name": "search", "status": "succeeded"}
    )
    session.resolve("turn-1:w", False, "no")
    rejected = session.resolution_arrives("w", False, "no")
    assert only(events_of(rejected), "tool_call_finished").payload == pmap(
        {"tool_call_id": "w", "tool_name": "pay", "status": "rejected"}
    )


def test_interrupt_raised_carries_interrupt_call_name_and_deadline() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=86_400_000))
    t = session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED, tool_name="pay")))
    event = only(events_of(t), "interrupt_raised")
    assert event.payload == pmap(
        {"interrupt_id": "turn-1:w", "tool_call_id": "w", "tool_name": "pay", "deadline": "2026-01-03T03:04:05.000Z"}
    )
    assert [e.type for e in events_of(t)] == ["usage_recorded", "tool_call_deferred", "interrupt_raised"]


def test_interrupt_raised_without_a_deadline_has_a_null_deadline() -> None:
    session = started_session()
    t = session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    assert only(events_of(t), "interrupt_raised").payload["deadline"] is None


def test_interrupt_resolved_is_written_by_await_tool_approval_with_the_decision() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED), tool_call("v", ToolEffect.UNCLASSIFIED)))
    session.resolve("turn-1:w", True, "ignored for an approval")
    approved = session.resolution_arrives("w", True)
    no_audit = {"approver": None, "reason": None, "original_arguments": None, "edited_arguments": None}
    payload = only(events_of(approved), "interrupt_resolved").payload
    assert payload.discard("resolved_at") == pmap(
        {"interrupt_id": "turn-1:w", "approved": True, "rejection_message": None, **no_audit}
    )
    session.resolve("turn-1:v", False, "too risky")
    rejected = session.resolution_arrives("v", False, "too risky")
    assert only(events_of(rejected), "interrupt_resolved").payload.discard("resolved_at") == pmap(
        {"interrupt_id": "turn-1:v", "approved": False, "rejection_message": "too risky", **no_audit}
    )


def test_usage_recorded_carries_this_calls_usage_and_the_session_total() -> None:
    first = AgentUsage(requests=1, input_tokens=100, output_tokens=7, cache_read_tokens=3, cache_write_tokens=1)
    second = AgentUsage(requests=1, input_tokens=20, output_tokens=2)
    session = started_session()
    session.model(requested(tool_call("a"), usage=first))
    session.run_tool("a")
    session.results_arrive(1)
    t = session.model(completed("done", usage=second))
    total = AgentUsage(requests=2, input_tokens=120, output_tokens=9, cache_read_tokens=3, cache_write_tokens=1)
    assert only(events_of(t), "usage_recorded").payload == pmap(
        {"recorded": usage_object(second), "session": usage_object(total)}
    )
    assert t.state.usage == total


def test_every_event_of_a_whole_turn_carries_turn_attempt_and_step_execution() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=1_000))
    collected = session.attempt_events()
    collected += events_of(session.model(requested(tool_call("r"), tool_call("w", ToolEffect.UNCLASSIFIED))))
    collected += events_of(session.tool_started("r"))
    collected += events_of(session.tool_succeeds("r"))
    session.now_ms = T0_MS + 5_000
    collected += events_of(session.timer_fires("w"))
    session.results_arrive(2)
    collected += events_of(session.model(completed("fine")))
    assert {e.turn_id for e in collected} == {"turn-1"}
    assert all(e.attempt == 1 and e.step_execution_id.startswith("step-") for e in collected)
    assert [e.type for e in collected] == [
        "turn_started",
        "usage_recorded",
        "tool_call_deferred",
        "tool_call_deferred",
        "interrupt_raised",
        "tool_call_started",
        "tool_call_finished",
        "interrupt_resolved",
        "tool_call_finished",
        "usage_recorded",
        "turn_completed",
    ]


def test_text_and_reasoning_deltas_carry_the_text_and_match_the_event_type_names() -> None:
    buffer = add_delta(EMPTY_DELTA_BUFFER, DeltaKind.REASONING, "thinking", T0_MS)
    switched = add_delta(buffer.buffer, DeltaKind.TEXT, "Hello", T0_MS + 10)
    closed = flush(switched.buffer)
    written = [
        delta.to_event(turn_id="turn-1", attempt=2, step_execution_id="step-9")
        for delta in [*switched.flushed, *closed.flushed]
    ]
    assert [(e.type, e.payload) for e in written] == [
        (events.REASONING_DELTA, pmap({"text": "thinking"})),
        (events.TEXT_DELTA, pmap({"text": "Hello"})),
    ]
    assert all((e.turn_id, e.attempt, e.step_execution_id) == ("turn-1", 2, "step-9") for e in written)
