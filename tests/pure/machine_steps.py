"""How the machine runs each Step type, as the shell would: consume what the wait delivered, hand the
reducer what the Step loads, perform the tool, then commit and check the Step's decision."""

from __future__ import annotations

from hypothesis import event
from hypothesis import strategies as st
from pyrsistent import pvector

from dex_agents.pure.deadlines import format_instant, is_late, parse_instant
from dex_agents.pure.effects import BuildTurnFailureNote, ExecuteDeferredToolCall
from dex_agents.pure.persistence import StepType
from dex_agents.pure.reducers import SkipWait, WaitForResolution, turn_failure_note
from dex_agents.pure.reducers.model import model_call_cap_error
from dex_agents.pure.runner_values import DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.step_inputs import (
    ApprovalWaitEnded,
    ApprovalWaitOutcome,
    DeadlineTimerFired,
    Invocation,
    ModelCallFailed,
    ModelCallFinished,
    ResolutionReceived,
    SessionInput,
    SingleAttemptToolFailed,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailed,
    UserMessageArrived,
    WaitSkipped,
)
from dex_agents.pure.transition import Transition
from dex_agents.pure.values import MessageRole, ToolCallStatus
from tests.pure.machine_invariants import SessionInvariants
from tests.pure.session_machine import FLOW_ID, SINGLE_ATTEMPT_EFFECTS, PendingStep
from tests.pure.session_strategies import build_user_message, model_messages, runner_tool_requests, small_usages
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

    def _await_user_message(self, step: PendingStep) -> None:
        loaded = self.world.load(step.movement.options)
        message = self.world.queued_user_messages.pop(0)
        arrived = UserMessageArrived(invocation=self.invocation_for(step), message=message, user_message=build_user_message(message.text))
        result = self.reduce_checked(loaded, arrived)
        self.finish(step)
        moved = self.commit([arrived], result, step.movement.options, arrived.invocation)
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
        finished = ModelCallFinished(invocation=self.invocation_for(step), outcome=outcome)
        result = self.reduce_checked(loaded, finished)
        capped = isinstance(outcome, ToolCallsRequested) and (
            loaded.turn_model_call_count + 1 >= self.config.max_model_calls_per_turn)
        if capped:
            event(f"model: cap of {self.config.max_model_calls_per_turn} reached")
            self.run_model_fails_the_turn(step, finished, result, model_call_cap_error(self.config.max_model_calls_per_turn))
            self.record_usage(usage)
            assert self.world.tool_calls == {}, "the capped call deferred nothing"
            return
        self.finish(step)
        moved = self.commit([finished], result, step.movement.options, finished.invocation)
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
        deadline = None if raised_at is None else format_instant(finished.invocation.now_ms + raised_at)
        for call in outcome.tool_calls:
            record = self.record_of(call.tool_call_id)
            assert record.interrupt_id == (f"{turn_id}:{call.tool_call_id}" if call.policy.requires_approval else None)
            if record.interrupt_id is not None:
                interrupt = next(i for i in self.world.pending_interrupts if i.interrupt_id == record.interrupt_id)
                assert interrupt.deadline == deadline, "deadline = raise time + interrupt_deadline_ms, ISO-8601 ms Z"

    def run_model_fails_the_turn(self, step: PendingStep, fact: ModelCallFinished | ModelCallFailed,
                                 first: Transition, error: str) -> None:
        """``RunModel`` failed its own turn with ``error``: at once, or after the runner built the note
        (``BuildTurnFailureNote``, whose follow-up ``TurnFailed`` the shell reduces in the same attempt)."""
        invocation: Invocation = fact.invocation
        loaded_turn = None if self.world.agent_state is None else self.world.agent_state.current_turn_id
        inputs: list[SessionInput] = [fact]
        result, prefix = first, first.effects[:0]
        asked = first.effects[-1]
        if isinstance(asked, BuildTurnFailureNote):
            assert (asked.note, asked.recovery_error) == (turn_failure_note(first.state), error)
            followed = TurnFailed(invocation=invocation, recovery_error=error,
                                  failure_note_message=build_user_message(asked.note))
            result, prefix = self.reduce_checked(first.state, followed), first.effects[:-1]
            inputs.append(followed)
        else:
            assert turn_failure_note(first.state) is None, "a due note is always built by the runner"
        self.finish(step)
        moved = self.commit(inputs, result, step.movement.options, invocation, prefix=prefix)
        event(f"RunModel failed its turn {'with' if len(inputs) == 2 else 'without'} a failure note")
        assert [m.step_type for m in moved] == [StepType.AWAIT_USER_MESSAGE]
        state = self.world.agent_state
        assert state is not None and state.last_turn_error == error and state.current_turn_id is None
        failed = [e for e in self.world.events if e.type == "turn_failed" and e.turn_id == loaded_turn]
        assert [e.payload["error"] for e in failed] == [error]
        assert self.world.turn_model_call_count is None and self.world.framework_run_state is None

    def _await_tool_approval(self, step: PendingStep, early_timer: bool) -> None:
        wait = step.wait
        outcome: ApprovalWaitOutcome
        if isinstance(wait, SkipWait):
            outcome = WaitSkipped()
        else:
            assert isinstance(wait, WaitForResolution)
            timer_due = step.timer_due_ms is not None and step.timer_due_ms <= self.now_ms
            if timer_due or early_timer:
                outcome = DeadlineTimerFired()
            else:
                outcome = ResolutionReceived(resolution=self.world.interrupt_resolutions[wait.interrupt_id].pop(0))
        loaded = self.world.load(step.movement.options)
        record = loaded.tool_calls[step.tool_call_id]
        ended = ApprovalWaitEnded(invocation=self.invocation_for(step), tool_call_id=step.tool_call_id, outcome=outcome)
        result = self.reduce_checked(loaded, ended)
        self.finish(step)
        moved = self.commit([ended], result, step.movement.options, ended.invocation)
        after = self.record_of(step.tool_call_id)
        event(f"approval: {type(outcome).__name__}{' early' if early_timer else ''} -> {after.status.value}")
        if after.status is ToolCallStatus.PENDING:
            assert [(m.step_type, m.input) for m in moved] == [(TOOL_STEP_BY_EFFECT[record.effect], record.tool_call_id)]
        elif after.status is ToolCallStatus.REJECTED:
            assert moved == []
            if isinstance(outcome, ResolutionReceived):
                assert after.rejection_message == outcome.resolution.rejection_message
            else:
                assert after.rejection_message == "approval deadline passed"
                deadline = None if record.interrupt_id is None else loaded.pending_interrupt(record.interrupt_id)
                assert deadline is not None and deadline.deadline is not None
                assert is_late(self.now_ms, parse_instant(deadline.deadline)), "rejected before the deadline"
        else:
            assert after.status is ToolCallStatus.AWAITING_APPROVAL
            assert [(m.step_type, m.input) for m in moved] == [(StepType.AWAIT_TOOL_APPROVAL, record.tool_call_id)]

    def _call_tool(self, step: PendingStep, outcome: str) -> None:
        loaded = self.world.load(step.movement.options)
        invocation = self.invocation_for(step)
        started = ToolStepStarted(invocation=invocation, tool_call_id=step.tool_call_id, step_type=step.step_type)
        first = self.reduce_checked(loaded, started)
        assert not first.is_rejection, f"tool Step start rejected: {first.effects[0]}"
        if not isinstance(first.effects[-1], ExecuteDeferredToolCall):
            event("tool: final record, ends without running")
            self.finish(step)
            self.commit([started], first, step.movement.options, invocation)
            return
        record = self.record_of(step.tool_call_id)
        assert record.status is ToolCallStatus.PENDING, f"ran a {record.status} call"
        execute = first.effects[-1]
        assert isinstance(execute, ExecuteDeferredToolCall)
        assert execute.tool_call == record
        assert execute.idempotency_key == f"{FLOW_ID}/{record.turn_id}/{record.tool_call_id}", "same key on every attempt"
        key = (record.turn_id, record.tool_call_id)
        self.performed[key] += 1
        if record.effect in SINGLE_ATTEMPT_EFFECTS:
            self.single_attempt_calls.add(key)
            assert self.performed[key] == 1, f"single-attempt call {key} ran twice"
        event(f"tool: {record.effect.value} {outcome} (attempt {step.attempt})")
        if outcome == "crashes":
            self.fail_attempt(step)
            return
        tool_call_id = step.tool_call_id
        final = (
            ToolCallSucceeded(invocation=invocation, tool_call_id=tool_call_id, output=f"output of {tool_call_id}")
            if outcome == "succeeds"
            else ToolExecutionFailed(invocation=invocation, tool_call_id=tool_call_id, error="order not found")
        )
        result = self.reduce_checked(first.state, final)
        self.finish(step)
        self.commit([started, final], result, step.movement.options, invocation, prefix=first.effects[:-1])
        expected = ToolCallStatus.SUCCEEDED if outcome == "succeeds" else ToolCallStatus.FAILED
        assert self.record_of(tool_call_id).status is expected

    def _record_tool_failure(self, step: PendingStep) -> None:
        event(f"failure route: {step.step_type.value} for {self.record_of(step.tool_call_id).effect.value}")
        loaded = self.world.load(step.movement.options)
        invocation = self.invocation_for(step)
        error = f"{step.step_type} after attempts ran out: worker lost"
        recorded = (
            ToolAttemptsExhausted(invocation=invocation, tool_call_id=step.tool_call_id, recovery_error=error)
            if step.step_type is StepType.RECORD_TOOL_FAILURE
            else SingleAttemptToolFailed(invocation=invocation, tool_call_id=step.tool_call_id, recovery_error=error)
        )
        result = self.reduce_checked(loaded, recorded)
        self.finish(step)
        self.commit([recorded], result, step.movement.options, invocation)
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
        result = self.reduce_checked(loaded, arrived)
        self.finish(step)
        moved = self.commit([arrived], result, step.movement.options, arrived.invocation)
        open_records = [r for r in self.world.tool_calls.values() if not r.status.is_final]
        event(f"resume: {'waits again' if open_records else 'runs the model'}")
        if open_records:
            assert [(m.step_type, m.input) for m in moved] == [(StepType.RESUME_TURN, len(open_records))]
        else:
            assert [m.step_type for m in moved] == [StepType.RUN_MODEL], "resumed with open records"

    def _record_turn_failure(self, step: PendingStep) -> None:
        loaded = self.world.load(step.movement.options)
        note = turn_failure_note(loaded)
        failed = TurnFailed(
            invocation=self.invocation_for(step),
            recovery_error="RunModel failed after 3 attempts: 503 Service Unavailable",
            failure_note_message=None if note is None else build_user_message(note),
        )
        count_before = len(self.world.messages)
        failed_turn = loaded.current_turn_id
        result = self.reduce_checked(loaded, failed)
        self.finish(step)
        moved = self.commit([failed], result, step.movement.options, failed.invocation)
        event(f"turn failed {'with' if note else 'without'} a failure note")
        assert [m.step_type for m in moved] == [StepType.AWAIT_USER_MESSAGE]
        assert len(self.world.messages) == count_before + (0 if note is None else 1)
        if note is not None:
            last = max(self.world.messages.values(), key=lambda message: message.sequence)
            assert (last.role, last.text, last.turn_id) == (MessageRole.USER, note, failed_turn), "the note ends the turn"


__all__ = ["SessionSteps"]
