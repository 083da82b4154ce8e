"""The session state machine's invariants, checked after every rule, and its end-of-run replay check.

* Message sequences start at 1 with no gaps; turn counters agree; turn ids count up.
* Replaying the recorded inputs (on the full state) gives exactly the world the effects built.
* Pending interrupts match awaiting records; usage is the sum of what was recorded.
* Each call publishes at most one ``ToolCallCompleted`` (exactly one before its turn is cleared, checked
  in ``commit``); a single-attempt call is performed at most once.
* No wait can hang; events match the records; one main-line Step matches the status; every open record
  has exactly one Step and records belong to the running turn.
"""

from __future__ import annotations

from collections import Counter

from hypothesis.stateful import invariant

from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.endings import WaitForResolution
from dex_agents.pure.machine.reducers import snapshot_of
from dex_agents.pure.offline.replay import replay, replay_snapshot
from dex_agents.pure.values.session import AgentStatus, AgentUsage, ToolCallStatus
from tests.pure.session_machine import MAIN_LINE, SessionMachineBase


class SessionInvariants(SessionMachineBase):
    """The invariants (Hypothesis collects them from the class hierarchy)."""

    @invariant()
    def message_sequences_start_at_one_without_gaps(self) -> None:
        count = 0 if self.world.agent_state is None else self.world.agent_state.message_count
        assert sorted(self.world.messages) == [message_sequence_key(n) for n in range(1, count + 1)]
        for key, message in self.world.messages.items():
            assert key == message_sequence_key(message.sequence)

    @invariant()
    def turn_counters_agree(self) -> None:
        state = self.world.agent_state
        if state is None:
            return
        running = state.current_turn_id is not None
        assert state.turn_count == state.completed_turn_count + state.failed_turn_count + (1 if running else 0)
        assert (state.status is AgentStatus.WAITING_FOR_USER_MESSAGE) == (not running)
        if running:
            assert state.current_turn_id == f"turn-{state.turn_count}"
            assert state.current_turn_sequence is not None
            assert self.world.messages[message_sequence_key(state.current_turn_sequence)].turn_id == state.current_turn_id

    @invariant()
    def turn_ids_count_up(self) -> None:
        started = [event.turn_id for event in self.world.events if event.type == "turn_started"]
        assert started == [f"turn-{n}" for n in range(1, len(started) + 1)]

    @invariant()
    def replaying_the_inputs_gives_the_world_state(self) -> None:
        assert self.shadow == self.world.full_state()

    @invariant()
    def pending_interrupts_match_awaiting_records(self) -> None:
        pending_ids = [interrupt.interrupt_id for interrupt in self.world.pending_interrupts]
        assert len(pending_ids) == len(set(pending_ids))
        for interrupt in self.world.pending_interrupts:
            record = self.record_of(interrupt.tool_call_id)
            assert record.status is ToolCallStatus.AWAITING_APPROVAL and record.interrupt_id == interrupt.interrupt_id
        for record in self.world.tool_calls.values():
            if record.status is ToolCallStatus.AWAITING_APPROVAL:
                assert record.interrupt_id is not None
                queued = bool(self.world.interrupt_resolutions.get(record.interrupt_id))
                assert (record.interrupt_id in pending_ids) != queued, f"{record.interrupt_id}: pending xor answered"

    @invariant()
    def usage_is_the_sum_of_what_was_recorded(self) -> None:
        assert (self.world.usage or AgentUsage()) == self.recorded_usage

    @invariant()
    def each_call_completes_once_and_single_attempt_calls_run_once(self) -> None:
        assert all(count <= 1 for count in self.world.completions_by_call.values())
        for (turn_id, call_id), count in self.performed.items():
            assert count <= 1 or (turn_id, call_id) not in self.single_attempt_calls, f"{call_id} ran {count} times"

    @invariant()
    def every_waiting_step_can_still_be_woken(self) -> None:
        """No deadlock: each wait can still be satisfied by what the session or its users will do."""
        open_records = sum(1 for record in self.world.tool_calls.values() if not record.status.is_final)
        for step in self.pending:
            if step.step_type is StepType.RESUME_TURN:
                assert isinstance(step.movement.input, int)
                assert step.movement.input <= len(self.world.tool_call_results) + open_records, "ResumeTurn waits forever"
            if isinstance(step.wait, WaitForResolution):
                pending = any(i.interrupt_id == step.wait.interrupt_id for i in self.world.pending_interrupts)
                queued = bool(self.world.interrupt_resolutions.get(step.wait.interrupt_id))
                assert pending or queued or step.timer_due_ms is not None, f"{step.tool_call_id} waits forever"

    @invariant()
    def events_match_the_records(self) -> None:
        """One ``tool_call_finished`` per ``ToolCallCompleted``; one ``tool_call_deferred`` per call."""
        def per_call(event_type: str) -> Counter[tuple[object, object]]:
            return Counter((e.turn_id, e.payload["tool_call_id"]) for e in self.world.events if e.type == event_type)

        assert per_call("tool_call_finished") == Counter(dict(self.world.completions_by_call))
        assert all(count == 1 for count in per_call("tool_call_deferred").values())
        assert all(count == 1 for count in per_call("interrupt_raised").values())
        ended = [e.turn_id for e in self.world.events if e.type in ("turn_completed", "turn_failed")]
        assert len(ended) == len(set(ended)), "a turn ended twice"

    @invariant()
    def one_main_line_step_matches_the_status(self) -> None:
        if self.world.agent_state is None:
            return
        main = [step.step_type for step in self.pending if step.step_type in MAIN_LINE]
        assert len(main) == 1, f"main line steps: {main}"
        expected = {
            StepType.AWAIT_USER_MESSAGE: AgentStatus.WAITING_FOR_USER_MESSAGE,
            StepType.RUN_MODEL: AgentStatus.RUNNING_MODEL,
            StepType.RECORD_TURN_FAILURE: AgentStatus.RUNNING_MODEL,
            StepType.RESUME_TURN: AgentStatus.RUNNING_TOOLS,
        }
        assert self.status is expected[main[0]]

    @invariant()
    def every_open_record_has_exactly_one_step_and_records_belong_to_the_turn(self) -> None:
        state = self.world.agent_state
        turn_id = None if state is None else state.current_turn_id
        for record in self.world.tool_calls.values():
            assert record.turn_id == turn_id
            steps = [step for step in self.pending if step.movement.input == record.tool_call_id]
            assert len(steps) == (0 if record.status.is_final else 1), f"{record.tool_call_id}: {steps}"
        if self.status is AgentStatus.WAITING_FOR_USER_MESSAGE:
            assert self.world.framework_run_state is None and not self.world.tool_calls
        if self.status is AgentStatus.RUNNING_TOOLS:
            assert self.world.framework_run_state is not None and self.world.tool_calls

    def teardown(self) -> None:
        if self.world.agent_state is not None:
            assert replay(self.inputs, self.config) == self.world.full_state()
            assert replay_snapshot(self.inputs, self.config) == snapshot_of(self.world.full_state())



__all__ = ["SessionInvariants"]
