"""Approval scenarios: approve, reject, deadline, late and early Timers, a resolution consumed together
with the Timer, duplicate resolves, two interrupts where the deadline rejects the unresolved one, and
the wait ``AwaitToolApproval`` plans."""

from __future__ import annotations

from dex_agents.pure.machine.endings import SkipWait, WaitForResolution
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.texts import approval_deadline_passed_message
from dex_agents.pure.values.session import AgentInterruptResolution, ToolCallStatus, ToolEffect

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    answer_of,
    completions_of,
    event_types,
    failure_of,
    is_dead_end,
    moves,
    requested,
    started_session,
    tool_call,
)

DEADLINE_MS = 90_500


def gated_session(*ids: str, deadline_ms: int | None = DEADLINE_MS) -> Session:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=deadline_ms))
    session.model(requested(*(tool_call(i, ToolEffect.NON_IDEMPOTENT_WRITE) for i in ids)))
    return session


def test_approve_then_run_the_single_attempt_write() -> None:
    session = gated_session("w")
    assert answer_of(session.resolve("turn-1:w", True)) is True
    approved = session.resolution_arrives("w", True)
    assert moves(approved) == [(StepType.CALL_SINGLE_ATTEMPT_TOOL, "w")]
    assert event_types(approved) == ["interrupt_resolved"]
    done = session.run_tool("w", "charged")
    assert done.state.tool_calls["w"].status is ToolCallStatus.SUCCEEDED
    assert completions_of(done) == ["w"]


def test_reject_without_a_message_records_rejected_with_no_message() -> None:
    session = gated_session("w")
    session.resolve("turn-1:w", False)
    t = session.resolution_arrives("w", False)
    record = t.state.tool_calls["w"]
    assert (record.status, record.rejection_message) == (ToolCallStatus.REJECTED, None)
    assert event_types(t) == ["interrupt_resolved", "tool_call_finished"]
    assert completions_of(t) == ["w"] and is_dead_end(t)


def wait_at(session: Session, now_ms: int, tool_call_id: str = "w") -> object:
    session.now_ms = now_ms
    return session.wait_for(tool_call_id)


def test_the_wait_arms_a_whole_second_timer_rounded_up() -> None:
    session = gated_session("w")
    assert wait_at(session, T0_MS) == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=91)
    assert wait_at(session, T0_MS + 90_000) == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=1)
    assert wait_at(session, T0_MS + 99_000) == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=0)


def test_the_wait_has_no_timer_without_a_deadline() -> None:
    session = gated_session("w", deadline_ms=None)
    assert wait_at(session, T0_MS) == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=None)


def test_deadline_timer_rejects_with_the_deadline_text() -> None:
    session = gated_session("w")
    session.now_ms = T0_MS + 91_000
    t = session.timer_fires("w")
    record = t.state.tool_calls["w"]
    assert (record.status, record.rejection_message) == (ToolCallStatus.REJECTED, approval_deadline_passed_message)
    assert len(t.state.pending_interrupts) == 0
    assert event_types(t) == ["interrupt_resolved", "tool_call_finished"]
    assert completions_of(t) == ["w"] and is_dead_end(t)


def test_timer_that_fires_before_the_deadline_waits_again() -> None:
    session = gated_session("w")
    session.now_ms = T0_MS + 90_499
    t = session.timer_fires("w")
    assert moves(t) == [(StepType.AWAIT_TOOL_APPROVAL, "w")]
    assert t.state.tool_calls["w"].status is ToolCallStatus.AWAITING_APPROVAL
    assert len(t.state.pending_interrupts) == 1
    assert wait_at(session, T0_MS + 90_500) == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=0)
    assert session.timer_fires("w").state.tool_calls["w"].status is ToolCallStatus.REJECTED


def test_late_timer_after_resolve_interrupt_waits_again_and_consumes_the_resolution() -> None:
    session = gated_session("w")
    session.now_ms = T0_MS + 90_000
    assert answer_of(session.resolve("turn-1:w", True)) is True
    session.now_ms = T0_MS + 91_000
    late = session.timer_fires("w")
    assert moves(late) == [(StepType.AWAIT_TOOL_APPROVAL, "w")]
    assert late.state.tool_calls["w"].status is ToolCallStatus.AWAITING_APPROVAL
    assert session.wait_for("w") == WaitForResolution(interrupt_id="turn-1:w", timer_seconds=None)
    consumed = session.resolution_arrives("w", True)
    assert moves(consumed) == [(StepType.CALL_SINGLE_ATTEMPT_TOOL, "w")]


