"""Outcomes of Step methods: results, failures and retries (the Waits they store are ``step_waits``).

Each outcome commits in one transaction: the handler's writes (Attributes, Step-execution locals,
Channel publishes and deletes), the Step's new phase, the decision's new Steps or the Flow's close,
the Waits its publishes satisfied, and the history events. Only after that commit is the task
settled (forgotten, its Attribute locks freed); the effects are handed to the core's loop
(``EngineCore.after_commit``), never performed here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


from dex.dexpb import dex_pb2 as pb

from . import history, policy, waits
from .repository import state
from .core import EngineCore
from .errors import ServiceError
from .flows import FlowOps
from .rows import Effects, FlowRow, StepRow
from .step_creation import create_step
from .step_waits import StepWaits, method_reset, pending_execute
from .tasks import Task


class Outcomes:
    """Results and failures of Step methods (engine lock held); their Waits go to ``waits``."""

    def __init__(self, engine: EngineCore, flows: FlowOps, waits: StepWaits) -> None:
        self.engine = engine
        self.flows = flows
        self.waits = waits
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
                self.waits.start(db, flow, step, response.waiting_condition, now, effects)
            else:
                self.engine.rows.update_step(db, step.uid, step.seid, **method_reset(now, None))
                pending_execute(self.engine, db, step, effects)
            if published:
                self.waits.complete_waits(db, step.uid, effects)

        self._commit_result(task, "wait_for", commit)

    def on_execute_result(self, task: Task, response: pb.InvokeExecuteMethodResponse) -> None:
        """``execute`` returned its decision: apply writes and decision atomically."""

        def commit(db: sqlite3.Connection, flow: FlowRow, step: StepRow, effects: Effects) -> None:
            published = self._apply_writes(db, step, response, effects)
            history.execute_completed(db, step, response, flow.config)
            self.engine.rows.update_step(db, step.uid, step.seid, phase="done")
            self.flows.apply_decision(db, flow, step, response.step_decision, effects)
            if published:
                self.waits.complete_waits(db, step.uid, effects)

        self._commit_result(task, "execute", commit)

    def _commit_result(self, task: Task, method: str,
                       commit: Callable[[sqlite3.Connection, FlowRow, StepRow, Effects], None]) -> None:
        """Commit a method's result with ``commit`` (skipped when the attempt is no longer current),
        then settle the task and hand its effects to the loop. An overdue result is a method timeout; one that
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
        self.engine.after_commit(effects)

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
        self.engine.after_commit(effects)

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
            self.engine.rows.update_step(db, step.uid, step.seid, **method_reset(int(now * 1000), results, recovery))
            pending_execute(self.engine, db, step, effects)
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

