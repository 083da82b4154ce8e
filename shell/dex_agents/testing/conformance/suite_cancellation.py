"""Conformance scenarios of an operator cancelling (issue 25, item 2): a turn whose model call is blocked
inside the framework's model is cancelled through Dex and ends canceled, and the next turn's model call
is told; one running tool call is cancelled, the model reads ``cancelled by the user: <reason>`` as its
result and the turn goes on; a Worker SIGKILLed while a cancelled tool runs leaves the session
consistent, the tool never running again."""

from __future__ import annotations

from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance, assert_tool_results_follow_calls
from dex_agents.testing.conformance.model import arm_gate
from dex_agents.testing.conformance.tools import LOOKUP_ORDER, UPDATE_ADDRESS

QUICK_HEARTBEATS_MS = 200
"""A tool Step learns of its cancellation at its next heartbeat: these sessions heartbeat every 0.2 s."""
NOTE_HEADER = "[Dex] The user cancelled the previous turn before it finished."


class CancellationConformance:
    """Scenarios of ``cancel_turn`` and ``cancel_tool_call``."""

    def test_a_turn_cancelled_in_its_model_call_ends_canceled_and_the_next_call_is_told(
            self, conformance: Conformance) -> None:
        session = conformance.session()
        gate = arm_gate(session.state_directory, "model-1")
        session.start(f"{script.ECHO_PREFIX}first")
        gate.wait_until_reached()  # the framework's model call is blocked inside the model
        assert session.send(f"{script.ECHO_PREFIX}second")
        assert session.cancel_turn("the user changed their mind")

        state = session.wait_for_ended_turns(2)
        assert (state.completed_turn_count, state.canceled_turn_count, state.failed_turn_count) == (1, 1, 0)
        assert session.steps() == ["StartAgentSession", "CancelTurn", "AwaitUserMessage", "RunModel"], \
            "the blocked model call was cancelled by Dex: only the next turn's completed"
        calls = session.model_calls()
        assert len(calls) == 2
        first, note, second = calls[1]
        assert (first.role, first.text) == ("user", f"{script.ECHO_PREFIX}first")
        assert note.role == "user" and note.text is not None and note.text.startswith(NOTE_HEADER)
        assert "Reason: the user changed their mind" in note.text
        assert (second.role, second.text) == ("user", f"{script.ECHO_PREFIX}second")
        assert session.messages()[-1].text == "second"
        canceled = [event for event in session.events() if event.type == "dex_agents.turn_canceled"]
        assert [(event.turn_id, event.payload["reason"]) for event in canceled] == [
            ("turn-1", "the user changed their mind")]

    def test_a_cancelled_tool_call_gives_the_model_the_reason_and_the_turn_goes_on(
            self, conformance: Conformance) -> None:
        session = conformance.session(heartbeat_interval_ms=QUICK_HEARTBEATS_MS)
        gate = arm_gate(session.state_directory, f"{LOOKUP_ORDER}-before")
        session.start("one round")
        gate.wait_until_reached()
        call_id = script.call_id("one round", 0, 0)
        assert session.cancel_tool_call(call_id, "the warehouse is offline")
        assert not session.cancel_tool_call(call_id, "twice"), "the call is final already"

        state = session.wait_for_turns(1)
        assert (state.completed_turn_count, state.canceled_turn_count) == (1, 0)
        result = session.model_calls()[-1][-1]
        assert (result.role, result.tool_call_id, result.text) == (
            "tool", call_id, "cancelled by the user: the warehouse is offline")
        assert session.messages()[-1].text == f"{script.RESULTS_PREFIX}cancelled by the user: the warehouse is offline"
        finished = [event for event in session.events() if event.type == "tool_call_finished"]
        assert [event.payload["status"] for event in finished] == ["canceled"]
        assert session.tool_runs(LOOKUP_ORDER) == [], "cancelled before its effect, never run"
        assert "CallTool" not in session.steps()

    def test_a_worker_killed_during_a_cancelled_tool_leaves_the_session_consistent(
            self, conformance: Conformance) -> None:
        session = conformance.session(worker_in_child=True)
        gate = arm_gate(session.state_directory, f"{UPDATE_ADDRESS}-after")
        session.start_worker()
        session.start(script.UPDATE)
        gate.wait_until_reached()  # the write took effect once; its Step has not finished
        assert session.cancel_turn("wrong address")
        session.kill_worker()
        gate.release()
        session.start_worker()

        state = session.wait_for_ended_turns(1)
        assert (state.completed_turn_count, state.canceled_turn_count) == (0, 1)
        assert len(session.tool_runs(UPDATE_ADDRESS)) == 1, "the cancelled write never ran again"
        assert len(session.sessions.snapshot(session.session_id).tool_calls) == 0, "no record left open"
        messages = session.messages()
        assert [message.sequence for message in messages] == list(range(1, len(messages) + 1))
        for seen in session.model_calls():
            assert_tool_results_follow_calls(seen)
        assert "CallTool" not in session.steps() and "CancelTurn" in session.steps()
        # A Step's events are written before it commits: a CancelTurn the killed Worker had begun writes
        # them again when Dex delivers it again (the same Step execution), so read one per execution.
        finished = {(event.step_execution_id, str(event.payload["tool_call_id"])): event.payload["status"]
                    for event in session.events() if event.type == "tool_call_finished"}
        assert list(finished.values()) == ["canceled"]
        assert (session.messages()[-1].text or "").startswith(NOTE_HEADER)
        assert session.send(f"{script.ECHO_PREFIX}again")
        session.wait_for_ended_turns(2)
        assert session.messages()[-1].text == "again", "the session goes on"


__all__ = ["CancellationConformance"]
