"""Conformance scenarios of ordinary turns: text, tool rounds, parallel calls, bad calls, approvals,
structured output, and unusual text. Each asserts what the next model call receives, what is
stored, the Step history and the events."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from dex_agents.pure.machine.texts import FAILED_PREFIX, REJECTED_PREFIX, approval_deadline_passed_message
from dex_agents.pure.values.session import AgentEvent, AgentMessage, MessageRole
from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance, assert_tool_results_follow_calls
from dex_agents.testing.conformance.harness import ConformanceSession
from dex_agents.testing.conformance.model import SeenCall, SeenMessage, assistant, tool_result, user
from dex_agents.testing.conformance.tools import LOOKUP_ORDER, REFUND_ORDER, UPDATE_ADDRESS

STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not_streaming"])


def roles(messages: list[AgentMessage]) -> list[str]:
    return [message.role.value for message in messages]


def of_type(events: list[AgentEvent], event_type: str) -> list[AgentEvent]:
    return [event for event in events if event.type == event_type]


def usage_count(event: AgentEvent, which: str, count: str) -> object:
    """A count of a ``usage_recorded`` event's ``recorded`` or ``session`` usage."""
    usage = event.payload[which]
    assert isinstance(usage, Mapping), f"usage_recorded.{which} is not an object: {usage!r}"
    return usage[count]


def lookup_round(command: str, k: int) -> list[SeenMessage]:
    """Round ``k`` of a lookup command as the next model call must see it."""
    call = SeenCall(script.call_id(command, k, 0), LOOKUP_ORDER, {"order_id": k + 1})
    return [assistant(None, call), tool_result(call.tool_call_id, f"order {k + 1}: shipped")]


def run_turn(conformance: Conformance, text: str, **options: object) -> ConformanceSession:
    session = conformance.session(**options)  # type: ignore[arg-type]
    session.start(text)
    session.wait_for_turns(1)
    for seen in session.model_calls():
        assert_tool_results_follow_calls(seen)
    return session


