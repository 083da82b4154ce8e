"""Whole sessions driven through ``reduce`` by a Hypothesis ``RuleBasedStateMachine`` acting as the shell.

Rules: the shell runs any Step whose wait is satisfied (``GoToSteps`` decide which exist), the runner
answers ``RunModel`` with a final answer or parallel tool calls of every effect class (with or without
approval), attempts crash (tools after running, model calls) and exhausted attempts take the failure
routes; a model call raises (its event stays, the attempt fails) or raises a non-retryable error (the
turn fails in that attempt); a small per-turn cap on model calls fails turns; the model's runner
defects are injected and must be rejected; users send messages (also during
turns, also blank), answer approvals (approve, reject, unknown, late), read snapshots and pages; the clock
moves and Timers fire, also early.

The pieces: ``session_world`` (Dex's side, fed only by effects), ``session_machine`` (committing the way
the shell does), ``machine_invariants`` (checked after every rule, plus the end-of-run replay),
``machine_steps`` (how each Step type runs) and ``spec_tables`` (the spec's tables, the oracle).
"""

from __future__ import annotations

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule
from pyrsistent import pmap, pvector

from dex_agents.pure.machine.deadlines import is_late, parse_instant
from dex_agents.pure.machine.effects import WriteEvent
from dex_agents.pure.machine.endings import AnswerRpc, CallModel, Request
from dex_agents.pure.machine.paging import clamp_limit
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.reducers import snapshot_of
from dex_agents.pure.machine.reducers.session import is_blank
from dex_agents.pure.values.rpc import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.values.runner import DeferredToolCall, ResolvedToolPolicy, ToolCallsRequested
from dex_agents.pure.machine.endings import WaitForResolution
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ResolveInterruptCalled,
    SendUserMessageCalled,
)
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import (
    Invocation,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    SessionStarted,
    StepInput,
)
from dex_agents.pure.flow.step_options import step_options_for
from dex_agents.pure.machine.transition import RpcTransition
from dex_agents.pure.values.session import AgentSessionStartInput, AgentUsage, ToolCallCompleted, ToolEffect
from tests.pure.machine_steps import SessionSteps
from tests.pure.session_machine import FLOW_ID, Answer, PendingStep, rpc_loads
from tests.pure.session_strategies import MACHINE_TOOL_POLICIES, user_texts
from tests.pure.strategies import tool_effects

RUNNER_DEFECTS = ["empty_run_state", "no_tool_calls", "empty_id", "slash_id", "duplicate_id", "already_recorded"]


def _answer(result: RpcTransition) -> object:
    assert isinstance(result.ending, AnswerRpc)
    return result.ending.output


