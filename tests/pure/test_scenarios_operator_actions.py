"""Operator actions (issue 25, items 3 and 4): approvals bound to their arguments (``arguments_sha256``),
edited approvals validated by the runner in ``AwaitToolApproval``, an approval's audit, a moved
deadline (``extend_interrupt_deadline``), and unknown outcomes settled by a tool policy's
``reconcile`` (``ReconcileToolOutcome``)."""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.machine.deadlines import format_instant, parse_instant
from dex_agents.pure.machine.effects import SetAttribute
from dex_agents.pure.machine.endings import ReconcileToolCall, ValidateToolArguments, WaitForResolution
from dex_agents.pure.machine.reducers.rpcs import stale_arguments_message
from dex_agents.pure.machine.rpc_calls import ExtendInterruptDeadlineCalled, ResolveInterruptCalled
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import (
    ReconcileStarted,
    SingleAttemptToolFailed,
    ToolArgumentsValidated,
    ToolAttemptsExhausted,
    ToolOutcomeReconciled,
)
from dex_agents.pure.machine.texts import describe_tool_call_outcome
from dex_agents.pure.values.persistence import PENDING_INTERRUPTS, StepType
from dex_agents.pure.values.rpc import ExtendInterruptDeadlineInput, ResolveInterruptInput
from dex_agents.pure.values.session import AgentInterruptResolution, ToolCallStatus, ToolEffect, text_sha256

from tests.pure.scenario_support import (
    T0_MS,
    Session,
    answer_of,
    completions_of,
    event_types,
    events_of,
    failure_of,
    is_dead_end,
    moves,
    recovery,
    requested,
    started_session,
    tool_call,
)

ORIGINAL = '{"amount":50}'
EDITED = '{"amount":5}'
DEADLINE_MS = 90_500


def gated(deadline_ms: int | None = DEADLINE_MS) -> Session:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=deadline_ms))
    call = tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, tool_name="refund", arguments=ORIGINAL)
    session.model(requested(call))
    return session


def resolve(session: Session, *, approved: bool = True, rejection_message: str | None = None,
            edited_arguments: str | None = None, arguments_sha256: str | None = None, approver: str | None = None,
            reason: str | None = None) -> object:
    request = ResolveInterruptInput(interrupt_id="turn-1:w", approved=approved, rejection_message=rejection_message,
                                    edited_arguments=edited_arguments, arguments_sha256=arguments_sha256,
                                    approver=approver, reason=reason)
    return session.feed_rpc(ResolveInterruptCalled(input=request, now_ms=session.now_ms))


def published_resolution(session: Session, **fields: str | bool | None) -> AgentInterruptResolution:
    t = resolve(session, **fields)  # type: ignore[arg-type]
    assert answer_of(t) is True  # type: ignore[arg-type]
    (publish,) = [effect for effect in t.effects if hasattr(effect, "channel_map")]  # type: ignore[attr-defined]
    resolution = publish.value
    assert isinstance(resolution, AgentInterruptResolution)
    return resolution


def test_the_pending_interrupt_shows_the_hash_of_its_arguments() -> None:
    session = gated()
    (interrupt,) = session.state.pending_interrupts
    assert interrupt.arguments_sha256 == text_sha256(ORIGINAL)


def test_a_stale_arguments_sha256_refuses_the_approval_and_the_interrupt_stays_pending() -> None:
    session = gated()
    stale = resolve(session, arguments_sha256=text_sha256('{"amount":500}'))
    assert failure_of(stale) == stale_arguments_message("turn-1:w", text_sha256('{"amount":500}'), text_sha256(ORIGINAL))  # type: ignore[arg-type]
    assert len(session.state.pending_interrupts) == 1
    assert answer_of(resolve(session, arguments_sha256=text_sha256(ORIGINAL))) is True  # type: ignore[arg-type]


def test_unusable_resolutions_are_refused() -> None:
    session = gated()
    assert "only be given with an approval" in failure_of(resolve(session, approved=False, edited_arguments=EDITED))  # type: ignore[arg-type]
    assert "must be a JSON object, got list" in failure_of(resolve(session, edited_arguments="[1]"))  # type: ignore[arg-type]
    assert "is not JSON" in failure_of(resolve(session, edited_arguments='{"a":1,"a":2}'))  # type: ignore[arg-type]
    assert "is not JSON" in failure_of(resolve(session, edited_arguments='{"a":NaN}'))  # type: ignore[arg-type]
    assert "approver contains a lone surrogate" in failure_of(resolve(session, approver="\ud800"))  # type: ignore[arg-type]
    assert len(session.state.pending_interrupts) == 1


