"""Dex history, as an export holds it, of a session the pure scenarios drive: each Step method or RPC
is one ``HistoryStep`` whose writes are what its inputs' transitions staged, in commit order, with
the invocation record of its clocks. ``reconstruct`` must rebuild inputs that reproduce the state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pyrsistent import pvector

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.offline.export_document import (
    METHOD_EXECUTE,
    METHOD_RPC,
    OUTCOME_COMPLETED,
    OUTCOME_FAILED,
    ChannelMessages,
    HistoryStep,
    StepFailure,
    StoredValue,
    SubFlowOutcome,
)
from dex_agents.pure.machine.invocation_record import InvocationRecord, clock_of, invocation_record
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.machine.reducers import reduce
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import SessionInput
from dex_agents.pure.offline.stored_values import freeze, stored_publishes, stored_writes
from dex_agents.pure.machine.transition import StepTransition, RpcTransition
from tests.pure.scenario_support import T0_MS, Session


@dataclass
class HistoryRecorder:
    """Drives ``session`` and records one history step per Step method or RPC it runs."""

    session: Session
    steps: list[HistoryStep] = field(default_factory=list)
    _state: SessionState = field(default_factory=SessionState.initial)
    _seen: int = 0

    def step(self, step_type: str, dex_input: object, run: Callable[[], object], *, method: str = METHOD_EXECUTE,
             consumed: Sequence[ChannelMessages] = (), timer_fired: bool = False, recorded: bool = True,
             from_step: str | None = None, sub_flows: Sequence[SubFlowOutcome] = ()) -> HistoryStep:
        """Run one Step method (``run`` feeds its inputs to the session) and record it (``sub_flows``:
        the SubFlow results its wait delivered)."""
        run()
        step = self._record(step_type, None, freeze(dex_input), method, consumed, timer_fired, recorded, from_step)
        if sub_flows:
            step = replace(step, sub_flows=pvector(sub_flows))
            self.steps[-1] = step
        return step

    def rpc(self, rpc_name: str, dex_input: object, run: Callable[[], object], *, recorded: bool = True) -> HistoryStep:
        run()
        return self._record(None, rpc_name, freeze(dex_input), METHOD_RPC, (), False, recorded, None)

    def failed(self, step_type: str, step_execution_id: str, detail: str, error_type: str = "RuntimeError") -> None:
        """A Step method that failed for good (it committed nothing)."""
        self.steps.append(HistoryStep(
            event_id=len(self.steps) + 1, time=format_instant(T0_MS), method=METHOD_EXECUTE, outcome=OUTCOME_FAILED,
            step_type=step_type, step_execution_id=step_execution_id, from_step_execution_id=None, attempt=3,
            rpc_name=None, input=None, output=None, consumed=pvector(), timer_fired=False, writes=pvector(),
            published=pvector(), next_steps=pvector(),
            failure=StepFailure(detail=detail, error_type=error_type), recorded=None))

    def _record(self, step_type: str | None, rpc_name: str | None, dex_input: JsonValue, method: str,
                consumed: Sequence[ChannelMessages], timer_fired: bool, recorded: bool,
                from_step: str | None) -> HistoryStep:
        inputs: list[SessionInput] = self.session.inputs[self._seen:]
        self._seen = len(self.session.inputs)
        effects: list[object] = []
        for session_input in inputs:
            transition = reduce(self._state, self.session.config, session_input)
            assert not transition.fails_attempt, f"a recorded step must commit: {transition}"
            self._state = transition.state
            if isinstance(transition, StepTransition | RpcTransition):
                effects.extend(transition.effects)
        writes = [StoredValue(name=name, instance=instance, value=value)
                  for (name, instance), value in stored_writes(effects).items()]
        published = [ChannelMessages(name=name, instance=instance, values=pvector(values))
                     for (name, instance), values in stored_publishes(effects).items()]
        clocks = [clock for clock in map(clock_of, inputs) if clock is not None]
        record: InvocationRecord | None = invocation_record(clocks, self.session.config) if recorded and clocks else None
        first = inputs[0] if inputs else None
        invocation = getattr(first, "invocation", None)
        step = HistoryStep(
            event_id=len(self.steps) + 1, time=format_instant(T0_MS), method=method, outcome=OUTCOME_COMPLETED,
            step_type=step_type, step_execution_id=None if invocation is None else invocation.step_execution_id,
            from_step_execution_id=from_step, attempt=1 if invocation is None else invocation.attempt,
            rpc_name=rpc_name, input=dex_input, output=None, consumed=pvector(consumed), timer_fired=timer_fired,
            writes=pvector(writes), published=pvector(published), next_steps=pvector(), failure=None,
            recorded=record)
        self.steps.append(step)
        return step


__all__ = ["HistoryRecorder"]
