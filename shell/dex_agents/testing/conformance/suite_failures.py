"""Conformance scenarios of turns that fail: retried model failures, errors a retry cannot fix, the
per-turn model call cap, and the turns after them (a failed turn must never poison the session)."""

from __future__ import annotations

from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance, assert_tool_results_follow_calls
from dex_agents.testing.conformance.model import SeenCall, assistant, tool_result, user
from dex_agents.testing.conformance.suite_turns import of_type, roles
from dex_agents.testing.conformance.tools import LOOKUP_ORDER

MODEL_CALL_FAILED = "dex_agents.model_call_failed"


class FailureConformance:
    """Scenarios of failed turns and what follows them."""

    def test_a_failed_turn_then_a_tool_turn_and_a_text_turn_work(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(script.FAIL)
        state = session.wait_for_turns(1)
        assert state.failed_turn_count == 1 and script.RETRYABLE_ERROR in (state.last_turn_error or "")
        assert session.send("one round")
        session.wait_for_turns(2)
        assert session.send(script.HELLO)
        state = session.wait_for_turns(3)
        assert (state.completed_turn_count, state.failed_turn_count) == (2, 1)
        calls = session.model_calls()
        assert calls[:3] == [[user(script.FAIL)]] * 3  # three attempts, the same input
        call = SeenCall(script.call_id("one round", 0, 0), LOOKUP_ORDER, {"order_id": 1})
        turn_two = [user(script.FAIL), user("one round")]
        assert calls[3] == turn_two
        assert calls[4] == [*turn_two, assistant(None, call), tool_result(call.tool_call_id, "order 1: shipped")]
        answer = script.RESULTS_PREFIX + "order 1: shipped"
        assert calls[5] == [*calls[4], assistant(answer), user(script.HELLO)]
        assert len(calls) == 6
        for seen in calls:
            assert_tool_results_follow_calls(seen)
        assert roles(session.messages()) == ["user", "user", "assistant", "tool", "assistant", "user", "assistant"]
        assert len(session.tool_runs(LOOKUP_ORDER)) == 1
        completed = [event.payload["message_count"] for event in of_type(session.events(), "turn_completed")]
        assert completed == [3, 1]

    def test_each_failed_model_attempt_is_an_event_before_the_next_attempt(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(script.FAIL)
        session.wait_for_turns(1)
        events = session.events()
        types = [event.type for event in events if event.type in {MODEL_CALL_FAILED, "turn_failed"}]
        assert types == [MODEL_CALL_FAILED] * 3 + ["turn_failed"]
        failed = of_type(events, MODEL_CALL_FAILED)
        assert [event.payload["retrying"] for event in failed] == [True, True, False]
        assert [event.attempt for event in failed] == [1, 2, 3]
        assert all(script.RETRYABLE_ERROR in str(event.payload["error"]) for event in failed)

    def test_an_error_a_retry_cannot_fix_fails_the_turn_at_once(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(script.FAIL_PERMANENTLY)
        state = session.wait_for_turns(1)
        assert state.failed_turn_count == 1 and script.PERMANENT_ERROR in (state.last_turn_error or "")
        assert len(session.model_calls()) == 1
        (failed,) = of_type(session.events(), MODEL_CALL_FAILED)
        assert failed.payload["retrying"] is False
        assert session.steps().count("RunModel") == 1
        assert session.send(script.HELLO)
        assert session.wait_for_turns(2).completed_turn_count == 1

    def test_a_turn_that_keeps_calling_tools_stops_at_the_model_call_cap(self, conformance: Conformance) -> None:
        session = conformance.session(max_model_calls_per_turn=3)
        session.start(script.LOOP)
        state = session.wait_for_turns(1)
        assert state.failed_turn_count == 1 and "max_model_calls_per_turn" in (state.last_turn_error or "")
        assert len(session.model_calls()) == 3
        assert len(session.tool_runs(LOOKUP_ORDER)) == 2
        assert session.send(script.HELLO)
        assert session.wait_for_turns(2).completed_turn_count == 1


__all__ = ["MODEL_CALL_FAILED", "FailureConformance"]
