"""``GetFlowState``: a run's live interpreter state, as Dex reports it.

The answer holds the run's Flow config, every Attribute (singletons and map instances, by key),
the active Step executions (sorted by Step type and execution number; ``WAITING`` while a Wait is
stored, ``ACTIVE`` while a method is pending, running or retrying), each with its movement (type,
input, options), lineage, Step-execution locals, stored Wait with its Timers and the conditions
already completed (fired or skipped Timers, terminal SubFlow results), and the current method's last
failed attempt while it retries; the pending Channel messages by Channel; and the outputs of the
Steps that completed the run so far. The engine's own Flow-timeout handler
(``sys:timeout_handler-1``) is not a Step of the application and is not listed. A closed run
answers the same way, with no active Step (Dex rebuilds a closed run's state from history; the
engine keeps it).
"""

from __future__ import annotations

from dex.dexpb import dex_pb2 as pb

from .repository import state
from .repository import steps as stored_steps
from .core import EngineCore
from .errors import flow_not_found, invalid
from .rows import StepRow
from .step_creation import TIMEOUT_HANDLER

_DONE_TIMERS = (pb.INTERNAL_TIMER_STATUS_FIRED, pb.INTERNAL_TIMER_STATUS_SKIPPED)


class FlowStateQuery:
    """Builds GetFlowState answers (engine lock held)."""

    def __init__(self, engine: EngineCore) -> None:
        self.engine = engine

    def get(self, request: pb.GetFlowStateRequest) -> pb.GetFlowStateResponse:
        self.engine.assert_locked()
        if not request.flow_id:
            raise invalid("flow_id is required")
        flow = self.engine.current_flow(request.flow_id, request.run_id)
        if flow is None:
            raise flow_not_found(request.flow_id)
        db = self.engine.store.db
        response = pb.GetFlowStateResponse(flow_config=flow.config)
        response.attributes.extend(state.all_attributes(db, flow.uid))
        steps = sorted((s for s in self.engine.active_steps(flow.uid) if s.step_type != TIMEOUT_HANDLER),
                       key=lambda s: (s.step_type, s.n))
        response.active_step_executions.extend(self.step_state(step) for step in steps)
        for name, values in state.pending_messages(db, flow.uid).items():
            response.pending_channel_messages[name].CopyFrom(values)
        response.completed_steps.extend(self.engine.flow_result(flow.uid).results)
        return response

    def step_state(self, step: StepRow) -> pb.ActiveStepExecutionState:
        """One active Step execution as Dex reports it (also what a continue-as-new carries)."""
        db = self.engine.store.db
        out = pb.ActiveStepExecutionState(
            step_execution_id=step.seid, from_step_execution_id=step.from_seid, step_type=step.step_type,
            phase=pb.ACTIVE_STEP_PHASE_WAITING if step.phase == "waiting" else pb.ACTIVE_STEP_PHASE_ACTIVE,
            movement=pb.StepMovement(step_type=step.step_type, step_input=step.input, step_options=step.options),
            step_execution_locals=step.locals)
        if step.phase == "waiting" and step.waiting is not None:
            waiting = step.waiting
            out.waiting_condition.CopyFrom(pb.WaitingConditionState(
                waiting_condition_type=waiting.waiting_condition_type, timer_conditions=waiting.timer_conditions,
                channel_conditions=waiting.channel_conditions, condition_combinations=waiting.condition_combinations,
                sub_flow_conditions=[pb.SubFlowConditionState(condition_id=c.condition_id)
                                     for c in waiting.sub_flow_conditions]))
            for idx, condition_id, fire_ms, status in stored_steps.timers(db, step.uid, step.seid):
                out.timers.add(condition_id=condition_id, firing_unix_timestamp_seconds=fire_ms // 1000,
                               status=status)
                if status in _DONE_TIMERS:
                    out.completed_conditions.completed_timer_conditions[idx] = status  # type: ignore[assignment]
            for idx, result in state.sub_flow_results(db, step.uid, step.seid).items():
                out.completed_conditions.completed_sub_flow_results[idx].CopyFrom(result)
        if step.last_failure is not None:
            out.last_failure_info.CopyFrom(step.last_failure)
        return out
