"""A Step's Wait: storing it, completing it when it is satisfied, re-checking a run's Waits after a
publish or a Timer, and its Timers (fired by the scheduler, or skipped from outside).

A Wait completes in the transaction that satisfies it: the Channel messages it consumes are removed
in the same transaction that moves the Step to ``execute`` and stores them as its ConditionResults,
and a publish and the Waits it satisfies commit as one. Every method runs under the engine lock and
hands its after-commit effects to the core's loop (``EngineCore.after_commit``); none performs them.
"""

from __future__ import annotations

import sqlite3

import grpc

from dex.dexpb import dex_pb2 as pb

from . import history, waits
from .core import EngineCore
from .errors import ServiceError
from .repository import state
from .repository import steps as stored_steps
from .repository.row_cache import StepValue
from .rows import Effects, FlowRow, StepRow
from .subflows import SubFlows


def method_reset(started_ms: int, results: pb.ConditionResults | None,
                 recovery: pb.RecoveryErrorInfo | None = None) -> dict[str, StepValue]:
    """The changes that start a Step execution's ``execute`` at attempt 1 (a ``recovery`` of None
    keeps the stored one)."""
    changes: dict[str, StepValue] = {"phase": "execute", "attempt": 1, "first_attempt_ms": started_ms,
                                     "results": results, "heartbeat": None, "output_seen": False, "not_before_ms": 0,
                                     "last_failure": None}
    if recovery is not None:
        changes["recovery"] = recovery
    return changes


def pending_execute(engine: EngineCore, db: sqlite3.Connection, step: StepRow, effects: Effects) -> None:
    """Record the Step's ``execute`` as pending (its row already moved there) and launch it after the commit."""
    moved = engine.step(step.uid, step.seid)
    flow = engine.flow(step.uid)
    assert moved is not None and flow is not None
    history.method_pending(db, moved, "execute", flow.config)
    effects.launches.append((step.uid, step.seid))


class StepWaits:
    """The Waits of Step executions (engine lock held)."""

    def __init__(self, engine: EngineCore, sub_flows: SubFlows) -> None:
        self.engine = engine
        self.sub_flows = sub_flows

    def start(self, db: sqlite3.Connection, flow: FlowRow, step: StepRow, waiting: pb.WaitingCondition,
              now: int, effects: Effects) -> None:
        """Store the Wait, its Timers (a zero-second Timer is fired at once) and its SubFlows (started
        or reused), then evaluate it."""
        self.engine.rows.update_step(db, step.uid, step.seid, phase="waiting", waiting=waiting)
        if waiting.sub_flow_conditions:
            self.sub_flows.start_all(db, flow, step, waiting, effects)
        for idx, timer in enumerate(waiting.timer_conditions):
            fire_ms = now + timer.duration_seconds * 1000
            status = pb.INTERNAL_TIMER_STATUS_FIRED if timer.duration_seconds <= 0 else pb.INTERNAL_TIMER_STATUS_PENDING
            stored_steps.put_timer(db, step.uid, step.seid, idx, timer.condition_id, fire_ms, status)
            if status == pb.INTERNAL_TIMER_STATUS_PENDING:
                effects.timers.append((fire_ms / 1000, step.uid, step.seid, idx))
        self.try_complete_wait(db, step.uid, step.seid, effects)

    def try_complete_wait(self, db: sqlite3.Connection, uid: int, seid: str, effects: Effects) -> bool:
        """Complete the Step's Wait if it is satisfied now (consuming its messages)."""
        self.engine.assert_locked()
        step = self.engine.step(uid, seid)
        if step is None or step.phase != "waiting" or step.waiting is None:
            return False
        waiting = step.waiting
        statuses = stored_steps.timer_statuses(db, uid, seid)
        if len(statuses) != len(waiting.timer_conditions):
            statuses = [pb.INTERNAL_TIMER_STATUS_PENDING] * len(waiting.timer_conditions)
        sizes = state.channel_sizes(db, uid, [c.channel_name for c in waiting.channel_conditions])
        sub_flows = state.sub_flow_results(db, uid, seid) if waiting.sub_flow_conditions else {}
        done = [index in sub_flows for index in range(len(waiting.sub_flow_conditions))]
        selection = waits.evaluate(waiting, statuses, sizes, done)
        if selection is None:
            return False
        consumed = {idx: state.consume(db, uid, waiting.channel_conditions[idx].channel_name, count)
                    for idx, count in selection.consume.items()}
        results = waits.results(waiting, statuses, selection, consumed, sub_flows)
        stored_steps.delete_timers(db, uid, seid)
        self.engine.rows.update_step(db, uid, seid, **method_reset(self.engine.now_ms(), results))
        pending_execute(self.engine, db, step, effects)
        return True

    def complete_waits(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Complete, in the open transaction, every Wait of the run that is satisfied now, oldest first
        (after a publish of the same transaction: the publish and the Waits it satisfies commit as one)."""
        self.engine.assert_locked()
        flow = self.engine.flow(uid)
        if flow is None or not flow.running:
            return
        for seid in stored_steps.waiting_seids(db, uid):
            self.try_complete_wait(db, uid, seid, effects)

    def check_waits(self, uid: int) -> None:
        """Re-evaluate the run's waiting Steps (after a publish or a Timer), oldest first."""
        self.engine.assert_locked()
        seids = stored_steps.waiting_seids(self.engine.store.db, uid)
        if not seids:
            return
        effects = Effects()
        with self.engine.store.transaction() as db:
            for seid in seids:
                self.try_complete_wait(db, uid, seid, effects)
        if effects.launches:
            self.engine.after_commit(effects)

    def fire_timer(self, uid: int, seid: str, idx: int) -> None:
        """A Timer's time came (scheduler callback)."""
        self.engine.assert_locked()
        self._finish_timer(uid, seid, idx, pb.INTERNAL_TIMER_STATUS_FIRED)

    def _finish_timer(self, uid: int, seid: str, idx: int, status: int) -> bool:
        effects = Effects(touched={uid})
        with self.engine.store.transaction() as db:
            if not stored_steps.finish_timer(db, uid, seid, idx, status):
                return False
            self.try_complete_wait(db, uid, seid, effects)
        self.engine.after_commit(effects)
        return True

    def skip_timer(self, flow: FlowRow, seid: str, condition_id: str, index: int | None) -> None:
        """Make one waiting Timer ready now (by condition id or zero-based index)."""
        self.engine.assert_locked()
        step = self.engine.step(flow.uid, seid)
        if step is None:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"step execution not found: {seid}")
        rows = stored_steps.timers(self.engine.store.db, flow.uid, seid)
        match = [i for i, cid, _, _ in rows if (index is not None and i == index) or (condition_id and cid == condition_id)]
        if step.phase != "waiting" or not match:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                               f"timer {condition_id or index} of step execution {seid} does not exist or is not pending")
        self._finish_timer(flow.uid, seid, match[0], pb.INTERNAL_TIMER_STATUS_SKIPPED)
