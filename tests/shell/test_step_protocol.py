"""The Step protocol, one Step handler at a time on an in-memory Context (no engine, no Worker): the
shell hands the core what the invocation saw and performs what it answers, deciding nothing itself."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from dex import RecoveryErrorInfo, Timer, Wait
from pyrsistent import pvector

from dex_agents.pure.machine.invocation_record import INVOCATION_RECORD_EVENT, InvocationRecord
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.wire import decode
from dex_agents.pure.values.runner import AgentTurnOutcome
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentSessionStartInput,
    AgentToolCall,
    AgentUserMessage,
    FrameworkMessage,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.shell import (
    DEADLINE_CONDITION_ID,
    AgentTurnContext,
    DeferredToolExecution,
    SessionTiming,
    ToolExecutionResult,
    create_agent_session_flow,
)
from dex_agents.shell.definitions import (
    AGENT_TOOL_CALLS,
    INTERRUPT_RESOLUTIONS,
    QUEUED_USER_MESSAGES,
    TOOL_CALL_RESULTS,
)
from dex_agents.shell.dex_options import dex_wait
from dex_agents.shell.perform import AttemptRejectedError
from dex_agents.shell.tool_steps import AwaitToolApproval, CallTool, RecordToolFailure
from dex_agents.shell.turn_steps import AwaitUserMessage, ResumeTurn, RunModel, StartAgentSession
from dex_agents.testing import ScriptedAgentRunner
from tests.pure.scenario_support import T0_MS, Session, completed, requested, started_session, tool_call
from tests.shell.step_context import StepContext, moved_to


class CountingRunner:
    """A runner that counts its calls and answers every model call with a final answer (or raises
    ``model_error``)."""

    def __init__(self, model_error: Exception | None = None) -> None:
        self.scripted = ScriptedAgentRunner()
        self.model_error = model_error
        self.built: list[str] = []
        self.model_calls = 0

    def build_user_message(self, text: str) -> FrameworkMessage:
        self.built.append(text)
        return self.scripted.build_user_message(text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        self.model_calls += 1
        if self.model_error is not None:
            raise self.model_error
        return await self.scripted.run_model_step(turn)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return await self.scripted.execute_deferred_tool_call(call)


def resolved_approval_state() -> SessionState:
    """turn-1 waits for the approval of ``w``; ``resolve_interrupt`` already approved it (its resolution is
    queued on ``InterruptResolutions[turn-1:w]`` and the interrupt is no longer pending)."""
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE)))
    session.resolve("turn-1:w", True)
    assert len(session.state.pending_interrupts) == 0
    return session.state


def test_a_resolution_consumed_together_with_the_fired_deadline_timer_decides_the_approval() -> None:
    """Regression: the shell chose the Timer over a resolution the same wait consumed, the core then
    waited again for a resolution that was already gone, and the call waited forever."""
    flow = create_agent_session_flow(ScriptedAgentRunner(), "ApprovalProtocol")
    resolution = AgentInterruptResolution(interrupt_id="turn-1:w", approved=True, rejection_message=None)
    context = StepContext.holding(
        resolved_approval_state(),
        timer_fired=True,
        consumed={(INTERRUPT_RESOLUTIONS.name, "turn-1:w"): [resolution]},
    )

    decision = asyncio.run(AwaitToolApproval(flow.runtime).execute(context.as_context(), "w"))

    assert moved_to(decision) == [("CallSingleAttemptTool", "w")]


def test_run_model_outside_a_turn_is_the_cores_rejection_and_never_reaches_the_runner() -> None:
    """Regression: ``RunModel`` with no running turn was refused by the shell as a runner defect,
    although no runner was involved; the core now rejects it ("no turn is running")."""
    runner = CountingRunner()
    flow = create_agent_session_flow(runner, "RunModelProtocol")
    waiting = started_session()
    waiting.model(completed("done"))
    waiting_state = waiting.state
    assert waiting_state.current_turn_id is None
    context = StepContext.holding(waiting_state)

    with pytest.raises(AttemptRejectedError, match="no turn is running"):
        asyncio.run(RunModel(flow.runtime).execute(context.as_context(), None))
    assert runner.model_calls == 0


@pytest.mark.parametrize(("initial", "built", "next_step"), [
    (None, [], "AwaitUserMessage"),
    ("   ", [], "AwaitUserMessage"),
    ("Where is order 42?", ["Where is order 42?"], "RunModel"),
])
def test_start_agent_session_builds_a_user_message_only_when_the_core_asks(
        initial: str | None, built: list[str], next_step: str) -> None:
    """The shell hands the start input over; the core decides whether the message is blank."""
    runner = CountingRunner()
    flow = create_agent_session_flow(runner, "StartProtocol")
    context = StepContext.holding(SessionState.initial())

    decision = asyncio.run(StartAgentSession(flow.runtime).execute(
        context.as_context(), AgentSessionStartInput(initial_message=initial)))

    assert moved_to(decision) == [(next_step, None)]
    assert runner.built == built


def test_await_user_message_hands_the_core_what_its_wait_consumed() -> None:
    """Two consumed messages (a wait that cannot deliver them) are the core's rejection, not the shell's."""
    waiting = Session()
    waiting.start(None)
    consumed = [AgentUserMessage(text="one"), AgentUserMessage(text="two")]
    context = StepContext.holding(waiting.state, consumed={(QUEUED_USER_MESSAGES.name, None): consumed})
    flow = create_agent_session_flow(CountingRunner(), "AwaitProtocol")

    with pytest.raises(AttemptRejectedError, match="AwaitUserMessage consumed 2 messages, expected 1"):
        asyncio.run(AwaitUserMessage(flow.runtime).execute(context.as_context(), None))


def test_a_failure_route_records_the_recovery_error_dex_reported() -> None:
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ)))
    context = StepContext.holding(session.state, recovery_error=RecoveryErrorInfo(detail="", error_type="WorkerLost"))
    flow = create_agent_session_flow(CountingRunner(), "RouteProtocol")

    decision = asyncio.run(RecordToolFailure(flow.runtime).execute(context.as_context(), "r"))

    assert moved_to(decision) == []
    [(_, _, record)] = [write for write in context.writes if write[1] == (AGENT_TOOL_CALLS.name, "r")]
    assert isinstance(record, AgentToolCall) and (record.status, record.error) == (ToolCallStatus.FAILED, "WorkerLost")


def test_a_model_call_that_raised_fails_the_attempt_with_the_runners_error_as_its_cause() -> None:
    error = RuntimeError("503 Service Unavailable")
    runner = CountingRunner(model_error=error)
    flow = create_agent_session_flow(runner, "ModelFailureProtocol")
    context = StepContext.holding(started_session().state)

    with pytest.raises(AttemptRejectedError, match="503 Service Unavailable") as failed:
        asyncio.run(RunModel(flow.runtime).execute(context.as_context(), None))

    assert failed.value.__cause__ is error, "Dex records the runner's traceback"
    assert [event.type for event in context.events] == ["dex_agents.model_call_failed"]


def test_the_fixed_waits_are_the_flow_tables() -> None:
    """``AwaitUserMessage`` and ``ResumeTurn`` wait on what their rows say (one statement of each wait)."""
    flow = create_agent_session_flow(CountingRunner(), "WaitProtocol")
    context = StepContext().as_context()
    assert asyncio.run(AwaitUserMessage(flow.runtime).wait_for(context, None)) == Wait.until(
        QUEUED_USER_MESSAGES.for_one())
    assert asyncio.run(ResumeTurn(flow.runtime).wait_for(context, 3)) == Wait.until(TOOL_CALL_RESULTS.for_n(3))
    with pytest.raises(ValueError, match="no fixed wait"):
        dex_wait(StepType.AWAIT_TOOL_APPROVAL)


def test_the_approval_wait_is_the_cores_a_deadline_timer_or_the_resolution_alone() -> None:
    session = started_session(config=SessionConfig(interrupt_deadline_ms=90_500))
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE)))
    flow = create_agent_session_flow(CountingRunner(), "ApprovalWaitProtocol", interrupt_deadline_ms=90_500,
                                     timing=SessionTiming(now_ms=lambda: T0_MS))
    resolution = INTERRUPT_RESOLUTIONS.for_one("turn-1:w")
    pending = StepContext.holding(session.state).as_context()
    timer = Timer.by_duration(timedelta(seconds=91), condition_id=DEADLINE_CONDITION_ID)
    assert asyncio.run(AwaitToolApproval(flow.runtime).wait_for(pending, "w")) == Wait.any_of(timer, resolution)
    session.resolve("turn-1:w", True)
    resolved = StepContext.holding(session.state).as_context()
    assert asyncio.run(AwaitToolApproval(flow.runtime).wait_for(resolved, "w")) == Wait.until(resolution)
    assert asyncio.run(AwaitToolApproval(flow.runtime).wait_for(resolved, "ghost")) == Wait.skip_immediately()


def test_a_deciding_step_records_each_inputs_clock_and_the_options_an_attempt_that_fails_records_nothing() -> None:
    """The ``dex_agents.invocation`` history event an export rebuilds the inputs with (issue 20)."""
    clock = iter(range(T0_MS, T0_MS + 100))
    flow = create_agent_session_flow(CountingRunner(), "RecordProtocol", interrupt_deadline_ms=60_000,
                                     max_model_calls_per_turn=7, timing=SessionTiming(now_ms=lambda: next(clock)))
    session = started_session()
    session.model(requested(tool_call("r", ToolEffect.READ)))
    routed = StepContext.holding(session.state, recovery_error=RecoveryErrorInfo(detail="lost", error_type=""))
    asyncio.run(RecordToolFailure(flow.runtime).execute(routed.as_context(), "r"))
    record = decode(str(routed.recorded[INVOCATION_RECORD_EVENT]), InvocationRecord).unwrap()
    assert record == InvocationRecord(now_ms=pvector([T0_MS]), interrupt_deadline_ms=60_000,
                                      max_model_calls_per_turn=7)

    running = StepContext.holding(session.state)
    with pytest.raises(RuntimeError, match="no scripted tool"):  # the tool raised: the attempt fails
        asyncio.run(CallTool(flow.runtime).execute(running.as_context(), "r"))
    assert running.recorded == {}