def test_an_edited_approval_is_validated_then_runs_the_edit_with_its_audit() -> None:
    session = gated()
    session.now_ms = T0_MS + 1_000
    resolution = published_resolution(session, edited_arguments=EDITED, approver="ana", reason="5 max")
    assert (resolution.resolved_at, resolution.deadline) == (format_instant(T0_MS + 1_000), format_instant(T0_MS + DEADLINE_MS))
    asked = session.approval("w", resolutions=[resolution])
    assert asked.ending == ValidateToolArguments(tool_call_id="w", tool_name="refund", arguments=EDITED,
                                                 resolution=resolution)
    approved = session.run_step(ToolArgumentsValidated(invocation=session.inv(), tool_call_id="w",
                                                       resolution=resolution, problem=None))
    assert moves(approved) == [(StepType.CALL_SINGLE_ATTEMPT_TOOL, "w")]
    record = approved.state.tool_calls["w"]
    assert (record.status, record.arguments, record.idempotency_key) == (ToolCallStatus.PENDING, EDITED,
                                                                          "session-42/turn-1/w")
    assert record.approval is not None and (record.approval.approver, record.approval.reason,
                                            record.approval.original_arguments) == ("ana", "5 max", ORIGINAL)
    (resolved,) = [event for event in events_of(approved) if event.type == "interrupt_resolved"]
    assert (resolved.payload["approver"], resolved.payload["original_arguments"],
            resolved.payload["edited_arguments"]) == ("ana", ORIGINAL, EDITED)
    started = session.tool_started("w")
    assert session.state.tool_calls["w"].arguments == EDITED and started.ending is not None
    done = session.tool_succeeds("w", "refunded 5")
    text = describe_tool_call_outcome(done.state.tool_calls["w"])
    assert text.startswith(f"[Dex] ana edited this call's arguments before approving it; it ran with {EDITED} "
                           f"instead of {ORIGINAL}. Reason: 5 max.\n") and text.endswith("refunded 5")


def test_an_edit_the_schema_refuses_puts_the_interrupt_back_and_waits_again() -> None:
    session = gated()
    resolution = published_resolution(session, edited_arguments='{"amount":"five"}', approver="ana")
    assert session.state.pending_interrupts == pvector()
    session.approval("w", resolutions=[resolution])
    refused = session.run_step(ToolArgumentsValidated(invocation=session.inv(), tool_call_id="w",
                                                      resolution=resolution, problem="amount: not an integer"))
    assert moves(refused) == [(StepType.AWAIT_TOOL_APPROVAL, "w")]
    assert event_types(refused) == ["dex_agents.approval_refused"]
    assert events_of(refused)[0].payload["error"] == "amount: not an integer"
    (interrupt,) = refused.state.pending_interrupts
    assert (interrupt.deadline, interrupt.arguments_sha256) == (format_instant(T0_MS + DEADLINE_MS), text_sha256(ORIGINAL))
    assert [effect for effect in refused.effects if isinstance(effect, SetAttribute)][0].attribute == PENDING_INTERRUPTS
    assert refused.state.tool_calls["w"].status is ToolCallStatus.AWAITING_APPROVAL
    assert isinstance(session.wait_for("w"), WaitForResolution)
    # the approver tries again with valid arguments
    again = published_resolution(session, edited_arguments=EDITED)
    session.approval("w", resolutions=[again])
    approved = session.run_step(ToolArgumentsValidated(invocation=session.inv(), tool_call_id="w",
                                                       resolution=again, problem=None))
    assert approved.state.tool_calls["w"].arguments == EDITED


def test_a_validation_for_a_decided_or_foreign_call_does_not_decide_again() -> None:
    session = gated()
    resolution = published_resolution(session, edited_arguments=EDITED)
    foreign = replace(resolution, interrupt_id="turn-1:other")
    assert "reached the wait" in failure_of(session.run_step(ToolArgumentsValidated(
        invocation=session.inv(), tool_call_id="w", resolution=foreign, problem=None)))
    session.approval("w", resolutions=[resolution])
    session.run_step(ToolArgumentsValidated(invocation=session.inv(), tool_call_id="w", resolution=resolution,
                                            problem=None))
    replayed = session.run_step(ToolArgumentsValidated(invocation=session.inv(), tool_call_id="w",
                                                       resolution=resolution, problem=None))
    assert is_dead_end(replayed) and list(replayed.effects) == []


