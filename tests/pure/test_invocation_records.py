"""The core decides the invocation record (``reducers.dispatch``): which transitions carry
``RecordInvocation`` and what it holds. The shell only stages what it is given."""

from __future__ import annotations

from pyrsistent import pvector

from dex_agents.pure.machine.compaction import CompactionPolicy
from dex_agents.pure.machine.effects import RecordInvocation
from dex_agents.pure.machine.endings import BuildUserMessage, ExecuteDeferredToolCall, GoToSteps, SendHeartbeat
from dex_agents.pure.machine.invocation_record import RecordedCompaction, invocation_record
from dex_agents.pure.machine.reducers import reduce, reduce_follow_up, reduce_step
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import (
    HeartbeatSent,
    ModelStepStarted,
    SessionStarted,
    ToolCallSucceeded,
    ToolStepStarted,
    UserMessageBuilt,
)
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.session import AgentSessionStartInput, ToolEffect

from tests.pure.scenario_support import T0_MS, Session, invocation, requested, tool_call, user_message

CONFIG = SessionConfig(interrupt_deadline_ms=30_000, max_model_calls_per_turn=7,
                       compaction=CompactionPolicy(trigger_tokens=900))


def recorded(*clocks: int) -> RecordInvocation:
    return RecordInvocation(record=invocation_record(clocks, CONFIG))


def test_a_decision_records_the_clock_of_every_input_of_its_invocation() -> None:
    started = SessionStarted(invocation=invocation(now_ms=1_000), start_input=AgentSessionStartInput(initial_message="hi"))
    asked = reduce_step(SessionState.initial(), CONFIG, started)
    assert isinstance(asked.ending, BuildUserMessage)
    assert asked.record is None and asked.clocks == pvector([1_000])
    built = UserMessageBuilt(invocation=invocation(now_ms=2_500), purpose=asked.ending.purpose, message=user_message("hi"))
    decided = reduce_follow_up(CONFIG, asked, built)
    assert isinstance(decided.ending, GoToSteps)
    assert decided.record == recorded(1_000, 2_500)
    record = decided.record.record
    assert (record.interrupt_deadline_ms, record.max_model_calls_per_turn) == (30_000, 7)
    assert record.compaction == RecordedCompaction(reactive=True, trigger_tokens=900, keep_recent_turns=2)
    assert record.config() == CONFIG


def test_a_tool_step_records_its_heartbeat_and_its_result_clocks() -> None:
    session = Session(config=CONFIG)
    session.start("hi")
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)))
    step_type = StepType.CALL_SINGLE_ATTEMPT_TOOL
    heartbeat = reduce_step(session.state, CONFIG, ToolStepStarted(
        invocation=invocation(now_ms=10), tool_call_id="w", step_type=step_type))
    assert isinstance(heartbeat.ending, SendHeartbeat) and heartbeat.record is None
    run = reduce_follow_up(CONFIG, heartbeat, HeartbeatSent(invocation=invocation(now_ms=20), tool_call_id="w"))
    assert isinstance(run.ending, ExecuteDeferredToolCall) and run.record is None
    done = reduce_follow_up(CONFIG, run, ToolCallSucceeded(invocation=invocation(now_ms=30), tool_call_id="w", output="ok"))
    assert done.record == recorded(10, 20, 30)


def test_a_failed_attempt_records_nothing() -> None:
    rejected = reduce_step(SessionState.initial(), CONFIG, ModelStepStarted(invocation=invocation()))
    assert rejected.fails_attempt and rejected.record is None


def test_a_wait_always_records_its_clock() -> None:
    session = Session(config=CONFIG)
    session.start("hi")
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE)))
    session.wait_for("w")
    assert session.last is not None and session.last.record == recorded(T0_MS)


def test_only_an_rpc_that_writes_and_read_a_clock_records() -> None:
    session = Session(config=CONFIG)
    session.start("hi")
    assert session.send("queued").record is None  # writes, but reads no clock
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE)))
    session.now_ms = T0_MS + 5
    assert session.resolve("turn-1:w", True).record == recorded(T0_MS + 5)
    assert session.resolve("turn-1:w", True).record is None  # answered again: nothing written
    assert session.resolve("nope", True).record is None
    assert session.snapshot().record is None


def test_reduce_gives_a_started_step_input_the_same_record_as_reduce_step() -> None:
    started = SessionStarted(invocation=invocation(now_ms=5), start_input=AgentSessionStartInput(initial_message=None))
    assert reduce(SessionState.initial(), CONFIG, started) == reduce_step(SessionState.initial(), CONFIG, started)
    assert reduce_step(SessionState.initial(), CONFIG, started).record == recorded(5)
