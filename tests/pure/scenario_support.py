"""Builders for the pure core's scenario tests: a scripted session that acts as the shell (it reduces
each Step's started input and answers the requests it ends in), keeps every input (for replay), the
last attempt's transitions and the last transition, and small effect filters."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pyrsistent import pvector

from dex_agents.pure.machine.effects import PublishToChannel, RecordInvocation, WriteEvent
from dex_agents.pure.machine.endings import (
    AnswerRpc,
    ApprovalWait,
    BuildUserMessage,
    CallModel,
    CompleteSession,
    DeadEnd,
    ExecuteDeferredToolCall,
    FailAttempt,
    GoToSteps,
    RefuseRpc,
    Request,
    RpcOutput,
    SendHeartbeat,
    SkipWait,
    WaitForResolution,
)
from dex_agents.pure.machine.flow_shape import allowed_next_steps
from dex_agents.pure.machine.invocation_record import invocation_record
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.policies import resolve_tool_policy
from dex_agents.pure.machine.reducers import reduce, reduce_follow_up, reduce_rpc, reduce_step, reduce_wait
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ResolveInterruptCalled,
    RpcCall,
    SendUserMessageCalled,
)
from dex_agents.pure.values.rpc import (
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.values.runner import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    TurnCancelStarted,
    ApprovalWaitEnded,
    ApprovalWaitStarted,
    HeartbeatSent,
    Invocation,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    RecoveryError,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    UserMessageArrived,
    UserMessageBuilt,
    WaitInput,
)
from dex_agents.pure.flow.step_options import StepMovement
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, Transition, WaitTransition
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterruptResolution,
    AgentSessionStartInput,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    FrameworkMessage,
    MessageRole,
    ToolCallCompleted,
    ToolEffect,
)

from tests.pure.spec_tables import TOOL_STEP_BY_EFFECT

FLOW_ID = "session-42"
T0_MS = 1_767_323_045_000
"""2026-01-02T03:04:05.000Z"""

E = TypeVar("E")


def invocation(step: str = "step-1", attempt: int = 1, now_ms: int = T0_MS, flow_id: str = FLOW_ID) -> Invocation:
    return Invocation(flow_id=flow_id, step_execution_id=step, attempt=attempt, now_ms=now_ms)


def text_message(role: MessageRole, text: str) -> FrameworkMessage:
    """A plain text message of ``role`` (no tool fields), as a runner would build it."""
    return FrameworkMessage(
        role=role,
        text=text,
        tool_call_id=None,
        tool_name=None,
        tool_arguments=None,
        tool_output=None,
        framework_item=f'{{"role":"{role.value}","content":"{text}"}}',
    )


def user_message(text: str) -> FrameworkMessage:
    return text_message(MessageRole.USER, text)


def assistant_message(text: str) -> FrameworkMessage:
    return text_message(MessageRole.ASSISTANT, text)


def tool_call(
    tool_call_id: str,
    effect: ToolEffect = ToolEffect.READ,
    tool_name: str | None = None,
    arguments: str = "{}",
    requires_approval: bool | None = None,
) -> DeferredToolCall:
    name = tool_name or f"tool_{tool_call_id}"
    resolved = resolve_tool_policy(name, effect, {}, ToolEffect.UNCLASSIFIED)
    if requires_approval is not None:
        resolved = ResolvedToolPolicy(effect=resolved.effect, requires_approval=requires_approval)
    return DeferredToolCall(tool_call_id=tool_call_id, tool_name=name, arguments=arguments, policy=resolved)


def requested(*calls: DeferredToolCall, run_state: str = "run-state", usage: AgentUsage | None = None) -> ToolCallsRequested:
    return ToolCallsRequested(
        framework_run_state=run_state, tool_calls=pvector(calls), usage=usage or AgentUsage(requests=1, input_tokens=10)
    )


def completed(*texts: str, usage: AgentUsage | None = None) -> TurnCompleted:
    return TurnCompleted(
        new_messages=pvector(assistant_message(text) for text in texts),
        usage=usage or AgentUsage(requests=1, output_tokens=5),
    )


def of_type(effects: Sequence[object], kind: type[E]) -> list[E]:
    return [effect for effect in effects if isinstance(effect, kind)]


def events_of(t: StepTransition) -> list[AgentEvent]:
    return [effect.event for effect in of_type(t.effects, WriteEvent)]


def event_types(t: StepTransition) -> list[str]:
    return [event.type for event in events_of(t)]


def movements_of(t: StepTransition) -> list[StepMovement]:
    assert isinstance(t.ending, GoToSteps), f"expected GoToSteps, got {t.ending}"
    return list(t.ending.movements)


def moves(t: StepTransition) -> list[tuple[StepType, object]]:
    return [(movement.step_type, movement.input) for movement in movements_of(t)]


def is_dead_end(t: StepTransition) -> bool:
    return isinstance(t.ending, DeadEnd)


def completions_of(t: StepTransition) -> list[str]:
    return [
        effect.value.tool_call_id
        for effect in of_type(t.effects, PublishToChannel)
        if isinstance(effect.value, ToolCallCompleted)
    ]


def failure_of(t: Transition) -> str:
    assert t.is_rejection, f"expected a rejection, got {t}"
    assert isinstance(t.ending, FailAttempt | RefuseRpc)
    return t.ending.error


def answer_of(t: RpcTransition) -> RpcOutput:
    assert isinstance(t.ending, AnswerRpc), f"expected an RPC answer, got {t.ending}"
    return t.ending.output


REQUESTED_BY: dict[type[Request], tuple[type[StepInput], ...]] = {
    BuildUserMessage: (SessionStarted, UserMessageArrived, ModelCallFinished, ModelCallFailed, ModelAttemptsExhausted,
                       TurnCancelStarted),
    CallModel: (ModelStepStarted,),
    SendHeartbeat: (ToolStepStarted,),
    ExecuteDeferredToolCall: (ToolStepStarted, HeartbeatSent),
}
"""Which Step inputs may end in each request (the protocol's table, written out for the tests)."""

REQUESTS = tuple(REQUESTED_BY)


def check_step_shape(step_input: StepInput, before: SessionState, t: StepTransition) -> None:
    """An accepted Step transition follows the protocol: a failed attempt changes nothing (only a failed
    model call writes, and only events); a request changes no state, has only events before it and
    comes from the inputs that may ask it; a movement goes where the Flow shape allows."""
    ending = t.ending
    if isinstance(ending, FailAttempt):
        assert t.state == before, "a failed attempt changed the state"
        if not t.is_rejection:
            assert isinstance(step_input, ModelCallFailed), f"only a failed model call writes before failing: {t}"
            assert all(isinstance(e, WriteEvent) for e in t.effects)
        return
    if isinstance(ending, REQUESTS):
        assert t.state == before, f"a request changed the state: {ending}"
        assert all(isinstance(e, WriteEvent) for e in t.effects), f"a request after writes: {t.effects}"
        assert isinstance(step_input, REQUESTED_BY[type(ending)]), f"{type(step_input).__name__} asked {ending}"
    if isinstance(ending, GoToSteps):
        targets = {movement.step_type for movement in ending.movements}
        assert targets <= allowed_next_steps(step_input), f"{type(step_input).__name__} cannot move to {targets}"


def recovery(error: str) -> RecoveryError:
    """What Dex hands a failure route after attempts raised ``RuntimeError(error)``."""
    return RecoveryError(detail=error, error_type="RuntimeError")


Answer = Callable[[Request, Invocation], StepInput | None]
"""Answers a request the test shell does not answer itself (a model call, a tool run)."""


@dataclass
class Session:
    """A scripted session acting as the shell: every Step method reduces its started input and answers
    the requests it ends in (the runner builds user messages, heartbeats are sent; ``answer`` does the
    rest), keeping every input (for replay), the attempt's transitions and the last transition."""

    config: SessionConfig = field(default_factory=SessionConfig)
    state: SessionState = field(default_factory=SessionState.initial)
    inputs: list[SessionInput] = field(default_factory=list)
    last: Transition | None = None
    attempt: list[StepTransition] = field(default_factory=list)
    step_counter: int = 0
    now_ms: int = T0_MS

    def _record(self, session_input: SessionInput, t: Transition) -> None:
        self.inputs.append(session_input)
        self.state = t.state
        self.last = t

    def feed_step(self, step_input: StepInput, previous: StepTransition | None = None) -> StepTransition:
        """Reduce ``step_input``: a started input, or the follow-up of ``previous``'s request."""
        before = self.state
        if previous is None:
            t = reduce_step(self.state, self.config, step_input)
        else:
            t = reduce_follow_up(self.config, previous, step_input)
        assert self.state == before, "reduce mutated its input state"
        check_step_shape(step_input, before, t)
        self._record(step_input, t)
        return t

    def feed_rpc(self, call: RpcCall) -> RpcTransition:
        before = self.state
        t = reduce_rpc(self.state, self.config, call)
        if t.is_rejection:
            assert t.state == before and t.effects == pvector(), "a refusal changed something"
        self._record(call, t)
        return t

    def feed_wait(self, wait_input: WaitInput) -> WaitTransition:
        t = reduce_wait(self.state, self.config, wait_input)
        assert t.state == self.state, "a wait changed the state"
        self._record(wait_input, t)
        return t

    def feed(self, session_input: SessionInput) -> Transition:
        """Reduce any input once (no requests answered)."""
        t = reduce(self.state, self.config, session_input)
        self._record(session_input, t)
        return t

    def inv(self, attempt: int = 1) -> Invocation:
        self.step_counter += 1
        return invocation(step=f"step-{self.step_counter}", attempt=attempt, now_ms=self.now_ms)

    def run_step(self, started: StepInput, answer: Answer | None = None) -> StepTransition:
        """One Step attempt: reduce ``started``, then each follow-up of the requests it ends in, until a
        decision, a failure, or a request nobody answers (returned, for the test to answer)."""
        self.attempt = []
        t = self.feed_step(started)
        clocks = [started.invocation.now_ms]
        while True:
            self.attempt.append(t)
            decides = isinstance(t.ending, GoToSteps | DeadEnd | CompleteSession)
            expected = RecordInvocation(record=invocation_record(clocks, self.config)) if decides else None
            assert t.record == expected, f"the invocation record of {t.ending} is {t.record}, not {expected}"
            follow_up = self._answer(t.ending, started.invocation, answer)
            if follow_up is None:
                return t
            t = self.feed_step(follow_up, previous=t)
            clocks.append(follow_up.invocation.now_ms)

    def _answer(self, ending: object, started: Invocation, answer: Answer | None) -> StepInput | None:
        now = invocation(step=started.step_execution_id, attempt=started.attempt, now_ms=self.now_ms)
        match ending:
            case BuildUserMessage(text=text, purpose=purpose):
                return UserMessageBuilt(invocation=now, purpose=purpose, message=user_message(text))
            case SendHeartbeat(tool_call_id=tool_call_id):
                return HeartbeatSent(invocation=now, tool_call_id=tool_call_id)
            case CallModel() | ExecuteDeferredToolCall():
                return None if answer is None else answer(ending, now)
            case _:
                return None

    def attempt_events(self) -> list[AgentEvent]:
        """The events every transition of the last attempt wrote, in order."""
        return [event for t in self.attempt for event in events_of(t)]

    @property
    def record(self) -> dict[str, AgentToolCall]:
        return dict(self.state.tool_calls)

    def start(self, initial: str | None = None) -> StepTransition:
        return self.run_step(
            SessionStarted(invocation=self.inv(), start_input=AgentSessionStartInput(initial_message=initial))
        )

    def send(self, text: str) -> RpcTransition:
        return self.feed_rpc(SendUserMessageCalled(input=SendUserMessageInput(text=text)))

    def user_message_arrives(self, text: str) -> StepTransition:
        return self.run_step(UserMessageArrived(invocation=self.inv(), consumed=pvector([AgentUserMessage(text=text)])))

    def model(self, outcome: TurnCompleted | ToolCallsRequested, attempt: int = 1) -> StepTransition:
        """``RunModel``: the model answers ``outcome``."""
        def answer(request: Request, now: Invocation) -> StepInput | None:
            return ModelCallFinished(invocation=now, outcome=outcome) if isinstance(request, CallModel) else None

        return self.run_step(ModelStepStarted(invocation=self.inv(attempt)), answer)

    def model_fails(self, error: str, retryable: bool, attempt: int = 1) -> StepTransition:
        """``RunModel``: ``run_model_step`` raises ``error`` (``NonRetryableModelError`` unless ``retryable``)."""
        def answer(request: Request, now: Invocation) -> StepInput | None:
            if isinstance(request, CallModel):
                return ModelCallFailed(invocation=now, error=error, retryable=retryable)
            return None

        return self.run_step(ModelStepStarted(invocation=self.inv(attempt)), answer)

    def wait_for(self, tool_call_id: str) -> ApprovalWait:
        """``AwaitToolApproval``'s ``wait_for`` at ``now_ms``."""
        ending = self.feed_wait(ApprovalWaitStarted(invocation=self.inv(), tool_call_id=tool_call_id)).ending
        assert isinstance(ending, WaitForResolution | SkipWait), ending
        return ending

    def approval(
        self, tool_call_id: str, *, timer_fired: bool = False, resolutions: Sequence[AgentInterruptResolution] = ()
    ) -> StepTransition:
        ended = ApprovalWaitEnded(
            invocation=self.inv(), tool_call_id=tool_call_id, timer_fired=timer_fired, resolutions=pvector(resolutions)
        )
        return self.run_step(ended)

    def resolution_of(self, tool_call_id: str, approved: bool, message: str | None = None) -> AgentInterruptResolution:
        interrupt_id = self.state.tool_calls[tool_call_id].interrupt_id
        assert interrupt_id is not None
        return AgentInterruptResolution(interrupt_id=interrupt_id, approved=approved, rejection_message=message)

    def resolution_arrives(self, tool_call_id: str, approved: bool, message: str | None = None) -> StepTransition:
        return self.approval(tool_call_id, resolutions=[self.resolution_of(tool_call_id, approved, message)])

    def timer_fires(self, tool_call_id: str) -> StepTransition:
        return self.approval(tool_call_id, timer_fired=True)

    def resolve(self, interrupt_id: str, approved: bool, message: str | None = None) -> RpcTransition:
        return self.feed_rpc(
            ResolveInterruptCalled(
                input=ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved, rejection_message=message),
                now_ms=self.now_ms,
            )
        )

    def tool_started(self, tool_call_id: str, step_type: StepType | None = None) -> StepTransition:
        """A tool Step begins; it ends at ``ExecuteDeferredToolCall`` (after its heartbeat) or a decision."""
        if step_type is None:
            step_type = TOOL_STEP_BY_EFFECT[self.state.tool_calls[tool_call_id].effect]
        return self.run_step(ToolStepStarted(invocation=self.inv(), tool_call_id=tool_call_id, step_type=step_type))

    def tool_succeeds(self, tool_call_id: str, output: str = "ok") -> StepTransition:
        return self.run_step(ToolCallSucceeded(invocation=self.inv(), tool_call_id=tool_call_id, output=output))

    def tool_raises_execution_error(self, tool_call_id: str, error: str) -> StepTransition:
        return self.run_step(ToolExecutionFailed(invocation=self.inv(), tool_call_id=tool_call_id, error=error))

    def attempts_exhausted(self, tool_call_id: str, error: str) -> StepTransition:
        return self.run_step(
            ToolAttemptsExhausted(invocation=self.inv(), tool_call_id=tool_call_id, recovery_error=recovery(error))
        )

    def single_attempt_failed(self, tool_call_id: str, error: str) -> StepTransition:
        return self.run_step(
            SingleAttemptToolFailed(invocation=self.inv(), tool_call_id=tool_call_id, recovery_error=recovery(error))
        )

    def results_arrive(self, expected: int) -> StepTransition:
        return self.run_step(ToolResultsArrived(invocation=self.inv(), expected=expected))

    def turn_fails(self, error: str) -> StepTransition:
        """``RecordTurnFailure`` after ``RunModel``'s attempts raised ``error``."""
        return self.run_step(ModelAttemptsExhausted(invocation=self.inv(), recovery_error=recovery(error)))

    def snapshot(self) -> RpcTransition:
        return self.feed_rpc(AgentSnapshotRequested())

    def list_messages(self, before_sequence: int | None = None, limit: int | None = None) -> RpcTransition:
        return self.feed_rpc(AgentMessagesListed(input=ListAgentMessagesInput(before_sequence=before_sequence, limit=limit)))

    def run_tool(self, tool_call_id: str, output: str = "ok") -> StepTransition:
        started = self.tool_started(tool_call_id)
        assert isinstance(started.ending, ExecuteDeferredToolCall), f"the tool did not run: {started.ending}"
        return self.tool_succeeds(tool_call_id, output)


def started_session(initial: str = "Where is order 42?", config: SessionConfig | None = None) -> Session:
    """A session whose first turn is running its first model call."""
    session = Session(config=config or SessionConfig())
    session.start(initial)
    return session
