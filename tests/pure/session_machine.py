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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import assert_never

from hypothesis.stateful import RuleBasedStateMachine
from pyrsistent import pvector

from dex_agents.pure.machine.effects import DeleteMapInstance, StepEffect, WriteEvent
from dex_agents.pure.machine.endings import (
    AnswerRpc,
    BuildUserMessage,
    CallModel,
    DeadEnd,
    ExecuteDeferredToolCall,
    GoToSteps,
    Request,
    SendHeartbeat,
    SkipWait,
    WaitForResolution,
    WaitEnding,
)
from dex_agents.pure.machine.flow_shape import rpc_of
from dex_agents.pure.flow.rows import (
    ForChildSession,
    ForInputCountMessages,
    ForOneMessage,
    ForResolutionOrDeadline,
    NoWait,
)
from dex_agents.pure.flow.table import RPC_TABLE, STEP_TABLE
from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.values.persistence import AGENT_TOOL_CALLS, MapName, StepType
from dex_agents.pure.machine.reducers import reduce, reduce_rpc, reduce_step, reduce_wait
from dex_agents.pure.machine.rpc_calls import RpcCall
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    ApprovalWaitStarted,
    HeartbeatSent,
    Invocation,
    SessionInput,
    StepInput,
    UserMessageBuilt,
)
from dex_agents.pure.flow.step_options import StepMovement, StepOptionsSpec
from dex_agents.pure.machine.transition import RpcTransition, StepTransition
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.values.session import AgentStatus, AgentToolCall, AgentUsage, ToolEffect
from tests.pure.golden_fixtures import SESSION_EVENT_PAYLOAD_KEYS
from tests.pure.scenario_support import REQUESTS, check_step_shape
from tests.pure.session_strategies import build_user_message
from tests.pure.session_world import SessionWorld
from tests.pure.spec_tables import check_movement_against_spec

FLOW_ID = "session-machine"
T0_MS = 1_767_323_045_000
MAIN_LINE = frozenset({StepType.AWAIT_USER_MESSAGE, StepType.RUN_MODEL, StepType.RECORD_TURN_FAILURE, StepType.RESUME_TURN})
SINGLE_ATTEMPT_EFFECTS = frozenset({ToolEffect.NON_IDEMPOTENT_WRITE, ToolEffect.UNCLASSIFIED})


def rpc_loads(call: RpcCall) -> StepOptionsSpec:
    """What the RPC that ``call`` comes from loads (its row of the flow table), as options ``load`` reads."""
    return StepOptionsSpec(execute_load_attribute_maps=pvector(RPC_TABLE[rpc_of(call)].access.maps))


Answer = Callable[[Request, Invocation], StepInput | None]
"""The runner's side of a request the machine does not answer itself (a model call, a tool run);
``None``: the attempt stops at that request (the Worker crashed while it ran)."""


@dataclass
class Attempt:
    """One Step attempt as the shell runs it: the inputs it reduced and their transitions, in order."""

    inputs: list[StepInput] = field(default_factory=list)
    transitions: list[StepTransition] = field(default_factory=list)

    @property
    def last(self) -> StepTransition:
        return self.transitions[-1]

    @property
    def effects(self) -> list[StepEffect]:
        return [effect for transition in self.transitions for effect in transition.effects]

    @property
    def requests(self) -> list[Request]:
        return [t.ending for t in self.transitions if isinstance(t.ending, REQUESTS)]


