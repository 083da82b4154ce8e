"""Time travel (``ResetFlow``): a new run of the same Flow ID from a point of an existing run's
history (see :mod:`reset_replay` for the point and what is kept).

In one transaction: the selected run, if still running, is terminated (as Dex does: its Steps
are canceled); a new run (new run id, the old run's type, config and start request) starts with
the old run's history up to the cut, a ``time_travel_fork`` event, and the state the cut implies:
its Attributes (a hard-delete Attribute, whose values history never keeps, gets the old run's
latest value), its pending Channel messages, and its Step executions, each resumed where the cut
leaves it: a pending method runs again (attempt 1), a stored Wait is stored again (its Timers start
over with their full duration, its SubFlows are started or reused by their reuse policy), ended
ones stay ended (so execution numbers go on). Unless ``skip_writes_reapply``, the RPC effects
(``SetAttributes`` included) and the outside Channel publishes and deletes recorded after the cut
are then applied again, in order. The new run's Flow timeout counts from the reset. The answer is
the new run id.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable

import grpc

from dex.dexpb import dex_pb2 as pb

from . import reset_replay
from .repository import events as stored_events
from .repository import runs, state
from .repository import steps as stored_steps
from .core import EngineCore
from .errors import ServiceError, flow_not_found, invalid
from .flows import FlowOps
from .reset_replay import ReplayedRun, ReplayStep, StoredEvent
from .rows import Effects, FlowRow, StepRow
from .step_creation import TIMEOUT_HANDLER, create_step, create_timeout_handler
from .subflows import SubFlows


class ResetOps:
    """ResetFlow (engine lock held)."""

    def __init__(self, engine: EngineCore, flows: FlowOps, sub_flows: SubFlows) -> None:
        self.engine = engine
        self.flows = flows
        self.sub_flows = sub_flows

    def reset(self, request: pb.ResetFlowRequest) -> pb.ResetFlowResponse:
        self.engine.assert_locked()
        if not request.flow_id:
            raise invalid("flow_id is required")
        old = self.engine.current_flow(request.flow_id, request.run_id)
        if old is None:
            raise flow_not_found(request.flow_id)
        db = self.engine.store.db
        events = [StoredEvent(event_id=event_id, txn=txn, event=_event(blob))
                  for event_id, txn, blob in stored_events.stored_events(db, old.uid)]
        try:
            cut = reset_replay.cut_for(events, request)
        except reset_replay.ResetPointError as error:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, str(error)) from None
        start = runs.start_request(db, old.uid)
        replayed = reset_replay.replay(events, cut, start.flow_start_options.attributes)
        live = old  # the row holding the selected run's Steps and Attributes
        if old.status == pb.FLOW_STATUS_CONTINUED_AS_NEW:
            live = self.engine.current_flow(request.flow_id) or old
        effects = Effects()
        running = live if live.running else None  # the selected run, or the run it continued as
        with self.engine.store.transaction() as db:
            if running is not None:
                self.flows.close(db, running, pb.FLOW_STATUS_TERMINATED, pb.FLOW_ERROR_TYPE_UNSPECIFIED, "",
                                 effects)
            run_id, flow = self._insert_run(db, old, start, replayed, effects)
            self._copy_history(db, old, flow, events, cut)
            self._restore_state(db, live, flow, replayed)
            self._restore_steps(db, live, flow, replayed, events, cut, effects)
            if not request.skip_writes_reapply:
                for event in reset_replay.writes_after(events, cut):
                    self._reapply(db, flow, event, effects)
        self.engine.apply(effects)
        return pb.ResetFlowResponse(run_id=run_id, run_attempt=1)

    def _insert_run(self, db: sqlite3.Connection, old: FlowRow, start: pb.StartFlowRequest, replayed: ReplayedRun,
                    effects: Effects) -> tuple[str, FlowRow]:
        run_id = str(uuid.uuid4())
        now = self.engine.now_ms()
        timeout_ms = now + start.flow_timeout_seconds * 1000 if start.flow_timeout_seconds > 0 else 0
        results = pb.FlowResult(results=replayed.completions).SerializeToString() if replayed.completions else b""
        uid = runs.insert_reset(self.engine.rows, db, old, run_id, now, start, timeout_ms, replayed.closing, results,
                                runs.parent_flow_id(db, old.uid))
        flow = self.engine.flow(uid)
        assert flow is not None
        if timeout_ms and start.flow_timeout_policy == pb.FLOW_TIMEOUT_POLICY_HANDLER:
            create_timeout_handler(self.engine, db, flow, start.flow_timeout_seconds,
                                   start.flow_start_options.timeout_handler_options, effects)
        elif timeout_ms:
            effects.flow_timeouts.append((uid, timeout_ms, start.flow_timeout_policy))
        return run_id, flow

    def _copy_history(self, db: sqlite3.Connection, old: FlowRow, flow: FlowRow, events: list[StoredEvent],
                      cut: int) -> None:
        for stored in events:
            if stored.event_id > cut:
                break
            event = pb.FlowHistoryEvent()
            event.CopyFrom(stored.event)
            if event.HasField("flow_started_or_continued"):
                event.flow_started_or_continued.flow_execution_id.run_id = flow.run_id
            stored_events.insert_copy(db, flow.uid, stored.event_id, event, stored.txn)
        state.record(db, flow.uid, pb.FlowHistoryEvent(time_travel_fork=pb.TimeTravelForkHistoryEvent(
            previous_run_id=old.run_id, previous_run_attempt=1, target_run_attempt=1, target_event_id=cut)))

    def _restore_state(self, db: sqlite3.Connection, old: FlowRow, flow: FlowRow, replayed: ReplayedRun) -> None:
        indexed = state.indexed_keys(db, old.uid)
        for key, value in replayed.attributes.items():
            hard_delete = value is None
            if value is None:  # a hard-delete Attribute: its latest value, if it has one
                value = state.attribute(db, old.uid, key)
                if value is None:
                    continue
            state.insert_restored(db, flow.uid, key, value, indexed=key in indexed, hard_delete=hard_delete)
        for messages in replayed.channels.values():
            for message in messages:  # one by one: ids repeated across past publishes stay allowed
                state.publish(db, flow.uid, [message])

    def _restore_steps(self, db: sqlite3.Connection, old: FlowRow, flow: FlowRow, replayed: ReplayedRun,
                       events: list[StoredEvent], cut: int, effects: Effects) -> None:
        later_wait_for_failures = {
            e.event.step_wait_for_failed.context.step_execution_id for e in events
            if e.event_id > cut and e.event.HasField("step_wait_for_failed")}
        rows = stored_steps.all_of_run(db, old.uid)
        now = self.engine.now_ms()
        for replay_step in replayed.steps.values():
            row = rows.get(replay_step.seid)
            if row is None or row.step_type == TIMEOUT_HANDLER:
                continue
            recovery = None if replay_step.seid in later_wait_for_failures else row.recovery
            if replay_step.phase == "waiting" and replay_step.waiting is None:  # carried by a continue-as-new
                replay_step.waiting = row.waiting
            if replay_step.phase == "execute" and replay_step.results is None:
                replay_step.results = row.results
            self._insert_step(db, flow, row, replay_step, recovery, now)
            restored = self.engine.step(flow.uid, row.seid)
            assert restored is not None
            if replay_step.phase in ("wait_for", "execute"):
                effects.launches.append((flow.uid, row.seid))
            elif replay_step.phase == "waiting" and replay_step.waiting is not None:
                self._restore_wait(db, flow, restored, replay_step.waiting, now, effects)

    def _insert_step(self, db: sqlite3.Connection, flow: FlowRow, row: StepRow, replay_step: ReplayStep,
                     recovery: pb.RecoveryErrorInfo | None, now: int) -> None:
        locals_blob = pb.GetAttributesQueryResponse(attributes=list(replay_step.locals.values())).SerializeToString()
        stored_steps.insert_restored(db, flow.uid, row, replay_step.phase, recovery, now, replay_step.waiting,
                                     replay_step.results, locals_blob)

    def _restore_wait(self, db: sqlite3.Connection, flow: FlowRow, step: StepRow, waiting: pb.WaitingCondition,
                      now: int, effects: Effects) -> None:
        for idx, timer in enumerate(waiting.timer_conditions):
            fire_ms = now + timer.duration_seconds * 1000
            pending = timer.duration_seconds > 0
            stored_steps.put_timer(db, flow.uid, step.seid, idx, timer.condition_id, fire_ms,
                                   pb.INTERNAL_TIMER_STATUS_PENDING if pending else pb.INTERNAL_TIMER_STATUS_FIRED,
                                   replace=False)
            if pending:
                effects.timers.append((fire_ms / 1000, flow.uid, step.seid, idx))
        if waiting.sub_flow_conditions:
            self.sub_flows.start_all(db, flow, step, waiting, effects)
        effects.wait_checks.add(flow.uid)

    def _reapply(self, db: sqlite3.Connection, flow: FlowRow, event: pb.FlowHistoryEvent, effects: Effects) -> None:
        """Apply an RPC's effects (or an outside publish or delete) again to the new run."""
        kind = event.WhichOneof("payload")
        uid = flow.uid
        if kind == "rpc_execution_completed":
            rpc = event.rpc_execution_completed
            writes = [write for write in rpc.upsert_attributes if write.HasField("value")]
            state.upsert_attributes(db, uid, writes)
            effects.written.update((uid, write.key) for write in writes)
            self._publish(db, uid, rpc.publish_to_channel)
            state.delete_messages(db, uid, rpc.delete_from_channel)
            for step_type in rpc.step_decision.cancel_step_types:
                self.flows.cancel_steps(db, uid, step_type, None, effects)
            for movement in rpc.step_decision.next_steps:
                create_step(self.engine, db, flow, movement, "", effects)
        elif kind == "channel_external_publish":
            self._publish(db, uid, event.channel_external_publish.messages)
        elif kind == "channel_external_delete":
            state.delete_messages(db, uid, event.channel_external_delete.messages)
        copy = pb.FlowHistoryEvent()
        copy.CopyFrom(event)
        copy.ClearField("event_time")
        state.record(db, uid, copy)
        effects.wait_checks.add(uid)
        effects.touched.add(uid)

    @staticmethod
    def _publish(db: sqlite3.Connection, uid: int, messages: Iterable[pb.ChannelMessage]) -> None:
        copies = [pb.ChannelMessage(channel_name=m.channel_name, message_id=m.message_id, value=m.value)
                  for m in messages]
        if copies:
            state.publish(db, uid, copies)


def _event(blob: bytes) -> pb.FlowHistoryEvent:
    event = pb.FlowHistoryEvent()
    event.ParseFromString(blob)
    return event
