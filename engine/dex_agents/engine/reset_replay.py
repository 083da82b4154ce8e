"""Time travel (``ResetFlow``), the pure part: from a run's history, where to cut and what the run
looked like at the cut.

The reset point is a Step method's start, found in history: ``BEGINNING`` is the start Step's first
method, ``STEP_EXECUTION_ID`` + method the scheduling of that method of that execution, ``STEP_TYPE``
the first method of the latest execution of that Step type (the SDK's "resume at the latest
execution"), ``HISTORY_EVENT_TIME`` the first Step method scheduled at or after that time. The
cut keeps every event up to the end of the transaction that scheduled the method (so the decision
or RPC that started the Step, with the sibling Steps it started, is kept; the method itself is not
run yet). History events carry their transaction number for this (``history.txn``).

:func:`replay` rebuilds the run at the cut from the kept events: Attributes (initial ones, then
every write in order; a null deletes), pending Channel messages (publishes, deletes, and what each
satisfied Wait consumed, recorded with the ``execute`` it started), and each Step execution's place
(pending ``wait_for``, waiting on its Wait, pending ``execute`` with its condition results, or
ended: done, failed, canceled by a decision or an RPC), its locals, and the outputs of completed
Steps (a graceful completion also marks the run closing); a run that began by continue-as-new
starts from the state its first event carries. :func:`writes_after` lists what the reset
reapplies unless told not to: RPC effects (``SetAttributes`` included) and Channel publishes and
deletes from outside the run, recorded after the cut, in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

from dex.dexpb import dex_pb2 as pb

ReplayPhase = Literal["wait_for", "waiting", "execute", "done", "failed", "canceled"]
ACTIVE: tuple[ReplayPhase, ...] = ("wait_for", "waiting", "execute")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredEvent:
    """One history row: event id, transaction number, event."""

    event_id: int
    txn: int
    event: pb.FlowHistoryEvent


@dataclass(slots=True, kw_only=True)
class ReplayStep:
    """A Step execution's place at the cut."""

    seid: str
    step_type: str
    from_seid: str
    phase: ReplayPhase
    waiting: pb.WaitingCondition | None = None
    results: pb.ConditionResults | None = None
    locals: dict[str, pb.KV] = field(default_factory=dict)
    wait_for_failed: bool = False


@dataclass(slots=True, kw_only=True)
class ReplayedRun:
    """The run at the cut."""

    attributes: dict[str, pb.Value | None] = field(default_factory=dict)
    """Attribute key -> value; None for a hard-delete Attribute whose value history does not keep."""
    channels: dict[str, list[pb.ChannelMessage]] = field(default_factory=dict)
    steps: dict[str, ReplayStep] = field(default_factory=dict)
    closing: bool = False
    completions: list[pb.StepCompletionOutput] = field(default_factory=list)


class ResetPointError(ValueError):
    """The request names no reset point this run's history has."""


def cut_for(events: Sequence[StoredEvent], request: pb.ResetFlowRequest) -> int:
    """The id of the last event kept by a reset to ``request``'s point.

    Raises:
        ResetPointError: the point is not in this run's history (or the request names none).
    """
    target = _target(events, request)
    if target.txn == 0:  # recorded before transactions were numbered: the event alone
        return target.event_id
    return max(e.event_id for e in events if e.txn == target.txn)


def _pending(event: pb.FlowHistoryEvent) -> tuple[str, pb.StepMethodPendingEvent] | None:
    kind = event.WhichOneof("payload")
    if kind == "step_wait_for_pending":
        return "wait_for", event.step_wait_for_pending
    if kind == "step_execute_pending":
        return "execute", event.step_execute_pending
    return None


