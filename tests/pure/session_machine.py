"""The session state machine's bookkeeping: committing transitions the way the shell does.

The invariants are in ``machine_invariants.py``, the Step runners in ``machine_steps.py`` and the rules in
``test_machine.py``.

The machine acts as the shell would. It keeps Dex's side in a ``SessionWorld`` (changed only by the reducers' effects, with every
value stored through the wire codec) and the Steps Dex would run: it follows the ``GoToSteps`` it
receives, runs a Step only when its wait is satisfied, hands each invocation only what its Step options
load, performs tools, crashes attempts, and routes exhausted attempts to the failure Steps. Users send
messages (also during turns), answer approvals (also late), and the clock moves.

A legal input must never be rejected. After every step the invariants below hold; at the end,
replaying the recorded inputs reproduces the world's state and snapshot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from hypothesis.stateful import RuleBasedStateMachine
from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.effects import (
    AnswerRpc,
    DeadEnd,
    DeleteMapInstance,
    Effect,
    ExecuteDeferredToolCall,
    GoToSteps,
    WriteEvent,
)
from dex_agents.pure.flow_shape import rpc_of
from dex_agents.pure.flow_rows import ForInputCountMessages, ForOneMessage, ForResolutionOrDeadline, NoWait
from dex_agents.pure.flow_table import RPC_TABLE, STEP_TABLE
from dex_agents.pure.keys import message_sequence_key
from dex_agents.pure.persistence import AGENT_TOOL_CALLS, MapName, StepType
from dex_agents.pure.reducers import ApprovalWait, SkipWait, WaitForResolution, approval_wait, reduce
from dex_agents.pure.state import SessionConfig, SessionState
from dex_agents.pure.step_inputs import Invocation, RpcCall, SessionInput
from dex_agents.pure.step_options import StepMovement, StepOptionsSpec
from dex_agents.pure.transition import Transition
from dex_agents.pure.usage import add_agent_usage
from dex_agents.pure.values import AgentStatus, AgentToolCall, AgentUsage, ToolEffect
from tests.pure.golden_fixtures import SESSION_EVENT_PAYLOAD_KEYS
from tests.pure.session_world import SessionWorld
from tests.pure.spec_tables import check_movement_against_spec

FLOW_ID = "session-machine"
T0_MS = 1_767_323_045_000
MAIN_LINE = frozenset({StepType.AWAIT_USER_MESSAGE, StepType.RUN_MODEL, StepType.RECORD_TURN_FAILURE, StepType.RESUME_TURN})
SINGLE_ATTEMPT_EFFECTS = frozenset({ToolEffect.NON_IDEMPOTENT_WRITE, ToolEffect.UNCLASSIFIED})


def rpc_loads(call: RpcCall) -> StepOptionsSpec:
    """What the RPC that ``call`` comes from loads (its row of the flow table), as options ``load`` reads."""
    return StepOptionsSpec(execute_load_attribute_maps=pvector(RPC_TABLE[rpc_of(call)].access.maps))


@dataclass
class PendingStep:
    """A Step Dex would run: the movement that started it, its attempt, and (approvals) its armed wait."""

    execution: int
    movement: StepMovement
    attempt: int = 1
    wait: ApprovalWait | None = None
    timer_due_ms: int | None = None

    @property
    def step_type(self) -> StepType:
        return self.movement.step_type

    @property
    def tool_call_id(self) -> str:
        assert isinstance(self.movement.input, str)
        return self.movement.input


class SessionMachineBase(RuleBasedStateMachine):
    """Bookkeeping of the machine: committing transitions the way the shell does, with checks."""

    def __init__(self) -> None:
        super().__init__()
        self.world = SessionWorld()
        self.config = SessionConfig()
        self.now_ms = T0_MS
        self.pending: list[PendingStep] = []
        self.inputs: list[SessionInput] = []
        self.shadow = SessionState.initial()
        self.executions = 0
        self.recorded_usage = AgentUsage()
        self.performed: Counter[tuple[str, str]] = Counter()
        self.single_attempt_calls: set[tuple[str, str]] = set()
        self.last_run_state: str | None = None

    # -- reducing and committing ---------------------------------------------------------------

    def reduce_checked(self, loaded: SessionState, session_input: SessionInput) -> Transition:
        """``reduce`` with the purity checks: inputs unchanged, a rejection changes nothing."""
        state_before, input_before = repr(loaded), repr(session_input)
        result = reduce(loaded, self.config, session_input)
        assert repr(loaded) == state_before, "reduce mutated the state it was given"
        assert repr(session_input) == input_before, "reduce mutated its input"
        if result.is_rejection:
            assert result.state == loaded, "a rejection changed the state"
        return result

    def commit(
        self,
        inputs: list[SessionInput],
        result: Transition,
        loaded_options: StepOptionsSpec,
        invocation: Invocation | None,
        prefix: Sequence[Effect] = (),
    ) -> list[StepMovement]:
        """Apply a committed transition to the world (as the shell does) and check what it left.

        ``prefix``: effects of an earlier transition of the same attempt (a tool Step's start).
        """
        assert not result.fails_attempt, f"a legal input failed the attempt: {result.effects[-1]}"
        effects = pvector([*prefix, *result.effects])
        self._check_shape(effects, invocation)
        for effect in effects:
            if isinstance(effect, DeleteMapInstance) and effect.map == AGENT_TOOL_CALLS:
                record = self.world.tool_calls[effect.key]
                assert record.status.is_final, f"an open record was dropped: {record}"
                completions = self.world.completions_by_call[(record.turn_id, record.tool_call_id)]
                assert completions == 1, f"{record.tool_call_id} published {completions} ToolCallCompleted"
        movements = self.world.apply(effects)
        self._check_state_matches_world(result.state, loaded_options)
        for session_input in inputs:
            self.inputs.append(session_input)
            self.shadow = reduce(self.shadow, self.config, session_input).state
        for movement in movements:
            self.schedule(movement)
        return movements

    def keep_failed_attempt(self, inputs: list[SessionInput], result: Transition) -> None:
        """An attempt failed after writing events: the Stream keeps them, nothing else is committed; the
        inputs are recorded (replay folds them to no change)."""
        assert result.fails_attempt and not result.is_rejection
        self.world.keep_events(result.effects)
        for session_input in inputs:
            self.inputs.append(session_input)
            self.shadow = reduce(self.shadow, self.config, session_input).state

    def schedule(self, movement: StepMovement) -> None:
        check_movement_against_spec(movement)
        self.executions += 1
        step = PendingStep(execution=self.executions, movement=movement)
        if isinstance(STEP_TABLE[movement.step_type].wait, ForResolutionOrDeadline):
            self.arm_wait(step)
        self.pending.append(step)

    def arm_wait(self, step: PendingStep) -> None:
        """Run the approval Step's ``wait_for`` now, with what it loads, and arm its Timer."""
        loaded = self.world.load(step.movement.options, for_wait=True)
        step.wait = approval_wait(loaded, step.tool_call_id, self.now_ms)
        seconds = step.wait.timer_seconds if isinstance(step.wait, WaitForResolution) else None
        step.timer_due_ms = None if seconds is None else self.now_ms + seconds * 1000

    def invocation_for(self, step: PendingStep) -> Invocation:
        return Invocation(flow_id=FLOW_ID, step_execution_id=f"se-{step.execution}", attempt=step.attempt, now_ms=self.now_ms)

    def finish(self, step: PendingStep) -> None:
        self.pending.remove(step)

    def fail_attempt(self, step: PendingStep) -> None:
        """The attempt failed: retry within the Step's attempts, then take its failure route."""
        retry = step.movement.options.execute_retry
        maximum = None if retry is None else retry.maximum_attempts
        if maximum is None or step.attempt < maximum:
            step.attempt += 1
            return
        route = step.movement.options.failure_route
        assert route is not None, f"{step.step_type} has no failure route"
        self.finish(step)
        self.executions += 1
        failure = StepMovement(step_type=route.step_type, input=step.movement.input, options=route.options)
        check_movement_against_spec(failure)
        self.pending.append(PendingStep(execution=self.executions, movement=failure))

    # -- checks on every commit ----------------------------------------------------------------

    def _check_shape(self, effects: PVector[Effect], invocation: Invocation | None) -> None:
        decisions = [e for e in effects if isinstance(e, (GoToSteps, DeadEnd, ExecuteDeferredToolCall, AnswerRpc))]
        assert len(decisions) == 1 and decisions[0] is effects[-1], f"one decision, last: {effects}"
        if invocation is None:
            assert isinstance(effects[-1], AnswerRpc), "an RPC answers"
            assert not any(isinstance(e, WriteEvent) for e in effects), "RPCs cannot write Streams"
            return
        assert not isinstance(effects[-1], AnswerRpc)
        for effect in effects:
            if isinstance(effect, WriteEvent):
                event = effect.event
                assert (event.attempt, event.step_execution_id) == (invocation.attempt, invocation.step_execution_id)
                assert event.turn_id is not None
                assert set(event.payload.keys()) == SESSION_EVENT_PAYLOAD_KEYS[event.type], event

    def _check_state_matches_world(self, state: SessionState, loaded: StepOptionsSpec) -> None:
        """The transition's state is what its effects left in Dex (for the parts the Step loaded)."""
        world = self.world.singletons()
        assert state.agent_state == world.agent_state
        assert state.framework_run_state == world.framework_run_state
        assert state.turn_model_call_count == world.turn_model_call_count
        assert state.pending_interrupts == world.pending_interrupts
        assert state.usage == world.usage
        assert state.queued_message_count == world.queued_message_count
        for record in state.tool_calls.values():
            assert self.world.tool_calls.get(record.tool_call_id) == record
        for message in state.messages:
            assert self.world.messages.get(message_sequence_key(message.sequence)) == message
        if MapName.AGENT_TOOL_CALLS in loaded.execute_load_attribute_maps:
            assert dict(state.tool_calls) == self.world.tool_calls
        if MapName.AGENT_MESSAGES in loaded.execute_load_attribute_maps:
            assert list(state.messages) == sorted(self.world.messages.values(), key=lambda m: m.sequence)

    def record_usage(self, usage: AgentUsage) -> None:
        self.recorded_usage = add_agent_usage(self.recorded_usage, usage)

    # -- queries used by rules and invariants --------------------------------------------------

    def steps_of(self, *step_types: StepType) -> list[PendingStep]:
        return [step for step in self.pending if step.step_type in step_types]

    def is_ready(self, step: PendingStep) -> bool:
        """Whether the Step's wait (its row of the flow table) is satisfied."""
        table_wait = STEP_TABLE[step.step_type].wait
        match table_wait:
            case NoWait():
                return True
            case ForOneMessage(channel=channel):
                return self.world.channel_size(channel) >= 1
            case ForInputCountMessages(channel=channel):
                assert isinstance(step.movement.input, int)
                return self.world.channel_size(channel) >= step.movement.input
            case ForResolutionOrDeadline(channel_map=channel_map):
                wait = step.wait
                if isinstance(wait, SkipWait):
                    return True
                assert isinstance(wait, WaitForResolution)
                timer_due = step.timer_due_ms is not None and step.timer_due_ms <= self.now_ms
                return timer_due or self.world.channel_map_size(channel_map, wait.interrupt_id) >= 1
            case _:
                assert_never(table_wait)

    def ready_steps(self) -> list[PendingStep]:
        return [step for step in self.pending if self.is_ready(step)]

    def record_of(self, tool_call_id: str) -> AgentToolCall:
        return self.world.tool_calls[tool_call_id]

    @property
    def status(self) -> AgentStatus | None:
        return None if self.world.agent_state is None else self.world.agent_state.status


__all__ = ["FLOW_ID", "SINGLE_ATTEMPT_EFFECTS", "PendingStep", "SessionMachineBase", "rpc_loads"]