def test_a_resolution_consumed_together_with_the_fired_timer_decides_instead_of_being_dropped() -> None:
    """The wait reports both endings; the consumed resolution was accepted before the deadline and no
    later wait would ever deliver it again, so it decides (approving, the call runs)."""
    session = gated_session("w")
    assert answer_of(session.resolve("turn-1:w", True)) is True
    session.now_ms = T0_MS + 91_000
    both = session.approval("w", timer_fired=True, resolutions=[session.resolution_of("w", True)])
    assert moves(both) == [(StepType.CALL_SINGLE_ATTEMPT_TOOL, "w")]
    assert both.state.tool_calls["w"].status is ToolCallStatus.PENDING
    assert event_types(both) == ["interrupt_resolved"]


def test_a_rejection_consumed_together_with_the_fired_timer_keeps_the_users_message() -> None:
    session = gated_session("w")
    session.resolve("turn-1:w", False, "not this one")
    session.now_ms = T0_MS + 91_000
    both = session.approval("w", timer_fired=True, resolutions=[session.resolution_of("w", False, "not this one")])
    record = both.state.tool_calls["w"]
    assert (record.status, record.rejection_message) == (ToolCallStatus.REJECTED, "not this one")


def test_a_late_answer_never_wins_over_the_deadline() -> None:
    session = gated_session("w")
    session.now_ms = T0_MS + 90_500
    assert answer_of(session.resolve("turn-1:w", True)) is False
    rejected = session.timer_fires("w")
    assert rejected.state.tool_calls["w"].status is ToolCallStatus.REJECTED


def test_duplicate_resolve_answers_false_and_the_first_decision_stands() -> None:
    session = gated_session("w")
    assert answer_of(session.resolve("turn-1:w", False, "no")) is True
    assert answer_of(session.resolve("turn-1:w", True)) is False
    t = session.resolution_arrives("w", False, "no")
    assert t.state.tool_calls["w"].status is ToolCallStatus.REJECTED


def test_two_interrupts_where_the_deadline_rejects_the_unresolved_one() -> None:
    session = gated_session("a", "b")
    session.resolve("turn-1:a", True)
    session.resolution_arrives("a", True)
    session.run_tool("a", "done")
    session.now_ms = T0_MS + 91_000
    expired = session.timer_fires("b")
    assert expired.state.tool_calls["b"].status is ToolCallStatus.REJECTED
    assert expired.state.tool_calls["a"].status is ToolCallStatus.SUCCEEDED
    resumed = session.results_arrive(2)
    assert moves(resumed) == [(StepType.RUN_MODEL, None)]


def test_a_decided_call_ends_its_wait_without_effects() -> None:
    session = gated_session("w")
    session.resolve("turn-1:w", True)
    session.resolution_arrives("w", True)
    assert session.wait_for("w") == SkipWait()
    t = session.approval("w")
    assert is_dead_end(t) and len(t.effects) == 0


def test_an_unknown_call_ends_its_wait_without_effects() -> None:
    session = gated_session("w")
    assert session.wait_for("ghost") == SkipWait()
    t = session.approval("ghost")
    assert is_dead_end(t) and len(t.effects) == 0


def test_a_skipped_wait_of_a_call_still_awaiting_approval_waits_again() -> None:
    session = gated_session("w")
    t = session.approval("w")
    assert moves(t) == [(StepType.AWAIT_TOOL_APPROVAL, "w")]


def test_a_resolution_of_another_interrupt_is_rejected() -> None:
    session = gated_session("w")
    stray = AgentInterruptResolution(interrupt_id="turn-1:other", approved=True, rejection_message=None)
    t = session.approval("w", resolutions=[stray])
    assert "turn-1:other" in failure_of(t)


def test_a_resolution_consumed_while_still_pending_also_removes_the_interrupt() -> None:
    session = gated_session("w")
    t = session.resolution_arrives("w", True)
    assert len(t.state.pending_interrupts) == 0
    assert t.state.tool_calls["w"].status is ToolCallStatus.PENDING
