"""Flow runs: start (id reuse, already-started, config override), decisions, close, stop.

A positive Flow timeout closes the run (``FAIL``: failed with FLOW_TIMEOUT, ``CANCEL``: canceled) or,
with ``HANDLER``, runs ``Flow.handle_timeout`` as Step ``sys:timeout_handler-1`` after the timeout.

Close semantics: ``force_complete`` and ``force_fail`` close at once and cancel the other active
Steps; ``graceful_complete`` marks the run closing and completes it when no Step is active;
``dead_end`` ends only the current branch (a run with no active Step stays open). A completing
decision with an output adds a ``StepCompletionOutput`` to the run's result.
"""

from __future__ import annotations

import sqlite3
import uuid

import grpc

from dex.dexpb import dex_pb2 as pb

from . import history
from .repository import runs, state
from .repository import steps as stored_steps
from .core import EngineCore
from .errors import ServiceError, flow_not_found, invalid
from .rows import Effects, FlowRow, StepRow
from .step_creation import TIMEOUT_HANDLER, create_step, create_timeout_handler

_STOP_STATUS = {
    pb.STOP_TYPE_UNSPECIFIED: pb.FLOW_STATUS_CANCELED,
    pb.STOP_TYPE_CANCEL: pb.FLOW_STATUS_CANCELED,
    pb.STOP_TYPE_TERMINATE: pb.FLOW_STATUS_TERMINATED,
    pb.STOP_TYPE_FAIL: pb.FLOW_STATUS_FAILED,
}


def already_started(flow_id: str) -> ServiceError:
    """ALREADY_EXISTS + FLOW_ALREADY_STARTED (``FlowAlreadyStartedError`` in the SDK)."""
    return ServiceError(grpc.StatusCode.ALREADY_EXISTS, f"flow already started: {flow_id}",
                        pb.ERROR_SUB_STATUS_FLOW_ALREADY_STARTED)


