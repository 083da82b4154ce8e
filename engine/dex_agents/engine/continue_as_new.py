"""Continue-as-new: a running Flow rolls its history into a new run (``FlowConfig.
continue_as_new_threshold``, ``TriggerContinueAsNew``) and ``UpdateFlowConfig``.

The Flow ID stays and the run id changes. The live state is not copied: the run's row (its internal
``uid``) goes on as the new run, so its Attributes, pending Channel messages, Step executions and
their stored Waits, Timers, SubFlow links, tasks in flight and Attribute locks are untouched, and
every commit is a safe point. One transaction:

* the ending run gets a row of its own (status ``CONTINUED_AS_NEW``, its run id, start and close
  times) and takes its history along, closed by ``flow_closed`` naming the next run
  (``continued_to_run_id``);
* the current row takes the new run id; its history starts again at event 1 with
  ``flow_started_or_continued`` whose ``continued_start`` carries the state the new run begins
  with: previous run id, active Step executions (a stored Wait with its fired Timers and SubFlow
  results; an ``execute`` pending marked by ``completed_conditions``), pending Channel messages,
  Attributes (a hard-delete one by key only, as history never keeps its value) and the outputs
  so far, so that the run's own history replays it (``reset_replay``).

Threshold: after each commit the core hands over the runs that recorded history with their newest
event id (:meth:`Store.take_recorded`, no query); a running run whose config sets a threshold N > 0
and whose history holds more than N events rolls over. The current run's history therefore holds
at most N events plus those of one transaction.
"""

from __future__ import annotations

import sqlite3
import uuid

import grpc

from dex.dexpb import dex_pb2 as pb

from .repository import events as stored_events
from .repository import runs, state
from .core import EngineCore
from .errors import ServiceError, flow_not_found, invalid
from .flow_state import FlowStateQuery
from .rows import Effects, FlowRow

_MERGED = ("active_step_search_mode", "continue_as_new_threshold", "continue_as_new_page_size_in_bytes",
           "step_durability", "worker_target", "attribute_store_names")
"""The FlowConfig fields an update replaces when it carries them (the others stay)."""


def check_config(config: pb.FlowConfig) -> None:
    """Reject a negative continue-as-new threshold or page size (zero turns them off / defaults)."""
    if config.continue_as_new_threshold < 0 or config.continue_as_new_page_size_in_bytes < 0:
        raise invalid("continue_as_new_threshold and continue_as_new_page_size_in_bytes must not be negative")