def _target(events: Sequence[StoredEvent], request: pb.ResetFlowRequest) -> StoredEvent:
    starts = [(e, found) for e in events if (found := _pending(e.event)) is not None]
    kind = request.reset_type
    if kind == pb.FLOW_RESET_TYPE_BEGINNING:
        if events and events[0].event.HasField("flow_started_or_continued"):
            return starts[0][0] if starts else events[0]
        raise ResetPointError("the run's history has no start")
    if kind == pb.FLOW_RESET_TYPE_STEP_EXECUTION_ID:
        if not request.step_execution_id:
            raise ResetPointError("step_execution_id is required for a STEP_EXECUTION_ID reset")
        wanted = {pb.FLOW_RESET_STEP_METHOD_WAIT_FOR: "wait_for", pb.FLOW_RESET_STEP_METHOD_EXECUTE: "execute"}.get(
            request.step_method)
        for event, (method, pending) in starts:
            if pending.context.step_execution_id == request.step_execution_id and wanted in (None, method):
                return event
        raise ResetPointError(f"step execution {request.step_execution_id} has no "
                              f"{wanted or 'method'} start in the run's history")
    if kind == pb.FLOW_RESET_TYPE_STEP_TYPE:
        if not request.step_type:
            raise ResetPointError("step_type is required for a STEP_TYPE reset")
        firsts: dict[str, StoredEvent] = {}
        for event, (_, pending) in starts:
            if pending.context.step_type == request.step_type:
                firsts.setdefault(pending.context.step_execution_id, event)
        if not firsts:
            raise ResetPointError(f"step type {request.step_type} never ran in the run's history")
        return max(firsts.values(), key=lambda e: e.event_id)
    if kind == pb.FLOW_RESET_TYPE_HISTORY_EVENT_TIME:
        at = _parse_time(request.history_event_time)
        for event, _ in starts:
            if event.event.event_time.ToNanoseconds() >= at:
                return event
        raise ResetPointError(f"no Step method started at or after {request.history_event_time}")
    raise ResetPointError(f"unsupported reset type {kind}")


