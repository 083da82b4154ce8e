"""Outcomes of Step methods: results, failures and retries, and Wait satisfaction.

Each outcome commits in one transaction: the handler's writes (Attributes, Step-execution locals,
Channel publishes and deletes), the Step's new phase, the decision's new Steps or the Flow's close,
the Waits its publishes satisfied, and the history events. Channel messages a satisfied Wait
consumes are removed in the same transaction that moves the Step to ``execute`` and stores them as
its ConditionResults.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import grpc

from dex.dexpb import dex_pb2 as pb

from . import history, policy, waits
from .repository import state
from .repository import steps as stored_steps
from .core import EngineCore
from .errors import ServiceError
from .flows import FlowOps
from .repository.row_cache import StepValue
from .rows import Effects, FlowRow, StepRow
from .step_creation import create_step
from .subflows import SubFlows
from .tasks import Task

def _method_reset(started_ms: int, results: pb.ConditionResults | None,
                  recovery: pb.RecoveryErrorInfo | None = None) -> dict[str, StepValue]:
    """The changes that start a Step execution's ``execute`` at attempt 1 (a ``recovery`` of None
    keeps the stored one)."""
    changes: dict[str, StepValue] = {"phase": "execute", "attempt": 1, "first_attempt_ms": started_ms,
                                     "results": results, "heartbeat": None, "output_seen": False, "not_before_ms": 0,
                                     "last_failure": None}
    if recovery is not None:
        changes["recovery"] = recovery
    return changes


class Outcomes:
    """Result, failure and Wait handling for Step executions (engine lock held)."""

    def __init__(self, engine: EngineCore, flows: FlowOps) -> None:
        self.engine = engine
        self.flows = flows
        self.sub_flows = SubFlows(engine, flows)
        self.snapshots: dict[tuple[int, str], tuple[str, bytes]] = {}
        """(run, Step execution) -> (method, its first attempt's request, whose context is replaced): kept
        while the method retries, so every retry gets the first attempt's snapshot of the state;
        dropped when the method ends (in memory only: after a restart a retry takes a new one)."""

    def settle(self, task: Task, *, cancel: bool = False) -> None:
        """The task's outcome is committed (or there is none to record): forget the task and free
        its Attribute locks. ``cancel`` stops it instead of finishing it (its Worker is told).

        Called only after the commit that records the outcome: a COMMIT that fails leaves the task
        in flight, with its deadlines and its locks, so its timeouts still apply. The worker stream
        stays busy until the Worker sends its final frame for the task.
        """
        self.engine.assert_locked()
        if cancel:
            self.engine.dispatcher.cancel(task)
        else:
            task.finish()
        self.engine.untrack(task)
        self.engine.release(task.uid, f"step:{task.seid}")

    def _current(self, task: Task) -> tuple[FlowRow, StepRow] | None:
        flow = self.engine.flow(task.uid)
        step = self.engine.step(task.uid, task.seid)
        if flow is None or step is None or not flow.running:
            return None
        if step.phase != task.kind or step.attempt != task.attempt:
            return None
        return flow, step

    def method_timeout(self, task: Task) -> None:
        """The attempt ran past its method deadline: it fails with ``dex.MethodTimeout`` (its Worker
        is told to stop)."""
        seconds = task.timeout / self.engine.timing.policy_second
        self.on_failure(task, f"{task.kind} method timeout: no result within {seconds:.0f}s",
                        "dex.MethodTimeout", 0, cancel=True)

    def _overdue(self, task: Task) -> bool:
        """Whether a result arrived past the attempt's method deadline (then the timeout applies,
        even if the periodic deadline check has not run yet)."""
        return bool(task.deadline) and self.engine.clock.time() >= task.deadline

    def on_wait_for_result(self, task: Task, response: pb.InvokeWaitForMethodResponse) -> None:
        """``wait_for`` returned: store its Wait (or go straight to ``execute``)."""

        def commit(db: sqlite3.Connection, flow: FlowRow, step: StepRow, effects: Effects) -> None:
            has_wait = response.HasField("waiting_condition")
            reason = waits.validate(response.waiting_condition) if has_wait else None
            if reason is not None:
                raise ValueError(reason)
            published = self._apply_writes(db, step, response, effects)
            history.wait_for_completed(db, step, response, flow.config)
            now = self.engine.now_ms()
            if has_wait:
                self._start_wait(db, flow, step, response.waiting_condition, now, effects)
            else:
                self.engine.rows.update_step(db, step.uid, step.seid, **_method_reset(now, None))
                self._pending_execute(db, step, effects)
            if published:
                self.complete_waits(db, step.uid, effects)

        self._commit_result(task, "wait_for", commit)

    def _start_wait(self, db: sqlite3.Connection, flow: FlowRow, step: StepRow, waiting: pb.WaitingCondition,
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

    def on_execute_result(self, task: Task, response: pb.InvokeExecuteMethodResponse) -> None:
        """``execute`` returned its decision: apply writes and decision atomically."""

        def commit(db: sqlite3.Connection, flow: FlowRow, step: StepRow, effects: Effects) -> None:
            published = self._apply_writes(db, step, response, effects)
            history.execute_completed(db, step, response, flow.config)
            self.engine.rows.update_step(db, step.uid, step.seid, phase="done")
            self.flows.apply_decision(db, flow, step, response.step_decision, effects)
            if published:
                self.complete_waits(db, step.uid, effects)

        self._commit_result(task, "execute", commit)

    def _commit_result(self, task: Task, method: str,
                       commit: Callable[[sqlite3.Connection, FlowRow, StepRow, Effects], None]) -> None:
        """Commit a method's result with ``commit`` (skipped when the attempt is no longer current),
        then settle the task and apply the effects. An overdue result is a method timeout; one that
        ``commit`` finds invalid (``ValueError``, ``ServiceError``) fails the attempt and commits nothing."""
        self.engine.assert_locked()
        if self._overdue(task):
            self.method_timeout(task)
            return
        effects = Effects(touched={task.uid})
        try:
            with self.engine.store.transaction() as db:
                current = self._current(task)
                if current is not None:
                    commit(db, *current, effects)
        except (ValueError, ServiceError) as bad:
            self.on_failure(task, f"invalid {method} result: {bad}", "dex.InvalidStepResult", 0)
            return
        self.snapshots.pop((task.uid, task.seid), None)
        self.settle(task)
        self.engine.apply(effects)

    def on_failure(self, task: Task, detail: str, error_type: str, retry_after: int, *,
                   cancel: bool = False, worker_error: pb.WorkerErrorResponse | None = None) -> None:
        """An attempt failed: retry by policy, else take the failure route or fail the Flow; the task
        is settled (``cancel``: stopped, its Worker told) once that is committed.

        ASYNC durability (Dex's local phase): a failed local attempt is retried at once, and the
        first regular attempt after the local phase (the fallback) also starts at once; later
        regular retries continue the back-off at the cumulative attempt number. Local and regular
        attempts share the policy's attempt and duration limits. ``worker_error`` is the Worker's
        own report (its stack trace is kept with the failure)."""
        self.engine.assert_locked()
        effects = Effects(touched={task.uid})
        retried = False
        with self.engine.store.transaction() as db:
            current = self._current(task)
            if current is not None:
                failure = history.failure(current[1].attempt, detail, error_type, worker_error)
                retried = self._record_failure(db, task, current, failure, retry_after, effects)
        self._keep_snapshot(task, retried)
        self.settle(task, cancel=cancel)
        self.engine.apply(effects)

    def _keep_snapshot(self, task: Task, retried: bool) -> None:
        """After the failure's commit: keep the attempt's snapshot for the retry, or drop it."""
        key = (task.uid, task.seid)
        request = task.message.wait_for if task.kind == "wait_for" else task.message.execute
        if not retried:
            self.snapshots.pop(key, None)
        elif key not in self.snapshots and task.message.WhichOneof("request") == task.kind:
            self.snapshots[key] = (task.kind, request.SerializeToString())  # its context is replaced

    def _record_failure(self, db: sqlite3.Connection, task: Task, current: tuple[FlowRow, StepRow],
                        failure: pb.StepMethodFailure, retry_after: int, effects: Effects) -> bool:
        """Record the failed attempt; True when the method retries."""
        flow, step = current
        detail, error_type = failure.backend_error, failure.details.original_worker_error_type
        method: policy.Method = "wait_for" if task.kind == "wait_for" else "execute"
        now = self.engine.clock.time()
        second = self.engine.timing.policy_second  # the policy counts in seconds of this length
        elapsed = (now - step.first_attempt_ms / 1000) / second
        delay = policy.next_retry_delay(policy.retry_policy(step.options, method), step.attempt,
                                        0.0, elapsed, retry_after)
        if delay is not None and not retry_after and task.local_phase:
            delay = 0.0  # a local attempt's retry, or the regular fallback, starts at once
        recovery = pb.RecoveryErrorInfo(detail=detail, error_type=error_type)
        if delay is not None:
            self.engine.rows.update_step(db, step.uid, step.seid, attempt=step.attempt + 1,
                                         not_before_ms=int((now + delay * second) * 1000), output_seen=False,
                                         last_failure=failure)
            effects.launches.append((step.uid, step.seid))
            return True
        history.method_failed(db, step, method, failure, flow.config)
        if method == "wait_for" and step.options.wait_for_failure_policy == pb.WAIT_FOR_METHOD_FAILURE_POLICY_PROCEED_ON_FAILURE:
            results = pb.ConditionResults(wait_for_failed=True)
            self.engine.rows.update_step(db, step.uid, step.seid, **_method_reset(int(now * 1000), results, recovery))
            self._pending_execute(db, step, effects)
        elif (method == "execute" and step.options.execute_failure_policy
              == pb.EXECUTE_METHOD_FAILURE_POLICY_PROCEED_TO_CONFIGURED_STEP
              and step.options.execute_failure_proceed_step_type):
            self.engine.rows.update_step(db, step.uid, step.seid, phase="failed")
            movement = pb.StepMovement(step_type=step.options.execute_failure_proceed_step_type,
                                       step_input=step.input,
                                       step_options=step.options.execute_failure_proceed_step_options)
            create_step(self.engine, db, flow, movement, step.seid, effects, recovery=recovery)
        else:
            self.engine.rows.update_step(db, step.uid, step.seid, phase="failed")
            self.flows.close(db, flow, pb.FLOW_STATUS_FAILED, pb.FLOW_ERROR_TYPE_WORKER_API_FAIL, detail, effects)
        return False

    def _pending_execute(self, db: sqlite3.Connection, step: StepRow, effects: Effects) -> None:
        moved = self.engine.step(step.uid, step.seid)
        flow = self.engine.flow(step.uid)
        assert moved is not None and flow is not None
        history.method_pending(db, moved, "execute", flow.config)
        effects.launches.append((step.uid, step.seid))

    def _apply_writes(self, db: sqlite3.Connection, step: StepRow,
                      response: pb.InvokeWaitForMethodResponse | pb.InvokeExecuteMethodResponse,
                      effects: Effects) -> bool:
        """Apply a Step method's Attribute, Step-local and Channel writes; whether it published (then
        the caller completes the Waits that satisfied, in the same transaction: ``complete_waits``)."""
        state.upsert_attributes(db, step.uid, response.upsert_attributes)
        effects.written.update((step.uid, write.key) for write in response.upsert_attributes)
        if response.upsert_step_exe_locals:
            merged = {kv.key: kv for kv in step.locals}
            for kv in response.upsert_step_exe_locals:
                merged[kv.key] = kv
            self.engine.rows.update_step(db, step.uid, step.seid, locals=list(merged.values()))
        if response.publish_to_channel:
            state.publish(db, step.uid, response.publish_to_channel)
        if response.delete_from_channel:
            state.delete_messages(db, step.uid, response.delete_from_channel)
        return bool(response.publish_to_channel)

    # ---- Waits
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
        self.engine.rows.update_step(db, uid, seid, **_method_reset(self.engine.now_ms(), results))
        self._pending_execute(db, step, effects)
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
            self.engine.apply(effects)

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
        self.engine.apply(effects)
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