class FlowOps:
    """Flow-run operations (engine lock held)."""

    def __init__(self, engine: EngineCore) -> None:
        self.engine = engine

    def start(self, request: pb.StartFlowRequest) -> str:
        """Start a run; returns its run id (or the existing one when reuse allows)."""
        self.engine.assert_locked()
        if not request.flow_id or not request.flow_type:
            raise invalid("flow_id and flow_type are required")
        if request.start_step_type and not request.HasField("step_input"):
            raise invalid("a start Step requires step_input")
        options = request.flow_start_options
        state.validate_writes(options.attributes)
        config = options.flow_config_override
        if config.continue_as_new_threshold < 0 or config.continue_as_new_page_size_in_bytes < 0:
            raise invalid("continue_as_new_threshold and continue_as_new_page_size_in_bytes must not be negative")
        existing = self.engine.current_flow(request.flow_id)
        effects = Effects()
        with self.engine.store.transaction() as db:
            if existing is not None:
                if request.request_id and existing.request_id == request.request_id:
                    return existing.run_id
                reuse = options.id_reuse_policy
                if existing.running:
                    if reuse == pb.ID_REUSE_POLICY_ALLOW_TERMINATE_IF_RUNNING:
                        self.close(db, existing, pb.FLOW_STATUS_TERMINATED, pb.FLOW_ERROR_TYPE_UNSPECIFIED, "", effects)
                    elif options.flow_already_started_options.ignore_already_started_error:
                        return existing.run_id
                    else:
                        raise already_started(request.flow_id)
                elif reuse in (pb.ID_REUSE_POLICY_UNSPECIFIED, pb.ID_REUSE_POLICY_DISALLOW_REUSE) or (
                    reuse == pb.ID_REUSE_POLICY_ALLOW_IF_PREVIOUS_EXISTS_ABNORMALLY
                    and existing.status == pb.FLOW_STATUS_COMPLETED
                ):
                    if options.flow_already_started_options.ignore_already_started_error:
                        return existing.run_id
                    raise already_started(request.flow_id)
            run_id, _ = self.insert_run(db, request, effects)
        self.engine.apply(effects)
        return run_id

    def insert_run(self, db: sqlite3.Connection, request: pb.StartFlowRequest, effects: Effects, *,
                   parent_flow_id: str = "") -> tuple[str, int]:
        """Insert a new run for ``request`` (the caller settled ID reuse) with its initial Attributes,
        history, timeout handler and start Step; its Flow timeout is armed by the after-commit
        ``effects``. Returns the run id and uid."""
        self.engine.assert_locked()
        options = request.flow_start_options
        state.validate_writes(options.attributes)
        run_id = str(uuid.uuid4())
        now = self.engine.now_ms()
        timeout_ms = now + request.flow_timeout_seconds * 1000 if request.flow_timeout_seconds > 0 else 0
        uid = runs.insert_started(self.engine.rows, db, request, run_id, now, timeout_ms, parent_flow_id)
        state.upsert_attributes(db, uid, options.attributes)
        flow = self.engine.flow(uid)
        assert flow is not None
        state.record(db, uid, pb.FlowHistoryEvent(flow_started_or_continued=pb.FlowStartedOrContinuedHistoryEvent(
            flow_execution_id=pb.FlowExecutionID(flow_id=flow.flow_id, run_id=run_id),
            flow_type=flow.flow_type, flow_config=options.flow_config_override,
            flow_timeout_policy=request.flow_timeout_policy,
            initial_start=pb.FlowInitialStart(
                start_step_type=request.start_step_type, step_input=request.step_input,
                step_options=request.step_options,
                initial_attributes=[pb.KV(key=w.key, value=w.value) for w in options.attributes
                                    if not w.is_hard_delete_on_null]),
        )))
        if timeout_ms and request.flow_timeout_policy == pb.FLOW_TIMEOUT_POLICY_HANDLER:
            create_timeout_handler(self.engine, db, flow, request.flow_timeout_seconds,
                                   options.timeout_handler_options, effects)
        elif timeout_ms:
            effects.flow_timeouts.append((uid, timeout_ms, request.flow_timeout_policy))
        if request.start_step_type:
            movement = pb.StepMovement(step_type=request.start_step_type, step_input=request.step_input,
                                       step_options=request.step_options)
            create_step(self.engine, db, flow, movement, "", effects,
                        delay_ms=max(options.flow_start_delay_seconds, 0) * 1000)
        return run_id, uid

    def arm_timeout(self, uid: int, timeout_ms: int, timeout_policy: int) -> None:
        """Close the run when its Flow timeout passes (CANCEL cancels, anything else fails).

        A failed run's error message is Dex's: ``Flow timed out after <N> seconds``, N the run's
        Flow timeout; a canceled run has none (as for any cancel, the reason is not an error).
        """
        self.engine.assert_locked()
        def expire() -> None:
            flow = self.engine.flow(uid)
            if flow is None or not flow.running:
                return
            message = f"Flow timed out after {round((timeout_ms - flow.start_ms) / 1000)} seconds"
            effects = Effects()
            with self.engine.store.transaction() as db:
                if timeout_policy == pb.FLOW_TIMEOUT_POLICY_CANCEL:
                    self.close(db, flow, pb.FLOW_STATUS_CANCELED, pb.FLOW_ERROR_TYPE_UNSPECIFIED, "", effects)
                else:
                    self.close(db, flow, pb.FLOW_STATUS_FAILED, pb.FLOW_ERROR_TYPE_FLOW_TIMEOUT, message, effects)
            self.engine.apply(effects)

        self.engine.scheduler.call_at(timeout_ms / 1000, expire)

    def stop(self, request: pb.StopFlowRequest) -> None:
        """Cancel, terminate or fail the active run.

        As in Dex, a canceled or terminated run has no error message; a failed one carries the reason.
        """
        self.engine.assert_locked()
        if not request.flow_id:
            raise invalid("flow_id is required")
        flow = self.engine.current_flow(request.flow_id, request.run_id)
        if flow is None or not flow.running:
            raise flow_not_found(request.flow_id, f"no active run of flow {request.flow_id}")
        status = _STOP_STATUS.get(request.stop_type)
        if status is None:
            raise invalid(f"unknown stop type {request.stop_type}")
        error_type = pb.FLOW_ERROR_TYPE_CLIENT_API_FAILING_FLOW if status == pb.FLOW_STATUS_FAILED else pb.FLOW_ERROR_TYPE_UNSPECIFIED
        effects = Effects()
        with self.engine.store.transaction() as db:
            message = request.reason if status == pb.FLOW_STATUS_FAILED else ""
            self.close(db, flow, status, error_type, message, effects)
        self.engine.apply(effects)

    def set_attributes(self, request: pb.SetAttributesRequest) -> None:
        """Write Attributes into the active run from outside (Dex's ``SetAttributes``): applied
        in order like a Step's writes (a null value deletes), recorded in history, and seen by the
        next Step method or RPC; Attribute locks are not taken."""
        self.engine.assert_locked()
        if not request.flow_id:
            raise invalid("flow_id is required")
        state.validate_writes(request.attributes)
        flow = self.engine.current_flow(request.flow_id, request.run_id)
        if flow is None or not flow.running:
            raise flow_not_found(request.flow_id, f"no active run of flow {request.flow_id}")
        effects = Effects(touched={flow.uid})
        with self.engine.store.transaction() as db:
            state.upsert_attributes(db, flow.uid, request.attributes)
            history.attributes_set(db, flow.uid, request.attributes)
        effects.written.update((flow.uid, write.key) for write in request.attributes)
        self.engine.apply(effects)

    def apply_decision(self, db: sqlite3.Connection, flow: FlowRow, step: StepRow, decision: pb.StepDecision,
                       effects: Effects) -> None:
        """Apply one execute decision (the Step row is already ``done``)."""
        self.engine.assert_locked()
        for step_type in decision.cancel_step_types:
            self.cancel_steps(db, flow.uid, step_type, None, effects)
        for step_type in decision.cancel_sibling_step_types:
            self.cancel_steps(db, flow.uid, step_type, step.from_seid, effects)
        kind = decision.close_decision.close_decision_type if decision.HasField("close_decision") else pb.CLOSE_DECISION_TYPE_UNSPECIFIED
        close = decision.close_decision
        if kind == pb.CLOSE_DECISION_TYPE_FORCE_COMPLETE or (
                kind == pb.CLOSE_DECISION_TYPE_FORCE_COMPLETE_ON_CHANNELS_EMPTY
                and not any(state.channel_sizes(db, flow.uid, close.conditional_channel_names).values())):
            self._add_output(db, flow, step, close)
            self.close(db, flow, pb.FLOW_STATUS_COMPLETED, pb.FLOW_ERROR_TYPE_UNSPECIFIED, "", effects)
            return
        elif kind == pb.CLOSE_DECISION_TYPE_FORCE_FAIL:
            reason = close.close_input.string_value if close.close_input.HasField("string_value") else str(close.close_input)
            self.close(db, flow, pb.FLOW_STATUS_FAILED, pb.FLOW_ERROR_TYPE_STEP_DECISION_FAILING_FLOW, reason, effects)
            return
        elif kind == pb.CLOSE_DECISION_TYPE_GRACEFUL_COMPLETE:
            self._add_output(db, flow, step, close)
            self.engine.rows.update_flow(db, flow.uid, closing=1)
        for movement in decision.next_steps:
            create_step(self.engine, db, flow, movement, step.seid, effects)
        if flow.closing or kind == pb.CLOSE_DECISION_TYPE_GRACEFUL_COMPLETE:
            self.after_step_finished(db, flow.uid, effects)

    def _add_output(self, db: sqlite3.Connection, flow: FlowRow, step: StepRow, close: pb.CloseDecision) -> None:
        if not close.HasField("close_input"):
            return
        result = self.result(flow.uid)
        result.results.add(completed_step_type=step.step_type, completed_step_execution_id=step.seid,
                           completed_step_output=close.close_input)
        self.engine.rows.update_flow(db, flow.uid, results=result.SerializeToString())

    def after_step_finished(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Complete a gracefully closing run once no Step is active."""
        self.engine.assert_locked()
        flow = self.engine.flow(uid)
        if flow is None or not flow.running or not flow.closing:
            return
        if not runs.count_active_steps(db, uid, TIMEOUT_HANDLER):
            self.close(db, flow, pb.FLOW_STATUS_COMPLETED, pb.FLOW_ERROR_TYPE_UNSPECIFIED, "", effects)

    def cancel_steps(self, db: sqlite3.Connection, uid: int, step_type: str, from_seid: str | None, effects: Effects) -> None:
        """Cancel active executions of a Step type (siblings only when ``from_seid`` is given)."""
        self.engine.assert_locked()
        for step in self.engine.active_steps(uid):
            if step.step_type == step_type and (from_seid is None or step.from_seid == from_seid):
                self.engine.rows.update_step(db, uid, step.seid, phase="canceled")
                stored_steps.delete_timers(db, uid, step.seid)
                effects.cancels.append((uid, step.seid))

    def close(self, db: sqlite3.Connection, flow: FlowRow, status: int, error_type: int, message: str,
              effects: Effects) -> None:
        """Close the run: status, cancel active Steps and Timers, record ``flow_closed``."""
        self.engine.assert_locked()
        for step in self.engine.active_steps(flow.uid):
            effects.cancels.append((flow.uid, step.seid))
        self.engine.rows.cancel_active_steps(db, flow.uid)
        stored_steps.delete_timers(db, flow.uid)
        self.engine.rows.update_flow(db, flow.uid, status=status, close_ms=self.engine.now_ms(), error_type=error_type,
                                     error_message=message)
        result = self.result(flow.uid)
        state.record(db, flow.uid, pb.FlowHistoryEvent(flow_closed=pb.FlowClosedHistoryEvent(
            flow_status=status, results=result.results, error_type=error_type, error_message=message)))  # type: ignore[arg-type]
        effects.closed.add(flow.uid)
        effects.wait_checks.update(state.report_sub_flow_result(db, flow.uid, result))

    def result(self, uid: int) -> pb.FlowResult:
        """The run's FlowResult (status, outputs, error)."""
        return self.engine.flow_result(uid)