class TurnConformance:
    """Scenarios of turns that end normally."""

    @STREAMING
    def test_a_text_turn_is_one_model_call_with_deltas_and_usage(self, conformance: Conformance,
                                                                 streaming: bool) -> None:
        session = run_turn(conformance, script.HELLO, streaming=streaming)
        assert session.model_calls() == [[user(script.HELLO)]]
        assert [(m.role, m.text) for m in session.messages()] == [
            (MessageRole.USER, script.HELLO), (MessageRole.ASSISTANT, script.GREETING)]
        assert session.steps() == ["StartAgentSession", "RunModel"]
        events = session.events()
        text = "".join(str(event.payload["text"]) for event in of_type(events, "text_delta"))
        reasoning = "".join(str(event.payload["text"]) for event in of_type(events, "reasoning_delta"))
        assert (text, reasoning) == (script.GREETING, script.REASONING)
        (usage,) = of_type(events, "usage_recorded")
        assert usage_count(usage, "recorded", "requests") == 1
        if not streaming:  # a streaming test model may estimate its tokens
            tokens = (usage_count(usage, "recorded", "input_tokens"), usage_count(usage, "recorded", "output_tokens"))
            assert tokens == (12, 7)
        assert [event.payload["message_count"] for event in of_type(events, "turn_completed")] == [1]

    @STREAMING
    @pytest.mark.parametrize("command", list(script.ROUNDS))
    def test_sequential_tool_rounds_feed_back_each_result_once(self, conformance: Conformance, streaming: bool,
                                                               command: str) -> None:
        rounds = script.ROUNDS[command]
        session = run_turn(conformance, command, streaming=streaming)
        expected: list[SeenMessage] = [user(command)]
        calls = session.model_calls()
        assert len(calls) == rounds + 1
        for k, seen in enumerate(calls):
            assert seen == expected, f"model call {k + 1} received {seen}"
            if k < rounds:
                expected = [*expected, *lookup_round(command, k)]
        answer = script.RESULTS_PREFIX + f"order {rounds}: shipped"
        assert roles(session.messages()) == ["user", *["assistant", "tool"] * rounds, "assistant"]
        assert session.messages()[-1].text == answer
        assert session.steps() == ["StartAgentSession", "RunModel", *["CallTool", "ResumeTurn", "RunModel"] * rounds]
        assert len(session.tool_runs(LOOKUP_ORDER)) == rounds
        usage = of_type(session.events(), "usage_recorded")
        assert [usage_count(event, "session", "requests") for event in usage] == list(range(1, rounds + 2))

    def test_parallel_calls_each_run_once_and_return_in_call_order(self, conformance: Conformance) -> None:
        session = run_turn(conformance, script.PARALLEL)
        first, second = session.model_calls()
        assert first == [user(script.PARALLEL)]
        results = [message for message in second if message.role == "tool"]
        assert [r.tool_call_id for r in results] == [script.call_id(script.PARALLEL, 0, i) for i in range(3)]
        assert session.messages()[-1].text == script.RESULTS_PREFIX + " | ".join(
            ["order 1: shipped", "order 2: shipped", "order 3: address set to 1 Main St"])
        steps = session.steps()
        assert steps.count("CallTool") == 3 and steps[-2:] == ["ResumeTurn", "RunModel"]
        assert (len(session.tool_runs(LOOKUP_ORDER)), len(session.tool_runs(UPDATE_ADDRESS))) == (2, 1)

    def test_an_unknown_tool_fails_without_approval_and_the_model_reads_why(self, conformance: Conformance) -> None:
        session = run_turn(conformance, script.UNKNOWN_TOOL)
        result = session.model_calls()[1][-1]
        assert result.role == "tool" and FAILED_PREFIX + f"Unknown tool {script.MISSING_TOOL!r}" in (result.text or "")
        assert not of_type(session.events(), "interrupt_raised")

    def test_bad_arguments_fail_the_call_and_the_tool_never_runs(self, conformance: Conformance) -> None:
        session = run_turn(conformance, script.BAD_ARGUMENTS)
        result = session.model_calls()[1][-1]
        assert FAILED_PREFIX + f"Invalid arguments for tool {LOOKUP_ORDER!r}" in (result.text or "")
        assert session.tool_runs(LOOKUP_ORDER) == []

    def test_a_rejected_write_never_runs_and_the_model_reads_the_reason(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(script.REFUND)
        interrupt = session.wait_for_interrupt(REFUND_ORDER)
        assert session.resolve(interrupt, approved=False, rejection_message="refunds need a manager")
        session.wait_for_turns(1)
        assert REJECTED_PREFIX + "refunds need a manager" in (session.model_calls()[1][-1].text or "")
        assert session.tool_runs(REFUND_ORDER) == []
        assert "AwaitToolApproval" in session.steps()

    def test_an_approval_deadline_rejects_the_call(self, conformance: Conformance) -> None:
        session = conformance.session(interrupt_deadline_ms=1000)
        session.start(script.REFUND)
        session.wait_for_turns(1)
        assert REJECTED_PREFIX + approval_deadline_passed_message in (session.model_calls()[1][-1].text or "")
        assert session.tool_runs(REFUND_ORDER) == []

    def test_an_approved_write_runs_once(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(script.REFUND)
        interrupt = session.wait_for_interrupt(REFUND_ORDER)
        assert session.tool_runs(REFUND_ORDER) == []
        assert session.resolve(interrupt, approved=True)
        session.wait_for_turns(1)
        assert len(session.tool_runs(REFUND_ORDER)) == 1
        assert session.messages()[-1].text == script.RESULTS_PREFIX + "order 42: refunded 1999"

    def test_structured_output_alone_completes_in_one_model_call(self, conformance: Conformance) -> None:
        session = run_turn(conformance, script.STRUCTURED, structured_output=True)
        assert session.state().completed_turn_count == 1
        assert len(session.model_calls()) == 1
        assert session.steps() == ["StartAgentSession", "RunModel"]
        assert script.STATUS_OK in "".join(message.framework_item for message in session.messages()[1:])

    def test_structured_output_beside_a_function_call_runs_no_tool_inside_the_model_step(
            self, conformance: Conformance) -> None:
        session = conformance.session(structured_output=True)
        session.start(script.STRUCTURED_WITH_REFUND)
        interrupt = session.wait_for_interrupt(REFUND_ORDER)
        assert session.tool_runs(REFUND_ORDER) == []  # deferred, awaiting approval: never run by the framework
        assert session.resolve(interrupt, approved=True)
        session.wait_for_turns(1)
        assert len(session.tool_runs(REFUND_ORDER)) == 1
        second = session.model_calls()[1]
        assert_tool_results_follow_calls(second)
        assert tool_result(script.call_id(script.STRUCTURED_WITH_REFUND, 0, 0), "order 42: refunded 500") in second
        assert session.state().completed_turn_count == 1
        assert script.STATUS_REFUNDED in "".join(message.framework_item for message in session.messages()[-2:])

    @pytest.mark.parametrize("text", ["nul \x00 inside", "emoji \U0001F4E6 and \u00e9 and \u2028"],
                             ids=["nul", "emoji"])
    def test_unusual_text_round_trips_exactly(self, conformance: Conformance, text: str) -> None:
        session = run_turn(conformance, script.ECHO_PREFIX + text)
        assert session.model_calls() == [[user(script.ECHO_PREFIX + text)]]
        assert [m.text for m in session.messages()] == [script.ECHO_PREFIX + text, text]

    def test_a_one_megabyte_message_reaches_the_model_whole(self, conformance: Conformance) -> None:
        text = "\U0001F4E6" + "x" * (1024 * 1024) + "-the-end"
        session = run_turn(conformance, script.MEASURE_PREFIX + text)
        assert session.model_calls() == [[user(script.MEASURE_PREFIX + text)]]
        assert [m.text for m in session.messages()] == [script.MEASURE_PREFIX + text, script.measured(text)]

    def test_a_lone_surrogate_is_refused_and_the_session_goes_on(self, conformance: Conformance) -> None:
        session = run_turn(conformance, script.HELLO)
        try:
            accepted = session.send(script.ECHO_PREFIX + "bad \ud800 text")
        except Exception as error:  # noqa: BLE001 - the refusal may be an RPC error
            assert "surrogate" in str(error)
            accepted = False
        assert accepted is False
        assert session.send(script.ECHO_PREFIX + "fine")
        session.wait_for_turns(2)
        assert session.state().completed_turn_count == 2
        assert [m.text for m in session.messages()][-2:] == [script.ECHO_PREFIX + "fine", "fine"]
        assert all("\ud800" not in (m.text or "") for m in session.messages())


__all__ = ["TurnConformance"]