class ContinueAsNewOps:
    """Run rollover and config updates (engine lock held)."""

    def __init__(self, engine: EngineCore) -> None:
        self.engine = engine

    def _active(self, flow_id: str, run_id: str) -> FlowRow:
        if not flow_id:
            raise invalid("flow_id is required")
        flow = self.engine.current_flow(flow_id, run_id)
        if flow is None or not flow.running:
            raise flow_not_found(flow_id, f"no active run of flow {flow_id}")
        return flow

    def trigger(self, request: pb.TriggerContinueAsNewRequest) -> None:
        """Roll the active run over now (the answer comes after the new run is committed)."""
        self.engine.assert_locked()
        flow = self._active(request.flow_id, request.run_id)
        effects = Effects()
        with self.engine.store.transaction() as db:
            self.roll_over(db, flow, effects)
        self.engine.apply(effects)

    def update_config(self, request: pb.UpdateFlowConfigRequest) -> None:
        """Merge the given fields into the active run's config (later decisions use it); a history
        already longer than a new threshold rolls over at once."""
        self.engine.assert_locked()
        flow = self._active(request.flow_id, request.run_id)
        check_config(request.flow_config)
        config = pb.FlowConfig()
        config.CopyFrom(flow.config)
        for name in _MERGED:
            if request.flow_config.HasField(name):
                if name in ("worker_target", "attribute_store_names"):
                    getattr(config, name).CopyFrom(getattr(request.flow_config, name))
                else:
                    setattr(config, name, getattr(request.flow_config, name))
        with self.engine.store.transaction() as db:
            self.engine.rows.update_flow(db, flow.uid, config=config.SerializeToString())
        self.engine.apply(Effects(touched={flow.uid}))
        self.continue_if_due(flow.uid, stored_events.last_event_id(self.engine.store.db, flow.uid))

    def continue_if_due(self, uid: int, events: int) -> None:
        """Roll the run over if it runs and its history (``events`` long) exceeds its threshold."""
        self.engine.assert_locked()
        flow = self.engine.flow(uid)
        if flow is None or not flow.running:
            return
        threshold = flow.config.continue_as_new_threshold
        if threshold <= 0 or events <= threshold:
            return
        effects = Effects()
        with self.engine.store.transaction() as db:
            self.roll_over(db, flow, effects)
        self.engine.apply(effects)

    def roll_over(self, db: sqlite3.Connection, flow: FlowRow, effects: Effects) -> str:
        """End ``flow``'s run as continued-as-new and go on in a new run (see the module docstring);
        returns the new run id."""
        self.engine.assert_locked()
        if not flow.running:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, f"flow {flow.flow_id} is not running")
        new_run_id = str(uuid.uuid4())
        now = self.engine.now_ms()
        start = pb.StartFlowRequest()
        start_blob, parent_flow_id, first_blob = runs.rollover_columns(db, flow.uid)
        start.ParseFromString(start_blob)
        run_start_ms = flow.start_ms
        if first_blob:
            first = pb.FlowHistoryEvent()
            first.ParseFromString(first_blob)
            run_start_ms = first.event_time.ToMilliseconds()
        ended = runs.insert_continued(self.engine.rows, db, flow, run_start_ms, now, start_blob, parent_flow_id)
        stored_events.move(db, flow.uid, ended)
        state.record(db, ended, pb.FlowHistoryEvent(flow_closed=pb.FlowClosedHistoryEvent(
            flow_status=pb.FLOW_STATUS_CONTINUED_AS_NEW, continued_to_run_id=new_run_id)))
        self.engine.rows.update_flow(db, flow.uid, run_id=new_run_id)
        state.record(db, flow.uid, pb.FlowHistoryEvent(flow_started_or_continued=pb.FlowStartedOrContinuedHistoryEvent(
            flow_execution_id=pb.FlowExecutionID(flow_id=flow.flow_id, run_id=new_run_id),
            flow_type=flow.flow_type, flow_config=flow.config, flow_timeout_policy=start.flow_timeout_policy,
            continued_start=self._carried(db, flow))))
        effects.touched.add(flow.uid)
        return new_run_id

    def _carried(self, db: sqlite3.Connection, flow: FlowRow) -> pb.FlowContinuedStart:
        """The state the new run begins with, as its first history event keeps it."""
        carried = pb.FlowContinuedStart(previous_run_id=flow.run_id,
                                        completed_steps=self.engine.flow_result(flow.uid).results)
        for key, blob, hard_delete in state.carried_attributes(db, flow.uid):
            kv = carried.attributes.add(key=key)
            if not hard_delete:
                kv.value.ParseFromString(blob)
        for name, values in state.pending_messages(db, flow.uid).items():
            carried.pending_channel_messages[name].CopyFrom(values)
        steps = FlowStateQuery(self.engine)
        for step in self.engine.active_steps(flow.uid):
            active = steps.step_state(step)
            resume = carried.steps_to_resume.add(step_execution_id=step.seid, step_exe_locals=step.locals)
            resume.step.CopyFrom(active.movement)
            resume.step.from_step_execution_id_internal_only = step.from_seid
            if step.phase == "waiting":
                resume.waiting_condition.CopyFrom(active.waiting_condition)
                resume.completed_conditions.CopyFrom(active.completed_conditions)
            elif step.phase == "execute":
                resume.completed_conditions.SetInParent()
        return carried