def _parse_time(text: str) -> int:
    """Nanoseconds since the epoch of an ISO 8601 time (no zone means UTC)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ResetPointError(f"history_event_time is not an ISO 8601 time: {text[:64]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1_000_000_000)


def writes_after(events: Iterable[StoredEvent], cut: int) -> list[pb.FlowHistoryEvent]:
    """What a reset reapplies: RPC effects and outside Channel publishes/deletes after the cut."""
    kinds = ("rpc_execution_completed", "channel_external_publish", "channel_external_delete")
    return [e.event for e in events if e.event_id > cut and e.event.WhichOneof("payload") in kinds]


def replay(events: Iterable[StoredEvent], cut: int, initial: Sequence[pb.AttributeWrite]) -> ReplayedRun:
    """The run at the cut, from its initial Attributes (the start request's) and its history."""
    run = ReplayedRun()
    _write(run, initial)
    for stored in events:
        if stored.event_id > cut:
            break
        _apply(run, stored.event)
    return run


def _apply(run: ReplayedRun, event: pb.FlowHistoryEvent) -> None:
    kind = event.WhichOneof("payload")
    if kind in ("step_wait_for_pending", "step_execute_pending"):
        pending = event.step_wait_for_pending if kind == "step_wait_for_pending" else event.step_execute_pending
        _start_method(run, pending, "wait_for" if kind == "step_wait_for_pending" else "execute")
    elif kind == "step_wait_for_completed":
        done = event.step_wait_for_completed
        _effects(run, done.output.upsert_attributes, done.output.publish_to_channel, done.output.delete_from_channel)
        step = run.steps.get(done.context.step_execution_id)
        if step is not None:
            step.locals.update((kv.key, kv) for kv in done.output.upsert_step_execution_locals)
            if done.output.HasField("wait_for_condition"):
                step.phase, step.waiting = "waiting", done.output.wait_for_condition
    elif kind == "step_execute_completed":
        done_execute = event.step_execute_completed
        output = done_execute.output
        _effects(run, output.upsert_attributes, output.publish_to_channel, output.delete_from_channel)
        step = run.steps.get(done_execute.context.step_execution_id)
        if step is not None:
            step.phase = "done"
            _decide(run, output.step_decision, step)
    elif kind in ("step_wait_for_failed", "step_execute_failed"):
        failed = event.step_wait_for_failed if kind == "step_wait_for_failed" else event.step_execute_failed
        step = run.steps.get(failed.context.step_execution_id)
        if step is not None:
            step.phase = "failed"  # a PROCEED wait_for goes on with the execute start that follows
            step.wait_for_failed = kind == "step_wait_for_failed"
    elif kind == "rpc_execution_completed":
        rpc = event.rpc_execution_completed
        _effects(run, rpc.upsert_attributes, rpc.publish_to_channel, rpc.delete_from_channel)
        _decide(run, rpc.step_decision, None)
    elif kind == "channel_external_publish":
        _effects(run, (), event.channel_external_publish.messages, ())
    elif kind == "channel_external_delete":
        _effects(run, (), (), event.channel_external_delete.messages)
    elif kind == "flow_started_or_continued" and event.flow_started_or_continued.HasField("continued_start"):
        _continue(run, event.flow_started_or_continued.continued_start)
    elif kind == "flow_closed":
        for step in run.steps.values():
            if step.phase in ACTIVE:
                step.phase = "canceled"


def _continue(run: ReplayedRun, carried: pb.FlowContinuedStart) -> None:
    """A run that began by continue-as-new starts from the state its first event carries (a Step
    without a stored Wait resumes its pending method: ``execute`` when marked by
    ``completed_conditions``, its condition results then come from the Step's row)."""
    run.attributes = {kv.key: kv.value if kv.HasField("value") else None for kv in carried.attributes}
    run.channels = {name: list(values.messages) for name, values in carried.pending_channel_messages.items()}
    run.completions = list(carried.completed_steps)
    for resume in carried.steps_to_resume:
        phase: ReplayPhase = "waiting" if resume.HasField("waiting_condition") else (
            "execute" if resume.HasField("completed_conditions") else "wait_for")
        run.steps[resume.step_execution_id] = ReplayStep(
            seid=resume.step_execution_id, step_type=resume.step.step_type,
            from_seid=resume.step.from_step_execution_id_internal_only, phase=phase,
            locals={kv.key: kv for kv in resume.step_exe_locals})


def _start_method(run: ReplayedRun, pending: pb.StepMethodPendingEvent, method: ReplayPhase) -> None:
    context = pending.context
    step = run.steps.get(context.step_execution_id)
    if step is None:
        step = run.steps[context.step_execution_id] = ReplayStep(
            seid=context.step_execution_id, step_type=context.step_type, from_seid=context.from_step_execution_id,
            phase=method)
    step.phase = method
    if method == "execute" and pending.input.HasField("condition_results"):
        step.results = pending.input.condition_results
        for result in step.results.channel_results:
            if result.condition_status == pb.CONDITION_STATUS_COMPLETED and result.values:
                queue = run.channels.get(result.channel_name, [])
                del queue[:len(result.values)]


def _decide(run: ReplayedRun, decision: pb.StepDecision, step: ReplayStep | None) -> None:
    for step_type in decision.cancel_step_types:
        _cancel(run, step_type, None)
    if step is not None:
        for step_type in decision.cancel_sibling_step_types:
            _cancel(run, step_type, step.from_seid)
    if step is None or not decision.HasField("close_decision"):
        return
    close = decision.close_decision
    if close.close_decision_type == pb.CLOSE_DECISION_TYPE_GRACEFUL_COMPLETE:
        run.closing = True
    if close.close_decision_type in (pb.CLOSE_DECISION_TYPE_GRACEFUL_COMPLETE, pb.CLOSE_DECISION_TYPE_FORCE_COMPLETE,
                                     pb.CLOSE_DECISION_TYPE_FORCE_COMPLETE_ON_CHANNELS_EMPTY) and close.HasField(
            "close_input"):
        run.completions.append(pb.StepCompletionOutput(completed_step_type=step.step_type,
                                                       completed_step_execution_id=step.seid,
                                                       completed_step_output=close.close_input))


def _cancel(run: ReplayedRun, step_type: str, from_seid: str | None) -> None:
    for step in run.steps.values():
        if step.step_type == step_type and step.phase in ACTIVE and (from_seid is None or step.from_seid == from_seid):
            step.phase = "canceled"


def _write(run: ReplayedRun, writes: Iterable[pb.AttributeWrite]) -> None:
    for write in writes:
        if not write.HasField("value"):
            run.attributes[write.key] = None  # a hard-delete Attribute: history keeps no value
        elif write.value.WhichOneof("kind") == "null_value":
            run.attributes.pop(write.key, None)
        else:
            run.attributes[write.key] = write.value


def _effects(run: ReplayedRun, writes: Iterable[pb.AttributeWrite], published: Iterable[pb.ChannelMessage],
             deleted: Iterable[pb.ChannelMessageDeletion]) -> None:
    _write(run, writes)
    for message in published:
        run.channels.setdefault(message.channel_name, []).append(message)
    for deletion in deleted:
        queue = run.channels.get(deletion.channel_name, [])
        run.channels[deletion.channel_name] = [m for m in queue if m.message_id != deletion.message_id]