def test_a_rejection_keeps_its_audit() -> None:
    session = gated()
    resolution = published_resolution(session, approved=False, rejection_message="no", approver="bo", reason="policy")
    rejected = session.approval("w", resolutions=[resolution])
    record = rejected.state.tool_calls["w"]
    assert record.status is ToolCallStatus.REJECTED and record.approval is not None
    assert (record.approval.approved, record.approval.approver, record.approval.original_arguments) == (False, "bo", None)


def extend(session: Session, deadline_ms: int) -> object:
    return session.feed_rpc(ExtendInterruptDeadlineCalled(
        input=ExtendInterruptDeadlineInput(interrupt_id="turn-1:w", deadline_ms=deadline_ms), now_ms=session.now_ms))


def test_extend_interrupt_deadline_moves_a_pending_deadline_later_and_the_timer_waits_again() -> None:
    session = gated()
    session.now_ms = T0_MS + 10_000
    assert answer_of(extend(session, 3_600_000)) is True  # type: ignore[arg-type]
    (interrupt,) = session.state.pending_interrupts
    assert interrupt.deadline is not None and parse_instant(interrupt.deadline) == T0_MS + 10_000 + 3_600_000
    assert answer_of(extend(session, 1_000)) is False  # type: ignore[arg-type]  # not later
    session.now_ms = T0_MS + DEADLINE_MS  # the old Timer fires: not passed any more, wait again
    assert moves(session.timer_fires("w")) == [(StepType.AWAIT_TOOL_APPROVAL, "w")]
    assert "deadline_ms must be within" in failure_of(extend(session, 0))  # type: ignore[arg-type]


def test_extend_interrupt_deadline_answers_false_when_it_cannot_extend() -> None:
    assert answer_of(extend(gated(deadline_ms=None), 1_000)) is False  # type: ignore[arg-type]  # never expires
    session = gated()
    session.now_ms = T0_MS + DEADLINE_MS
    assert answer_of(extend(session, 1_000)) is False  # type: ignore[arg-type]  # passed
    resolve(session)
    assert answer_of(extend(session, 1_000)) is False  # type: ignore[arg-type]  # not pending
    broken = gated()
    broken.state = replace(broken.state, pending_interrupts=pvector(
        [replace(broken.state.pending_interrupts[0], deadline="tomorrow")]))
    assert answer_of(extend(broken, 1_000)) is False  # type: ignore[arg-type]


def crashed_write(effect: ToolEffect = ToolEffect.NON_IDEMPOTENT_WRITE) -> Session:
    session = started_session()
    session.model(requested(tool_call("w", effect, tool_name="refund", requires_approval=False)))
    return session


def single_attempt_failed(session: Session, reconcile: bool) -> object:
    return session.run_step(SingleAttemptToolFailed(invocation=session.inv(), tool_call_id="w",
                                                    recovery_error=recovery("Worker lost"), reconcile=reconcile))


def test_a_crashed_write_with_a_reconcile_moves_to_reconcile_and_is_settled_as_succeeded() -> None:
    session = crashed_write()
    moved = single_attempt_failed(session, reconcile=True)
    assert moves(moved) == [(StepType.RECONCILE_TOOL_OUTCOME, "w")]  # type: ignore[arg-type]
    record = session.state.tool_calls["w"]
    assert (record.status, record.unknown_error) == (ToolCallStatus.PENDING, "Worker lost")
    assert session.state.open_record_count() == 1 and completions_of(moved) == []  # type: ignore[arg-type]
    # a tool Step that still runs for the call never runs it again
    again = session.tool_started("w", StepType.CALL_SINGLE_ATTEMPT_TOOL)
    assert is_dead_end(again) and list(again.effects) == []
    asked = session.run_step(ReconcileStarted(invocation=session.inv(), tool_call_id="w"))
    assert asked.ending == ReconcileToolCall(tool_call=record, idempotency_key=record.idempotency_key, error="Worker lost")
    settled = session.run_step(ToolOutcomeReconciled(invocation=session.inv(), tool_call_id="w", status="succeeded",
                                                     text="refund rf_1 found"))
    final = settled.state.tool_calls["w"]
    assert (final.status, final.output, final.settlement and final.settlement.settled_by) == (
        ToolCallStatus.SUCCEEDED, "refund rf_1 found", "reconcile")
    assert event_types(settled) == ["dex_agents.tool_outcome_settled", "tool_call_finished"]
    assert completions_of(settled) == ["w"]
    assert describe_tool_call_outcome(final).startswith("[Dex] The outcome was unknown (Worker lost); the tool's "
                                                        "reconcile check settled it as succeeded.\n")