class SessionMachine(SessionSteps):
    """The rules. Each one is one atomic invocation, as in Dex."""

    @initialize(
        deadline=st.sampled_from([None, None, 0, 1_500, 60_000]),
        initial=st.sampled_from([None, "", " ", "Where is order 42?"]),
        default_effect=tool_effects,
        cap=st.sampled_from([50, 50, 3, 2, 1]),
    )
    def start_session(self, deadline: int | None, initial: str | None, default_effect: ToolEffect, cap: int) -> None:
        self.config = SessionConfig(
            tool_policies=pmap(MACHINE_TOOL_POLICIES),
            default_tool_effect=default_effect,
            interrupt_deadline_ms=deadline,
            max_model_calls_per_turn=cap,
        )
        self.executions += 1
        invocation = Invocation(flow_id=FLOW_ID, step_execution_id=f"se-{self.executions}", attempt=1, now_ms=self.now_ms)
        started = SessionStarted(invocation=invocation, start_input=AgentSessionStartInput(initial_message=initial))
        options = step_options_for(StepType.START_AGENT_SESSION)
        attempt = self.run_attempt(self.world.load(options), started)
        moved = self.commit(attempt, options, invocation)
        blank = is_blank(initial)
        assert len(attempt.requests) == (0 if blank else 1), "the runner builds only a non-blank initial message"
        assert [m.step_type for m in moved] == [StepType.AWAIT_USER_MESSAGE if blank else StepType.RUN_MODEL]

    # -- the shell runs a ready Step -----------------------------------------------------------

    @precondition(lambda self: bool(self.ready_steps()))
    @rule(data=st.data(), count=st.integers(min_value=1, max_value=4))
    def run_ready_steps(self, data: st.DataObject, count: int) -> None:
        """Dex runs up to ``count`` ready Steps, one after the other, in an order Hypothesis picks."""
        for _ in range(count):
            ready = self.ready_steps()
            if not ready:
                return
            self._run(data.draw(st.sampled_from(ready), label="step"), data)

    # -- attempts that fail ---------------------------------------------------------------------

    @precondition(lambda self: bool(self.steps_of(StepType.RUN_MODEL)))
    @rule(defect=st.sampled_from([None, "crash", "non_retryable", *RUNNER_DEFECTS]), attempts=st.sampled_from([1, 3]))
    def model_attempts_fail(self, defect: str | None, attempts: int) -> None:
        """The model call raised (its ``dex_agents.model_call_failed`` stays in the Stream), the Worker
        crashed, or the runner returned a defect (which must be rejected), ``attempts`` times; Dex
        retries, then routes to ``RecordTurnFailure``. A non-retryable error fails the turn at once."""
        step = self.steps_of(StepType.RUN_MODEL)[0]
        for _ in range(attempts):
            if step not in self.pending:
                return
            loaded = self.world.load(step.movement.options)
            invocation = self.invocation_for(step)
            if defect in (None, "non_retryable"):
                def model_raises(request: Request, now: Invocation) -> StepInput | None:
                    if not isinstance(request, CallModel):
                        return None
                    return ModelCallFailed(invocation=now, error="503 Service Unavailable", retryable=defect is None)

                attempt = self.run_attempt(loaded, ModelStepStarted(invocation=invocation), model_raises)
                written = attempt.transitions[1].effects[0]
                assert isinstance(written, WriteEvent) and written.event.type == "dex_agents.model_call_failed"
                assert written.event.payload["retrying"] is (defect is None and step.attempt < 3)
                if defect == "non_retryable":
                    self.run_model_fails_the_turn(step, loaded, attempt, "503 Service Unavailable")
                    return
                self.keep_failed_attempt(attempt)
                event(f"model call raised (attempt {step.attempt})")
            elif defect != "crash" and not (defect == "already_recorded" and not loaded.tool_calls):
                model_is_defective = _model_returns(_defective(str(defect), sorted(loaded.tool_calls)))
                attempt = self.run_attempt(loaded, ModelStepStarted(invocation=invocation), model_is_defective)
                assert attempt.last.is_rejection, f"runner defect {defect} was accepted"
                event(f"runner defect rejected: {defect}")
            self.fail_attempt(step)

    @precondition(lambda self: bool(self.steps_of(StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL)))
    @rule(data=st.data(), attempts=st.sampled_from([1, 3]))
    def tool_attempts_crash_after_running(self, data: st.DataObject, attempts: int) -> None:
        """The tool ran, then the Worker died (or it raised) ``attempts`` times in a row."""
        step = data.draw(st.sampled_from(self.steps_of(StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL)))
        for _ in range(attempts):
            if step not in self.pending:
                return
            self._call_tool(step, "crashes")

    # -- users, time and strays -----------------------------------------------------------------

    @rule(text=user_texts)
    def a_user_sends_a_message(self, text: str) -> None:
        called = SendUserMessageCalled(input=SendUserMessageInput(text=text))
        result = self.reduce_rpc_checked(self.world.load(rpc_loads(called)), called)
        self.commit_rpc(called, result, rpc_loads(called))
        assert _answer(result) is (not is_blank(text))

    @precondition(lambda self: any(r.interrupt_id is not None for r in self.world.tool_calls.values()))
    @rule(data=st.data(), approved=st.booleans(), message=st.sampled_from([None, "no, ask me first", ""]))
    def a_user_resolves_an_interrupt(self, data: st.DataObject, approved: bool, message: str | None) -> None:
        known = [r.interrupt_id for r in self.world.tool_calls.values() if r.interrupt_id is not None]
        interrupt_id = data.draw(st.sampled_from([*known, "turn-1:unknown"]), label="interrupt")
        pending = next((i for i in self.world.pending_interrupts if i.interrupt_id == interrupt_id), None)
        expected = pending is not None and not is_late(self.now_ms, None if pending.deadline is None else parse_instant(pending.deadline))
        called = ResolveInterruptCalled(
            input=ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved, rejection_message=message), now_ms=self.now_ms
        )
        result = self.reduce_rpc_checked(self.world.load(rpc_loads(called)), called)
        self.commit_rpc(called, result, rpc_loads(called))
        event(f"resolve_interrupt: {'pending' if pending else 'not pending'} -> {expected}")
        assert _answer(result) is expected

    def _late_interrupts(self) -> list[str]:
        return [
            i.interrupt_id
            for i in self.world.pending_interrupts
            if i.deadline is not None and is_late(self.now_ms, parse_instant(i.deadline))
        ]

    @precondition(lambda self: bool(self._late_interrupts()))
    @rule(data=st.data(), approved=st.booleans())
    def a_user_answers_too_late(self, data: st.DataObject, approved: bool) -> None:
        """The deadline passed but the Timer's Step has not run yet: the answer must lose."""
        interrupt_id = data.draw(st.sampled_from(self._late_interrupts()))
        called = ResolveInterruptCalled(
            input=ResolveInterruptInput(interrupt_id=interrupt_id, approved=approved, rejection_message=None), now_ms=self.now_ms
        )
        result = self.reduce_rpc_checked(self.world.load(rpc_loads(called)), called)
        self.commit_rpc(called, result, rpc_loads(called))
        assert _answer(result) is False, "a late answer won"

    @rule(data=st.data())
    def a_client_reads(self, data: st.DataObject) -> None:
        """A UI reads the snapshot or a page of messages."""
        if data.draw(st.booleans(), label="snapshot"):
            self._read_snapshot()
        else:
            before = data.draw(st.sampled_from([None, 1, 2, 4, 10**6]), label="before_sequence")
            self._list_messages(before, data.draw(st.sampled_from([None, 0, 1, 3, 500]), label="limit"))

    def _read_snapshot(self) -> None:
        called = AgentSnapshotRequested()
        result = self.reduce_rpc_checked(self.world.load(rpc_loads(called)), called)
        self.commit_rpc(called, result, rpc_loads(called))
        snapshot = _answer(result)
        assert isinstance(snapshot, AgentSnapshot) and snapshot == snapshot_of(self.world.full_state())
        assert [r.deferral_order for r in snapshot.tool_calls] == list(range(len(snapshot.tool_calls)))
        assert snapshot.queued_message_count == len(self.world.queued_user_messages)

    def _list_messages(self, before: int | None, limit: int | None) -> None:
        called = AgentMessagesListed(input=ListAgentMessagesInput(before_sequence=before, limit=limit))
        result = self.reduce_rpc_checked(self.world.load(rpc_loads(called)), called)
        self.commit_rpc(called, result, rpc_loads(called))
        page = _answer(result)
        assert isinstance(page, AgentMessagePage)
        older = [m for m in sorted(self.world.messages.values(), key=lambda m: m.sequence) if before is None or m.sequence < before]
        assert list(page.messages) == older[-clamp_limit(limit) :]
        assert page.next_before_sequence == (page.messages[0].sequence if len(older) > len(page.messages) else None)

    @rule(milliseconds=st.sampled_from([1, 499, 1_000, 1_501, 30_000, 61_000]))
    def time_passes(self, milliseconds: int) -> None:
        self.now_ms += milliseconds

    def _early_timers(self) -> list[PendingStep]:
        return [s for s in self.steps_of(StepType.AWAIT_TOOL_APPROVAL) if s.timer_due_ms is not None and s.timer_due_ms > self.now_ms]

    @precondition(lambda self: bool(self._early_timers()))
    @rule(data=st.data())
    def a_timer_fires_early(self, data: st.DataObject) -> None:
        """Dex's Timer may fire up to a second off; before the deadline the Step must wait again."""
        self._await_tool_approval(data.draw(st.sampled_from(self._early_timers())), early_timer=True)

    def _timers_with_a_resolution(self) -> list[PendingStep]:
        return [
            s for s in self.steps_of(StepType.AWAIT_TOOL_APPROVAL)
            if isinstance(s.wait, WaitForResolution) and s.timer_due_ms is not None
            and self.world.interrupt_resolutions.get(s.wait.interrupt_id)
        ]

    @precondition(lambda self: bool(self._timers_with_a_resolution()))
    @rule(data=st.data())
    def a_timer_fires_together_with_a_resolution(self, data: st.DataObject) -> None:
        """Dex may end one wait with both the Timer and a consumed resolution; the resolution must win
        (no later wait could deliver it again)."""
        self._await_tool_approval(data.draw(st.sampled_from(self._timers_with_a_resolution())), early_timer=True,
                                  with_resolution=True)

    @precondition(lambda self: bool(self.steps_of(StepType.RESUME_TURN)))
    @rule()
    def a_stray_tool_call_result_arrives(self) -> None:
        self.world.tool_call_results.append(ToolCallCompleted(tool_call_id="stray"))


def _model_returns(outcome: ToolCallsRequested) -> Answer:
    def answer(request: Request, now: Invocation) -> StepInput | None:
        return ModelCallFinished(invocation=now, outcome=outcome) if isinstance(request, CallModel) else None

    return answer


def _defective(defect: str, recorded: list[str]) -> ToolCallsRequested:
    def call(tool_call_id: str) -> DeferredToolCall:
        policy = ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)
        return DeferredToolCall(tool_call_id=tool_call_id, tool_name="search", arguments="{}", policy=policy)

    ids = {
        "empty_run_state": ["ok-1"],
        "no_tool_calls": [],
        "empty_id": [""],
        "slash_id": ["a/b"],
        "duplicate_id": ["dup", "dup"],
        "already_recorded": recorded[:1],
    }[defect]
    run_state = "" if defect == "empty_run_state" else "run-state"
    return ToolCallsRequested(framework_run_state=run_state, tool_calls=pvector(call(i) for i in ids), usage=AgentUsage())


SessionMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=50, deadline=None)
TestSessionMachine = SessionMachine.TestCase
