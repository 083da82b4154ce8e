"""How the machine runs each Step type, as the shell would: consume what the wait delivered, hand the
reducer what the Step loads, perform the tool, then commit and check the Step's decision."""

from __future__ import annotations

from hypothesis import event
from hypothesis import strategies as st
from pyrsistent import pvector

from dex_agents.pure.machine.deadlines import format_instant, is_late, parse_instant
from dex_agents.pure.machine.endings import (
    BuildUserMessage,
    CallModel,
    ExecuteDeferredToolCall,
    Request,
    SendHeartbeat,
    SkipWait,
    WaitForResolution,
)
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.texts import model_call_cap_error
from dex_agents.pure.machine.reducers.turn import turn_failure_note
from dex_agents.pure.values.runner import DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    ApprovalWaitEnded,
    Invocation,
    ModelAttemptsExhausted,
    ModelCallFinished,
    ModelStepStarted,
    RecoveryError,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailureNote,
    UserMessageArrived,
)
from dex_agents.pure.values.session import AgentInterruptResolution, MessageRole, ToolCallStatus
from tests.pure.machine_invariants import SessionInvariants
from tests.pure.session_machine import FLOW_ID, SINGLE_ATTEMPT_EFFECTS, Attempt, PendingStep
from tests.pure.session_strategies import model_messages, runner_tool_requests, small_usages
from tests.pure.spec_tables import EXHAUSTED_STATUS_BY_EFFECT, TOOL_STEP_BY_EFFECT, expected_policy


