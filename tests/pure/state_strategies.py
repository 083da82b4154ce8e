"""Hypothesis strategies for session states, for the totality property: states a session really reaches
(``reachable_sessions``), states in the shape the reducers produce (``session_states``) and field-level
arbitrary ones (``hostile_session_states``)."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from pyrsistent import pmap, pvector

from dex_agents.pure.machine.endings import BuildUserMessage
from dex_agents.pure.machine.reducers import reduce, reduce_step
from dex_agents.pure.machine.reducers.model import interrupt_raised_by
from dex_agents.pure.machine.rpc_calls import SendUserMessageCalled
from dex_agents.pure.values.rpc import SendUserMessageInput
from dex_agents.pure.values.runner import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    ApprovalWaitEnded,
    Invocation,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    RecoveryError,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    UserMessageArrived,
    UserMessageBuilt,
)
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentMessage,
    AgentSessionStartInput,
    AgentState,
    AgentStatus,
    AgentToolCall,
    AgentUserMessage,
    MessageRole,
    ToolCallStatus,
)
from tests.pure.strategies import (
    agent_interrupts,
    agent_messages,
    agent_states,
    agent_tool_calls,
    instants,
    int64s,
    optional_texts,
    statuses,
    texts,
    usages,
    vectors_of,
)


from tests.pure.session_strategies import (
    build_user_message,
    call_ids,
    model_messages,
    session_configs,
    small_usages,
    tool_call_drafts,
)


def _record_for_state(turn_id: str, call_id: str, record: AgentToolCall, order: int) -> AgentToolCall:
    interrupt_id = f"{turn_id}:{call_id}" if record.requires_approval else None
    return AgentToolCall(
        tool_call_id=call_id,
        turn_id=turn_id,
        tool_name=record.tool_name,
        arguments=record.arguments,
        effect=record.effect,
        requires_approval=record.requires_approval,
        deferral_order=order,
        idempotency_key=f"session-42/{turn_id}/{call_id}",
        status=record.status,
        interrupt_id=interrupt_id,
        output=record.output,
        error=record.error,
        rejection_message=record.rejection_message,
    )


@st.composite
def consistent_agent_states(draw: st.DrawFn) -> AgentState:
    """An ``AgentState`` whose fields agree (a turn id and sequence exactly while a turn runs)."""
    status = draw(statuses)
    running = status is not AgentStatus.WAITING_FOR_USER_MESSAGE
    completed = draw(st.integers(min_value=0, max_value=3))
    failed = draw(st.integers(min_value=0, max_value=2))
    turn_count = completed + failed + (1 if running else 0)
    message_count = draw(st.integers(min_value=1 if running else 0, max_value=4))
    return AgentState(
        status=status,
        turn_count=turn_count,
        current_turn_id=f"turn-{turn_count}" if running else None,
        current_turn_sequence=draw(st.integers(min_value=1, max_value=message_count)) if running else None,
        message_count=message_count,
        completed_turn_count=completed,
        failed_turn_count=failed,
        last_turn_error=draw(optional_texts),
    )


@st.composite
def session_states(draw: st.DrawFn) -> SessionState:
    """Session states in the shape the reducers produce (records keyed by ID, sequences 1..n, interrupts
    of awaiting records), with any status, counts, records and deadlines, including unreadable ones."""
    consistent = consistent_agent_states()
    agent_state = draw(st.one_of(st.none(), consistent, consistent, consistent, agent_states))
    turn_id = "turn-1" if agent_state is None or agent_state.current_turn_id is None else agent_state.current_turn_id
    call_count = draw(st.integers(min_value=0, max_value=3))
    records = [
        _record_for_state(turn_id, f"call-{n + 1}", draw(agent_tool_calls), n) for n in range(call_count)
    ]
    deadline = draw(st.one_of(instants, st.just("not a deadline")))
    interrupts = [
        interrupt
        for record in records
        if record.status is ToolCallStatus.AWAITING_APPROVAL
        and (interrupt := interrupt_raised_by(record, deadline)) is not None
        and draw(st.booleans())
    ]
    message_count = draw(st.integers(min_value=0, max_value=4)) if agent_state is None else min(agent_state.message_count, 6)
    messages = [
        AgentMessage(
            sequence=n,
            turn_id=turn_id,
            role=MessageRole.USER,
            text="hi",
            tool_call_id=None,
            tool_name=None,
            tool_arguments=None,
            tool_output=None,
            framework_item="{}",
        )
        for n in range(1, message_count + 1)
    ]
    return SessionState(
        agent_state=agent_state,
        messages=pvector(messages),
        framework_run_state=draw(st.none() | texts),
        tool_calls=pmap({record.tool_call_id: record for record in records}),
        pending_interrupts=pvector(interrupts),
        usage=draw(usages),
        queued_message_count=draw(st.integers(min_value=0, max_value=3)),
        turn_model_call_count=draw(st.integers(min_value=0, max_value=3)),
    )


hostile_session_states: SearchStrategy[SessionState] = st.builds(
    SessionState,
    agent_state=st.none() | agent_states,
    messages=vectors_of(agent_messages),
    framework_run_state=st.none() | texts,
    tool_calls=st.dictionaries(call_ids, agent_tool_calls, max_size=3).map(pmap),
    pending_interrupts=vectors_of(agent_interrupts),
    usage=usages,
    queued_message_count=int64s,
    turn_model_call_count=st.one_of(st.integers(min_value=0, max_value=60), int64s),
)
"""Field-level arbitrary states: keys that disagree with records, gaps, negative and int64 counts."""



def _model_step(draw: st.DrawFn, state: SessionState, invocation: Invocation) -> ModelCallFinished:
    usage = draw(small_usages)
    if draw(st.booleans()):
        messages = draw(st.lists(model_messages, max_size=2))
        return ModelCallFinished(invocation=invocation, outcome=TurnCompleted(new_messages=pvector(messages), usage=usage))
    first = len(state.tool_calls) + 1
    drafts = draw(st.lists(tool_call_drafts, min_size=1, max_size=3))
    calls = [
        DeferredToolCall(
            tool_call_id=f"call-{first + n}",
            tool_name=f"{effect.value}_tool",
            arguments="{}",
            policy=ResolvedToolPolicy(effect=effect, requires_approval=approval),
        )
        for n, (effect, approval) in enumerate(drafts)
    ]
    outcome = ToolCallsRequested(framework_run_state=f"run-state-{first}", tool_calls=pvector(calls), usage=usage)
    return ModelCallFinished(invocation=invocation, outcome=outcome)


_WORKER_LOST = RecoveryError(detail="worker lost", error_type="WorkerLost")


def _tool_step(draw: st.DrawFn, open_records: list[AgentToolCall], invocation: Invocation) -> StepInput:
    record = draw(st.sampled_from(open_records))
    call_id = record.tool_call_id
    if record.status is ToolCallStatus.AWAITING_APPROVAL:
        assert record.interrupt_id is not None
        resolution = AgentInterruptResolution(
            interrupt_id=record.interrupt_id, approved=draw(st.booleans()), rejection_message=draw(optional_texts)
        )
        return ApprovalWaitEnded(invocation=invocation, tool_call_id=call_id, timer_fired=draw(st.booleans()),
                                 resolutions=pvector([resolution]))
    choices: list[StepInput] = [
        ToolCallSucceeded(invocation=invocation, tool_call_id=call_id, output="ok"),
        ToolExecutionFailed(invocation=invocation, tool_call_id=call_id, error="not found"),
        ToolAttemptsExhausted(invocation=invocation, tool_call_id=call_id, recovery_error=_WORKER_LOST),
        SingleAttemptToolFailed(invocation=invocation, tool_call_id=call_id, recovery_error=_WORKER_LOST),
    ]
    return draw(st.sampled_from(choices))


def _settled(state: SessionState, config: SessionConfig, step_input: StepInput) -> SessionState:
    """The state after ``step_input`` and the user messages it asks the runner for (built at once)."""
    transition = reduce_step(state, config, step_input)
    while isinstance(transition.ending, BuildUserMessage):
        asked = transition.ending
        built = UserMessageBuilt(invocation=step_input.invocation, purpose=asked.purpose, message=build_user_message(asked.text))
        transition = reduce_step(transition.state, config, built)
    return transition.state


@st.composite
def reachable_sessions(draw: st.DrawFn) -> tuple[SessionConfig, SessionState]:
    """A config and a state the session really reaches: a short legal walk through ``reduce`` (start, user
    messages, model outcomes with parallel calls, approvals, tool outcomes, resumes and turn failures)."""
    config = draw(session_configs)
    now = 1_767_323_045_000
    first_message = draw(st.sampled_from([None, "Where is order 42?"]))
    start = SessionStarted(
        invocation=Invocation(flow_id="session-42", step_execution_id="se-0", attempt=1, now_ms=now),
        start_input=AgentSessionStartInput(initial_message=first_message),
    )
    state = _settled(SessionState.initial(), config, start)
    for index in range(draw(st.integers(min_value=0, max_value=8))):
        invocation = Invocation(flow_id="session-42", step_execution_id=f"se-{index + 1}", attempt=1, now_ms=now + index)
        agent_state = state.agent_state
        assert agent_state is not None
        open_records = [record for record in state.records_in_deferral_order() if not record.status.is_final]
        step_input: StepInput
        if agent_state.status is AgentStatus.WAITING_FOR_USER_MESSAGE:
            text = "next question"
            state = reduce(state, config, SendUserMessageCalled(input=SendUserMessageInput(text=text))).state
            step_input = UserMessageArrived(invocation=invocation, consumed=pvector([AgentUserMessage(text=text)]))
        elif agent_state.status is AgentStatus.RUNNING_MODEL and draw(st.integers(min_value=0, max_value=9)) == 0:
            step_input = ModelCallFailed(invocation=invocation, error="invalid API key", retryable=False)
        elif agent_state.status is AgentStatus.RUNNING_MODEL and draw(st.integers(min_value=0, max_value=4)) == 0:
            step_input = ModelAttemptsExhausted(
                invocation=invocation,
                recovery_error=RecoveryError(detail="RunModel failed after 3 attempts", error_type="RuntimeError"),
            )
        elif agent_state.status is AgentStatus.RUNNING_MODEL:
            step_input = _model_step(draw, state, invocation)
        elif open_records:
            step_input = _tool_step(draw, open_records, invocation)
        else:
            step_input = ToolResultsArrived(invocation=invocation, expected=len(state.tool_calls))
        state = _settled(state, config, step_input)
    return config, state