def test_a_reconcile_answers_failed_or_still_unknown() -> None:
    session = crashed_write(ToolEffect.IDEMPOTENT_WRITE)
    session.run_step(ToolAttemptsExhausted(invocation=session.inv(), tool_call_id="w",
                                           recovery_error=recovery("timeout"), reconcile=True))
    failed = session.run_step(ToolOutcomeReconciled(invocation=session.inv(), tool_call_id="w", status="failed",
                                                    text="no refund"))
    assert (failed.state.tool_calls["w"].status, failed.state.tool_calls["w"].error) == (ToolCallStatus.FAILED, "no refund")
    unknown = crashed_write()
    single_attempt_failed(unknown, reconcile=True)
    still = unknown.run_step(ToolOutcomeReconciled(invocation=unknown.inv(), tool_call_id="w", status="unknown",
                                                   text=None))
    record = still.state.tool_calls["w"]
    assert (record.status, record.error, record.settlement) == (ToolCallStatus.OUTCOME_UNKNOWN, "Worker lost", None)
    bad = crashed_write()
    single_attempt_failed(bad, reconcile=True)
    assert "expected 'succeeded'" in failure_of(bad.run_step(ToolOutcomeReconciled(
        invocation=bad.inv(), tool_call_id="w", status="maybe", text=None)))


def test_a_reconcile_that_runs_out_of_attempts_records_outcome_unknown() -> None:
    session = crashed_write()
    single_attempt_failed(session, reconcile=True)
    gave_up = single_attempt_failed(session, reconcile=True)
    record = session.state.tool_calls["w"]
    assert record.status is ToolCallStatus.OUTCOME_UNKNOWN
    assert record.error == "Worker lost (its reconcile check failed too: Worker lost)"
    assert completions_of(gave_up) == ["w"]  # type: ignore[arg-type]


def test_without_a_reconcile_the_outcome_stays_unknown_and_a_reconcile_of_a_known_outcome_is_rejected() -> None:
    session = crashed_write()
    single_attempt_failed(session, reconcile=False)
    assert session.state.tool_calls["w"].status is ToolCallStatus.OUTCOME_UNKNOWN
    assert is_dead_end(session.run_step(ReconcileStarted(invocation=session.inv(), tool_call_id="w")))
    pending = crashed_write(ToolEffect.READ)
    assert "nothing to reconcile" in failure_of(pending.run_step(ReconcileStarted(invocation=pending.inv(),
                                                                                  tool_call_id="w")))


OLD_RECORDS = {
    # texts written before the operator fields existed (the goldens before issue 25): they still decode
    "agent_interrupt": '{"arguments":"{}","deadline":null,"effect":"read","interrupt_id":"turn-1:w",'
                       '"tool_call_id":"w","tool_name":"t","turn_id":"turn-1"}',
    "resolve_interrupt_input": '{"approved":true,"interrupt_id":"turn-2:call_charge_2","rejection_message":null}',
    "agent_interrupt_resolution": '{"approved":false,"interrupt_id":"i","rejection_message":"no"}',
}


def test_values_written_before_the_operator_fields_still_decode() -> None:
    from dex_agents.pure.values.session import AgentInterrupt
    from dex_agents.pure.wire import decode_as, record_type

    interrupt = decode_as(OLD_RECORDS["agent_interrupt"], record_type(AgentInterrupt)).unwrap()
    assert interrupt.arguments_sha256 is None
    request = decode_as(OLD_RECORDS["resolve_interrupt_input"], record_type(ResolveInterruptInput)).unwrap()
    assert (request.edited_arguments, request.arguments_sha256, request.approver, request.reason) == (None,) * 4
    resolution = decode_as(OLD_RECORDS["agent_interrupt_resolution"], record_type(AgentInterruptResolution)).unwrap()
    assert resolution == AgentInterruptResolution(interrupt_id="i", approved=False, rejection_message="no")