class SessionSteps(SessionInvariants):
    """One method per Step type; each runs one attempt and commits it (or fails it)."""

    def _run(self, step: PendingStep, data: st.DataObject) -> None:
        match step.step_type:
            case StepType.AWAIT_USER_MESSAGE:
                self._await_user_message(step)
            case StepType.RUN_MODEL:
                self._run_model(step, data)
            case StepType.AWAIT_TOOL_APPROVAL:
                self._await_tool_approval(step, early_timer=False)
            case StepType.CALL_TOOL | StepType.CALL_SINGLE_ATTEMPT_TOOL:
                self._call_tool(step, data.draw(st.sampled_from(["succeeds", "tool_error", "crashes"]), label="tool"))
            case StepType.RECORD_TOOL_FAILURE | StepType.RECORD_TOOL_OUTCOME_UNKNOWN:
                self._record_tool_failure(step)
            case StepType.RESUME_TURN:
                self._resume_turn(step)
            case StepType.RECORD_TURN_FAILURE:
                self._record_turn_failure(step)
            case StepType.START_AGENT_SESSION:
                raise AssertionError("nothing moves to StartAgentSession")
            case StepType.RECONCILE_TOOL_OUTCOME:
                raise AssertionError("no tool of this machine has a reconcile")
            case StepType.COMPACT_HISTORY:
                raise AssertionError("the machine's sessions do not compact (test_scenarios_compaction does)")
            case StepType.CANCEL_TURN | StepType.RECORD_TOOL_CANCELLATION:
                raise AssertionError("no operator cancels in this machine (test_scenarios_cancellation does)")
            case StepType.AWAIT_SUB_AGENT:
                raise AssertionError("no tool of this machine is a sub-agent (test_scenarios_subagents has them)")

    def _await_user_message(self, step: PendingStep) -> None:
        loaded = self.world.load(step.movement.options)
        message = self.world.queued_user_messages.pop(0)
        arrived = UserMessageArrived(invocation=self.invocation_for(step), consumed=pvector([message]))
        attempt = self.run_attempt(loaded, arrived)
        assert [type(r) for r in attempt.requests] == [BuildUserMessage], "the runner builds the user message"
        self.finish(step)
        moved = self.commit(attempt, step.movement.options, arrived.invocation)
        assert [m.step_type for m in moved] == [StepType.RUN_MODEL]

    def _run_model(self, step: PendingStep, data: st.DataObject) -> None:
        loaded = self.world.load(step.movement.options)
        assert all(record.status.is_final for record in loaded.tool_calls.values()), "RunModel runs with open records"
        agent_state = loaded.agent_state
        assert agent_state is not None and agent_state.current_turn_sequence is not None
        user_message = loaded.messages[agent_state.current_turn_sequence - 1]
        assert (user_message.role, user_message.turn_id) == (MessageRole.USER, agent_state.current_turn_id), "the turn's user message"
        assert loaded.framework_run_state == (self.last_run_state if loaded.tool_calls else None), "run state of the turn's last request"
        usage = data.draw(small_usages, label="usage")
        if data.draw(st.booleans(), label="final answer"):
            outcome: TurnCompleted | ToolCallsRequested = TurnCompleted(
                new_messages=pvector(data.draw(st.lists(model_messages, max_size=3), label="messages")), usage=usage
            )
        else:
            requests = data.draw(st.lists(runner_tool_requests, min_size=1, max_size=3), label="calls")
            first = len(loaded.tool_calls) + 1
            calls = []
            for i, (tool_name, framework_effect) in enumerate(requests):
                policy = self.config.resolve_tool_policy(tool_name, framework_effect)
                assert policy == expected_policy(tool_name, framework_effect, self.config.tool_policies, self.config.default_tool_effect)
                calls.append(
                    DeferredToolCall(
                        tool_call_id=f"call-{first + i}", tool_name=tool_name, arguments=f'{{"n":{first + i}}}', policy=policy
                    )
                )
            outcome = ToolCallsRequested(framework_run_state=f"run-state-{first}", tool_calls=pvector(calls), usage=usage)
            self.last_run_state = outcome.framework_run_state
        invocation = self.invocation_for(step)

        def model_answers(request: Request, now: Invocation) -> StepInput | None:
            return ModelCallFinished(invocation=now, outcome=outcome) if isinstance(request, CallModel) else None

        attempt = self.run_attempt(loaded, ModelStepStarted(invocation=invocation), model_answers)
        self.check_model_call_view(loaded, attempt)
        capped = isinstance(outcome, ToolCallsRequested) and (
            loaded.turn_model_call_count + 1 >= self.config.max_model_calls_per_turn)
        if capped:
            event(f"model: cap of {self.config.max_model_calls_per_turn} reached")
            self.run_model_fails_the_turn(step, loaded, attempt, model_call_cap_error(self.config.max_model_calls_per_turn))
            self.record_usage(usage)
            assert self.world.tool_calls == {}, "the capped call deferred nothing"
            return
        self.finish(step)
        moved = self.commit(attempt, step.movement.options, invocation)
        self.record_usage(usage)
        event(f"model: {type(outcome).__name__}{' (resumed turn)' if loaded.framework_run_state else ''}")
        if isinstance(outcome, TurnCompleted):
            assert [m.step_type for m in moved] == [StepType.AWAIT_USER_MESSAGE]
            return
        expected = [
            (StepType.AWAIT_TOOL_APPROVAL if call.policy.requires_approval else TOOL_STEP_BY_EFFECT[call.policy.effect], call.tool_call_id)
            for call in outcome.tool_calls
        ]
        assert [(m.step_type, m.input) for m in moved] == [*expected, (StepType.RESUME_TURN, len(outcome.tool_calls))]
        turn_id = self.world.agent_state.current_turn_id if self.world.agent_state else None
        assert self.world.turn_model_call_count == loaded.turn_model_call_count + 1, "one more model call counted"
        raised_at = self.config.interrupt_deadline_ms
        deadline = None if raised_at is None else format_instant(invocation.now_ms + raised_at)
        for call in outcome.tool_calls:
            record = self.record_of(call.tool_call_id)
            assert record.interrupt_id == (f"{turn_id}:{call.tool_call_id}" if call.policy.requires_approval else None)
            if record.interrupt_id is not None:
                interrupt = next(i for i in self.world.pending_interrupts if i.interrupt_id == record.interrupt_id)
                assert interrupt.deadline == deadline, "deadline = raise time + interrupt_deadline_ms, ISO-8601 ms Z"

    def check_model_call_view(self, loaded: SessionState, attempt: Attempt) -> None:
        """``RunModel`` asks for the model call with what it loaded: every message, the run state and the
        turn's records in deferral order."""
        asked = attempt.requests[0]
        assert isinstance(asked, CallModel), f"RunModel asked {asked} first"
        assert loaded.agent_state is not None and asked.turn_id == loaded.agent_state.current_turn_id
        assert list(asked.messages) == sorted(self.world.messages.values(), key=lambda m: m.sequence)
        assert asked.framework_run_state == loaded.framework_run_state
        assert list(asked.tool_calls) == sorted(self.world.tool_calls.values(), key=lambda r: r.deferral_order)

    def run_model_fails_the_turn(self, step: PendingStep, loaded: SessionState, attempt: Attempt, error: str) -> None:
        """``RunModel`` failed its own turn with ``error``: at once, or after the runner built the note
        (``BuildUserMessage(TurnFailureNote)``, whose follow-up the shell reduces in the same attempt)."""
        invocation: Invocation = attempt.inputs[0].invocation
        loaded_turn = None if self.world.agent_state is None else self.world.agent_state.current_turn_id
        notes = [r for r in attempt.requests if isinstance(r, BuildUserMessage)]
        note = turn_failure_note(loaded)
        if note is None:
            assert notes == [], "no note is asked for when no record is final"
        else:
            [asked] = notes
            assert asked.text == note, "the note of the turn's final records"
            assert isinstance(asked.purpose, TurnFailureNote) and asked.purpose.error == error
        self.finish(step)
        moved = self.commit(attempt, step.movement.options, invocation)
        event(f"RunModel failed its turn {'with' if notes else 'without'} a failure note")
        assert [m.step_type for m in moved] == [StepType.AWAIT_USER_MESSAGE]
        state = self.world.agent_state
        assert state is not None and state.last_turn_error == error and state.current_turn_id is None
        failed = [e for e in self.world.events if e.type == "turn_failed" and e.turn_id == loaded_turn]
        assert [e.payload["error"] for e in failed] == [error]
        assert self.world.turn_model_call_count is None and self.world.framework_run_state is None

    def _await_tool_approval(self, step: PendingStep, early_timer: bool, with_resolution: bool = False) -> None:
        """Run the approval Step: what ended its wait is the Timer (due, or ``early_timer``), a resolution,
        or both (``with_resolution``: Dex consumed the resolution in the same wait as the Timer)."""
        wait = step.wait
        timer_fired = False
        resolutions: list[AgentInterruptResolution] = []
        if not isinstance(wait, SkipWait):
            assert isinstance(wait, WaitForResolution)
            timer_due = step.timer_due_ms is not None and step.timer_due_ms <= self.now_ms
            timer_fired = timer_due or early_timer
            if not timer_fired or with_resolution:
                resolutions.append(self.world.interrupt_resolutions[wait.interrupt_id].pop(0))
        loaded = self.world.load(step.movement.options)
        record = loaded.tool_calls[step.tool_call_id]
        ended = ApprovalWaitEnded(invocation=self.invocation_for(step), tool_call_id=step.tool_call_id,
                                  timer_fired=timer_fired, resolutions=pvector(resolutions))
        attempt = self.run_attempt(loaded, ended)
        self.finish(step)
        moved = self.commit(attempt, step.movement.options, ended.invocation)
        after = self.record_of(step.tool_call_id)
        ended_by = " and ".join(([("early " if early_timer else "") + "timer"] if timer_fired else [])
                                + (["resolution"] if resolutions else [])) or "skipped wait"
        event(f"approval: {ended_by} -> {after.status.value}")
        if after.status is ToolCallStatus.PENDING:
            assert resolutions and resolutions[0].approved, "approved without a resolution"
            assert [(m.step_type, m.input) for m in moved] == [(TOOL_STEP_BY_EFFECT[record.effect], record.tool_call_id)]
        elif after.status is ToolCallStatus.REJECTED:
            assert moved == []
            if resolutions:
                assert after.rejection_message == resolutions[0].rejection_message, "the consumed resolution decides"
            else:
                assert after.rejection_message == "approval deadline passed"
                deadline = None if record.interrupt_id is None else loaded.pending_interrupt(record.interrupt_id)
                assert deadline is not None and deadline.deadline is not None
                assert is_late(self.now_ms, parse_instant(deadline.deadline)), "rejected before the deadline"
        else:
            assert after.status is ToolCallStatus.AWAITING_APPROVAL and not resolutions, "a consumed resolution was dropped"
            assert [(m.step_type, m.input) for m in moved] == [(StepType.AWAIT_TOOL_APPROVAL, record.tool_call_id)]

    def _call_tool(self, step: PendingStep, outcome: str) -> None:
        loaded = self.world.load(step.movement.options)
        invocation = self.invocation_for(step)
        tool_call_id = step.tool_call_id

        def tool_answers(request: Request, now: Invocation) -> StepInput | None:
            if not isinstance(request, ExecuteDeferredToolCall) or outcome == "crashes":
                return None
            if outcome == "succeeds":
                return ToolCallSucceeded(invocation=now, tool_call_id=tool_call_id, output=f"output of {tool_call_id}")
            return ToolExecutionFailed(invocation=now, tool_call_id=tool_call_id, error="order not found")

        started = ToolStepStarted(invocation=invocation, tool_call_id=tool_call_id, step_type=step.step_type)
        attempt = self.run_attempt(loaded, started, tool_answers)
        assert not attempt.last.is_rejection, f"tool Step start rejected: {attempt.last.ending}"
        executed = [r for r in attempt.requests if isinstance(r, ExecuteDeferredToolCall)]
        if not executed:
            event("tool: final record, ends without running")
            self.finish(step)
            self.commit(attempt, step.movement.options, invocation)
            return
        record = self.record_of(tool_call_id)
        assert record.status is ToolCallStatus.PENDING, f"ran a {record.status} call"
        [execute] = executed
        assert execute.tool_call == record
        assert execute.idempotency_key == f"{FLOW_ID}/{record.turn_id}/{record.tool_call_id}", "same key on every attempt"
        key = (record.turn_id, record.tool_call_id)
        self.performed[key] += 1
        heartbeats = [r for r in attempt.requests if isinstance(r, SendHeartbeat)]
        if record.effect in SINGLE_ATTEMPT_EFFECTS:
            self.single_attempt_calls.add(key)
            assert self.performed[key] == 1, f"single-attempt call {key} ran twice"
            assert attempt.requests.index(heartbeats[0]) < attempt.requests.index(execute), "heartbeat proven first"
        else:
            assert heartbeats == [], "a retried call runs at once"
        event(f"tool: {record.effect.value} {outcome} (attempt {step.attempt})")
        if outcome == "crashes":
            self.fail_attempt(step)
            return
        self.finish(step)
        self.commit(attempt, step.movement.options, invocation)
        expected = ToolCallStatus.SUCCEEDED if outcome == "succeeds" else ToolCallStatus.FAILED
        assert self.record_of(tool_call_id).status is expected

    def _record_tool_failure(self, step: PendingStep) -> None:
        event(f"failure route: {step.step_type.value} for {self.record_of(step.tool_call_id).effect.value}")
        loaded = self.world.load(step.movement.options)
        invocation = self.invocation_for(step)
        error = f"{step.step_type} after attempts ran out: worker lost"
        recovery = RecoveryError(detail=error, error_type="WorkerLost")
        recorded = (
            ToolAttemptsExhausted(invocation=invocation, tool_call_id=step.tool_call_id, recovery_error=recovery)
            if step.step_type is StepType.RECORD_TOOL_FAILURE
            else SingleAttemptToolFailed(invocation=invocation, tool_call_id=step.tool_call_id, recovery_error=recovery)
        )
        attempt = self.run_attempt(loaded, recorded)
        self.finish(step)
        self.commit(attempt, step.movement.options, invocation)
        record = self.record_of(step.tool_call_id)
        if step.step_type is StepType.RECORD_TOOL_FAILURE:
            assert record.status is EXHAUSTED_STATUS_BY_EFFECT[record.effect]
        else:
            assert record.status is ToolCallStatus.OUTCOME_UNKNOWN
        assert record.error == error

    def _resume_turn(self, step: PendingStep) -> None:
        expected = step.movement.input
        assert isinstance(expected, int)
        loaded = self.world.load(step.movement.options)
        del self.world.tool_call_results[:expected]
        arrived = ToolResultsArrived(invocation=self.invocation_for(step), expected=expected)
        attempt = self.run_attempt(loaded, arrived)
        self.finish(step)
        moved = self.commit(attempt, step.movement.options, arrived.invocation)
        open_records = [r for r in self.world.tool_calls.values() if not r.status.is_final]
        event(f"resume: {'waits again' if open_records else 'runs the model'}")
        if open_records:
            assert [(m.step_type, m.input) for m in moved] == [(StepType.RESUME_TURN, len(open_records))]
        else:
            assert [m.step_type for m in moved] == [StepType.RUN_MODEL], "resumed with open records"

    def _record_turn_failure(self, step: PendingStep) -> None:
        loaded = self.world.load(step.movement.options)
        note = turn_failure_note(loaded)
        error = "RunModel failed after 3 attempts: 503 Service Unavailable"
        failed = ModelAttemptsExhausted(
            invocation=self.invocation_for(step), recovery_error=RecoveryError(detail=error, error_type="RuntimeError")
        )
        count_before = len(self.world.messages)
        failed_turn = loaded.current_turn_id
        attempt = self.run_attempt(loaded, failed)
        assert len(attempt.requests) == (0 if note is None else 1), "the note is asked for exactly when it is due"
        self.finish(step)
        moved = self.commit(attempt, step.movement.options, failed.invocation)
        event(f"turn failed {'with' if note else 'without'} a failure note")
        assert [m.step_type for m in moved] == [StepType.AWAIT_USER_MESSAGE]
        assert self.world.agent_state is not None and self.world.agent_state.last_turn_error == error
        assert len(self.world.messages) == count_before + (0 if note is None else 1)
        if note is not None:
            last = max(self.world.messages.values(), key=lambda message: message.sequence)
            assert (last.role, last.text, last.turn_id) == (MessageRole.USER, note, failed_turn), "the note ends the turn"


__all__ = ["SessionSteps"]
