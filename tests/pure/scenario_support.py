"""Builders for the pure core's scenario tests: a scripted session that feeds facts through ``reduce``,
keeps every input (for replay) and the last transition, and small effect filters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pyrsistent import pvector

from dex_agents.pure.effects import (
    AnswerRpc,
    BuildTurnFailureNote,
    DeadEnd,
    Effect,
    ExecuteDeferredToolCall,
    FailAttempt,
    GoToSteps,
    PublishToChannel,
    RpcOutput,
    WriteEvent,
)
from dex_agents.pure.flow_shape import allowed_next_steps
from dex_agents.pure.persistence import StepType
from dex_agents.pure.policies import resolve_tool_policy
from dex_agents.pure.reducers import reduce
from dex_agents.pure.rpc_values import (
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.runner_values import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested, TurnCompleted
from dex_agents.pure.state import SessionConfig, SessionState
from dex_agents.pure.step_inputs import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ApprovalWaitEnded,
    ApprovalWaitOutcome,
    DeadlineTimerFired,
    Invocation,
    ModelCallFailed,
    ModelCallFinished,
    ResolutionReceived,
    ResolveInterruptCalled,
    SendUserMessageCalled,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailed,
    UserMessageArrived,
)
from dex_agents.pure.step_options import StepMovement
from dex_agents.pure.texts import build_turn_failure_note
from dex_agents.pure.transition import Transition
from dex_agents.pure.values import (
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


def of_type(effects: Sequence[Effect], kind: type[E]) -> list[E]:
    return [effect for effect in effects if isinstance(effect, kind)]


def events_of(t: Transition) -> list[AgentEvent]:
    return [effect.event for effect in of_type(t.effects, WriteEvent)]


def event_types(t: Transition) -> list[str]:
    return [event.type for event in events_of(t)]


def movements_of(t: Transition) -> list[StepMovement]:
    decisions = of_type(t.effects, GoToSteps)
    assert len(decisions) == 1, f"expected one GoToSteps in {t.effects}"
    assert isinstance(t.effects[-1], GoToSteps), "the decision comes last"
    return list(decisions[0].movements)


def moves(t: Transition) -> list[tuple[StepType, object]]:
    return [(movement.step_type, movement.input) for movement in movements_of(t)]


def is_dead_end(t: Transition) -> bool:
    return len(t.effects) > 0 and isinstance(t.effects[-1], DeadEnd)


def completions_of(t: Transition) -> list[str]:
    return [
        effect.value.tool_call_id
        for effect in of_type(t.effects, PublishToChannel)
        if isinstance(effect.value, ToolCallCompleted)
    ]


def failure_of(t: Transition) -> str:
    assert t.is_rejection, f"expected a rejection, got {t.effects}"
    effect = t.effects[0]
    assert isinstance(effect, FailAttempt)
    return effect.error


def answer_of(t: Transition) -> RpcOutput:
    assert isinstance(t.effects[-1], AnswerRpc), f"expected an RPC answer, got {t.effects}"
    return t.effects[-1].output


RPC_CALLS = (SendUserMessageCalled, ResolveInterruptCalled, AgentSnapshotRequested, AgentMessagesListed)


DECISIONS = (GoToSteps, DeadEnd, ExecuteDeferredToolCall, BuildTurnFailureNote)
"""What may end an accepted Step transition: a decision, or a request for work with a follow-up input."""


def check_shape(session_input: SessionInput, t: Transition) -> None:
    """An accepted transition follows the Flow shape and the effect ordering rules; a failed model call
    writes only events before it fails the attempt."""
    if isinstance(session_input, RPC_CALLS):
        assert isinstance(t.effects[-1], AnswerRpc) and of_type(t.effects, WriteEvent) == []
        assert len(of_type(t.effects, AnswerRpc)) == 1
        return
    last = t.effects[-1]
    if t.fails_attempt:
        assert isinstance(session_input, ModelCallFailed), f"only a failed model call writes before failing: {t.effects}"
        assert all(isinstance(e, WriteEvent) for e in t.effects[:-1])
        return
    assert isinstance(last, DECISIONS), f"no decision last: {t.effects}"
    decisions = [e for e in t.effects if isinstance(e, DECISIONS)]
    assert decisions == [last], "exactly one decision"
    if isinstance(last, BuildTurnFailureNote):
        assert isinstance(session_input, (ModelCallFinished, ModelCallFailed)), "only RunModel fails its own turn"
    if isinstance(last, GoToSteps):
        targets = {movement.step_type for movement in last.movements}
        assert targets <= allowed_next_steps(session_input), f"{type(session_input).__name__} cannot move to {targets}"


@dataclass
class Session:
    """A scripted session: every call feeds one fact through ``reduce`` and keeps the transition."""

    config: SessionConfig = field(default_factory=SessionConfig)
    state: SessionState = field(default_factory=SessionState.initial)
    inputs: list[SessionInput] = field(default_factory=list)
    last: Transition | None = None
    step_counter: int = 0
    now_ms: int = T0_MS

    def feed(self, session_input: SessionInput) -> Transition:
        before = self.state
        t = reduce(self.state, self.config, session_input)
        assert self.state == before, "reduce mutated its input state"
        if t.fails_attempt:
            assert t.state == before, "a failed attempt must leave the state unchanged"
        if not t.is_rejection:
            check_shape(session_input, t)
        self.inputs.append(session_input)
        self.state = t.state
        self.last = t
        return t

    def inv(self, attempt: int = 1) -> Invocation:
        self.step_counter += 1
        return invocation(step=f"step-{self.step_counter}", attempt=attempt, now_ms=self.now_ms)

    @property
    def record(self) -> dict[str, AgentToolCall]:
        return dict(self.state.tool_calls)

    def start(self, initial: str | None = None) -> Transition:
        built = None if initial is None or initial.strip() == "" else user_message(initial)
        return self.feed(
            SessionStarted(
                invocation=self.inv(),
                start_input=AgentSessionStartInput(initial_message=initial),
                initial_user_message=built,
            )
        )

    def send(self, text: str) -> Transition:
        return self.feed(SendUserMessageCalled(input=SendUserMessageInput(text=text)))

    def user_message_arrives(self, text: str) -> Transition:
        return self.feed(
            UserMessageArrived(invocation=self.inv(), message=AgentUserMessage(text=text), user_message=user_message(text))
        )

    def model(self, outcome: TurnCompleted | ToolCallsRequested, attempt: int = 1) -> Transition:
        return self.feed(ModelCallFinished(invocation=self.inv(attempt), outcome=outcome))

    def approval(self, tool_call_id: str, outcome: ApprovalWaitOutcome) -> Transition:
        return self.feed(ApprovalWaitEnded(invocation=self.inv(), tool_call_id=tool_call_id, outcome=outcome))

    def resolution_arrives(self, tool_call_id: str, approved: bool, message: str | None = None) -> Transition:
        interrupt_id = self.state.tool_calls[tool_call_id].interrupt_id
        assert interrupt_id is not None
        resolution = AgentInterruptResolution(interrupt_id=interrupt_id, approved=approved, rejection_message=message)
        return self.approval(tool_call_id, ResolutionReceived(resolution=resolution))

    def timer_fires(self, tool_call_id: str) -> Transition:
        return self.approval(tool_call_id, DeadlineTimerFired())

    def resolve(self, interrupt_id: str, approved: bool, message: str | None = None) -> Transition:
        return self.feed(
            ResolveInterruptCalled(
                input=ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved, rejection_message=message),
                now_ms=self.now_ms,
            )
        )

    def tool_started(self, tool_call_id: str, step_type: StepType | None = None) -> Transition:
        if step_type is None:
            step_type = TOOL_STEP_BY_EFFECT[self.state.tool_calls[tool_call_id].effect]
        return self.feed(ToolStepStarted(invocation=self.inv(), tool_call_id=tool_call_id, step_type=step_type))

    def tool_succeeds(self, tool_call_id: str, output: str = "ok") -> Transition:
        return self.feed(ToolCallSucceeded(invocation=self.inv(), tool_call_id=tool_call_id, output=output))

    def tool_raises_execution_error(self, tool_call_id: str, error: str) -> Transition:
        return self.feed(ToolExecutionFailed(invocation=self.inv(), tool_call_id=tool_call_id, error=error))

    def attempts_exhausted(self, tool_call_id: str, error: str) -> Transition:
        return self.feed(ToolAttemptsExhausted(invocation=self.inv(), tool_call_id=tool_call_id, recovery_error=error))

    def single_attempt_failed(self, tool_call_id: str, error: str) -> Transition:
        return self.feed(SingleAttemptToolFailed(invocation=self.inv(), tool_call_id=tool_call_id, recovery_error=error))

    def results_arrive(self, expected: int) -> Transition:
        return self.feed(ToolResultsArrived(invocation=self.inv(), expected=expected))

    def turn_fails(self, error: str) -> Transition:
        note = build_turn_failure_note(self.state.tool_calls.values())
        return self.feed(
            TurnFailed(
                invocation=self.inv(),
                recovery_error=error,
                failure_note_message=None if note is None else user_message(note),
            )
        )

    def snapshot(self) -> Transition:
        return self.feed(AgentSnapshotRequested())

    def list_messages(self, before_sequence: int | None = None, limit: int | None = None) -> Transition:
        return self.feed(AgentMessagesListed(input=ListAgentMessagesInput(before_sequence=before_sequence, limit=limit)))

    def run_tool(self, tool_call_id: str, output: str = "ok") -> Transition:
        started = self.tool_started(tool_call_id)
        assert not started.is_rejection and not is_dead_end(started)
        return self.tool_succeeds(tool_call_id, output)


def started_session(initial: str = "Where is order 42?", config: SessionConfig | None = None) -> Session:
    """A session whose first turn is running its first model call."""
    session = Session(config=config or SessionConfig())
    session.start(initial)
    return session