@dataclass
class PendingStep:
    """A Step Dex would run: the movement that started it, its attempt, and (approvals) its armed wait."""

    execution: int
    movement: StepMovement
    attempt: int = 1
    wait: WaitEnding | None = None
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

    def reduce_step_checked(self, loaded: SessionState, step_input: StepInput) -> StepTransition:
        """``reduce_step`` with the purity and protocol checks: inputs unchanged, a rejection changes
        nothing, a request changes no state."""
        state_before, input_before = repr(loaded), repr(step_input)
        result = reduce_step(loaded, self.config, step_input)
        assert repr(loaded) == state_before, "reduce mutated the state it was given"
        assert repr(step_input) == input_before, "reduce mutated its input"
        check_step_shape(step_input, loaded, result)
        return result

    def reduce_rpc_checked(self, loaded: SessionState, call: RpcCall) -> RpcTransition:
        state_before = repr(loaded)
        result = reduce_rpc(loaded, self.config, call)
        assert repr(loaded) == state_before, "reduce mutated the state it was given"
        if result.is_rejection:
            assert result.state == loaded, "a refusal changed the state"
        return result

    def run_attempt(self, loaded: SessionState, started: StepInput, answer: Answer | None = None) -> Attempt:
        """Run one Step attempt the way the shell's driver does: reduce ``started``, then each request's
        follow-up (the runner builds user messages, heartbeats are sent, ``answer`` does the rest),
        until an ending that is not a request, or a request ``answer`` leaves unanswered."""
        attempt = Attempt()
        state, step_input = loaded, started
        while True:
            transition = self.reduce_step_checked(state, step_input)
            attempt.inputs.append(step_input)
            attempt.transitions.append(transition)
            now = Invocation(flow_id=started.invocation.flow_id, step_execution_id=started.invocation.step_execution_id,
                             attempt=started.invocation.attempt, now_ms=self.now_ms)
            ending = transition.ending
            follow_up: StepInput | None
            match ending:
                case BuildUserMessage(text=text, purpose=purpose):
                    follow_up = UserMessageBuilt(invocation=now, purpose=purpose, message=build_user_message(text))
                case SendHeartbeat(tool_call_id=tool_call_id):
                    follow_up = HeartbeatSent(invocation=now, tool_call_id=tool_call_id)
                case CallModel() | ExecuteDeferredToolCall():
                    follow_up = None if answer is None else answer(ending, now)
                case _:
                    follow_up = None
            if follow_up is None:
                return attempt
            state, step_input = transition.state, follow_up

    def commit(self, attempt: Attempt, loaded_options: StepOptionsSpec, invocation: Invocation) -> list[StepMovement]:
        """Apply a committed attempt to the world (as the shell does) and check what it left."""
        last = attempt.last
        assert not last.fails_attempt, f"a legal input failed the attempt: {last.ending}"
        ending = last.ending
        assert isinstance(ending, GoToSteps | DeadEnd), f"the attempt ended without a decision: {ending}"
        assert all(isinstance(t.ending, REQUESTS) for t in attempt.transitions[:-1]), "only requests before the decision"
        effects = attempt.effects
        self._check_events(effects, invocation)
        self._check_dropped_records(effects)
        movements = self.world.apply(effects, ending)
        self._check_state_matches_world(last.state, loaded_options)
        self.record(attempt.inputs)
        for movement in movements:
            self.schedule(movement)
        return movements

    def commit_rpc(self, call: RpcCall, result: RpcTransition, loaded_options: StepOptionsSpec) -> None:
        """Apply an answered RPC to the world and check what it left."""
        assert isinstance(result.ending, AnswerRpc), f"a legal call was refused: {result.ending}"
        self._check_dropped_records(result.effects)
        self.world.apply(result.effects, result.ending)
        self._check_state_matches_world(result.state, loaded_options)
        self.record([call])

    def keep_failed_attempt(self, attempt: Attempt) -> None:
        """An attempt failed after writing events: the Stream keeps them, nothing else is committed; the
        inputs are recorded (replay folds them to no change)."""
        assert attempt.last.fails_attempt and not attempt.last.is_rejection
        self.world.keep_events(attempt.effects)
        self.record(attempt.inputs)

    def record(self, inputs: list[StepInput] | list[RpcCall] | list[ApprovalWaitStarted]) -> None:
        """Keep inputs the session reduced (what a ``fact_observer`` sees) and fold them into the shadow."""
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
        started = ApprovalWaitStarted(invocation=self.invocation_for(step), tool_call_id=step.tool_call_id)
        waited = reduce_wait(loaded, self.config, started)
        assert waited.state == loaded, "a wait changed the state"
        self.record([started])
        step.wait = waited.ending
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

    def _check_events(self, effects: list[StepEffect], invocation: Invocation) -> None:
        for effect in effects:
            if isinstance(effect, WriteEvent):
                event = effect.event
                assert (event.attempt, event.step_execution_id) == (invocation.attempt, invocation.step_execution_id)
                assert event.turn_id is not None
                assert set(event.payload.keys()) == SESSION_EVENT_PAYLOAD_KEYS[event.type], event

    def _check_dropped_records(self, effects: Sequence[object]) -> None:
        for effect in effects:
            if isinstance(effect, DeleteMapInstance) and effect.map == AGENT_TOOL_CALLS:
                record = self.world.tool_calls[effect.key]
                assert record.status.is_final, f"an open record was dropped: {record}"
                completions = self.world.completions_by_call[(record.turn_id, record.tool_call_id)]
                assert completions == 1, f"{record.tool_call_id} published {completions} ToolCallCompleted"

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
            case ForChildSession():
                raise AssertionError("no tool of this machine is a sub-agent")
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
