"""The crash-point matrix: the Worker (a child process) is SIGKILLed at each Step boundary and
inside each tool effect class, then a new Worker finishes the session. The spec's crash semantics
must hold: a ``non_idempotent_write`` or ``unclassified`` call runs at most once, and an interrupted
one is recorded ``outcome_unknown`` and the model is told; a read or idempotent write reruns; every
turn ends completed or failed; every model input keeps each tool result right after its call."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dex_agents.pure.machine.texts import OUTCOME_UNKNOWN_PREFIX
from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance, assert_tool_results_follow_calls
from dex_agents.testing.conformance.harness import ConformanceSession
from dex_agents.testing.conformance.model import arm_gate
from dex_agents.testing.conformance.tools import LOOKUP_ORDER, NOTIFY_CUSTOMER, REFUND_ORDER, UPDATE_ADDRESS
from dex_agents.testing.polling import poll_until


@dataclass(frozen=True, slots=True)
class CrashPoint:
    """Kill the Worker when ``gate`` is reached during ``command``'s turn.

    ``runs``: how many times the tool runs in all; ``unknown``: the model reads an unknown outcome.
    """

    command: str
    gate: str
    tool: str
    runs: int
    unknown: bool = False
    approve: bool = False


CRASH_POINTS = {
    "inside_first_model_call": CrashPoint("one round", "model-1", LOOKUP_ORDER, 1),
    "inside_resumed_model_call": CrashPoint("one round", "model-2", LOOKUP_ORDER, 1),
    "read_before_effect": CrashPoint("one round", f"{LOOKUP_ORDER}-before", LOOKUP_ORDER, 1),
    "read_after_effect": CrashPoint("one round", f"{LOOKUP_ORDER}-after", LOOKUP_ORDER, 2),
    "idempotent_write_before_effect": CrashPoint(script.UPDATE, f"{UPDATE_ADDRESS}-before", UPDATE_ADDRESS, 1),
    "idempotent_write_after_effect": CrashPoint(script.UPDATE, f"{UPDATE_ADDRESS}-after", UPDATE_ADDRESS, 2),
    "non_idempotent_write_before_effect": CrashPoint(script.REFUND, f"{REFUND_ORDER}-before", REFUND_ORDER, 0,
                                                     unknown=True, approve=True),
    "non_idempotent_write_after_effect": CrashPoint(script.REFUND, f"{REFUND_ORDER}-after", REFUND_ORDER, 1,
                                                    unknown=True, approve=True),
    "unclassified_before_effect": CrashPoint(script.NOTIFY, f"{NOTIFY_CUSTOMER}-before", NOTIFY_CUSTOMER, 0,
                                             unknown=True, approve=True),
    "unclassified_after_effect": CrashPoint(script.NOTIFY, f"{NOTIFY_CUSTOMER}-after", NOTIFY_CUSTOMER, 1,
                                            unknown=True, approve=True),
}


def wait_until_dex_has_the_tool_start(session: ConformanceSession, tool_name: str) -> None:
    """Wait until the engine committed the tool Step's ``tool_call_started`` event.

    The spec's single-attempt promise holds once the tool Step's first output reached Dex (README,
    "The heartbeat window"): frames still in the killed Worker's socket can be lost with it, and Dex
    then re-delivers the attempt. The crash matrix tests the adapter under that precondition.
    """
    def started() -> bool | None:
        events = session.events()
        return True if any(event.type == "tool_call_started" and event.payload.get("tool_name") == tool_name
                           for event in events) else None

    poll_until(started, timeout=30.0, description=f"tool_call_started of {tool_name} committed")


def assert_session_consistent(session: ConformanceSession, turns: int) -> None:
    """Every turn ended, no record is left open, and every model input kept the tool-result rule."""
    state = session.state()
    assert state.current_turn_id is None and state.completed_turn_count + state.failed_turn_count == turns
    assert len(session.sessions.snapshot(session.session_id).tool_calls) == 0
    messages = session.messages()
    assert [message.sequence for message in messages] == list(range(1, len(messages) + 1))
    for seen in session.model_calls():
        assert_tool_results_follow_calls(seen)


class CrashConformance:
    """SIGKILL of the Worker at every Step boundary and inside each tool effect class."""

    @pytest.mark.parametrize("point", list(CRASH_POINTS))
    def test_a_worker_killed_mid_turn_keeps_the_crash_promise(self, conformance: Conformance, point: str) -> None:
        crash = CRASH_POINTS[point]
        session = conformance.session(worker_in_child=True)
        gate = arm_gate(session.state_directory, crash.gate)
        session.start_worker()
        session.start(crash.command)
        if crash.approve:
            assert session.resolve(session.wait_for_interrupt(crash.tool), approved=True)
        gate.wait_until_reached()
        if not crash.gate.startswith("model-"):
            wait_until_dex_has_the_tool_start(session, crash.tool)
        session.kill_worker()
        gate.release()
        session.start_worker()
        state = session.wait_for_turns(1)
        assert state.completed_turn_count == 1
        assert len(session.tool_runs(crash.tool)) == crash.runs
        result = session.model_calls()[-1][-1]
        assert result.role == "tool"
        assert (OUTCOME_UNKNOWN_PREFIX in (result.text or "")) is crash.unknown
        assert_session_consistent(session, 1)

    def test_a_worker_killed_while_an_approval_waits_runs_the_write_once(self, conformance: Conformance) -> None:
        session = conformance.session(worker_in_child=True)
        session.start_worker()
        session.start(script.REFUND)
        interrupt = session.wait_for_interrupt(REFUND_ORDER)
        session.kill_worker()
        session.start_worker()
        assert session.resolve(interrupt, approved=True)
        session.wait_for_turns(1)
        assert len(session.tool_runs(REFUND_ORDER)) == 1
        assert_session_consistent(session, 1)

    def test_a_worker_killed_between_turns_serves_the_next_turn(self, conformance: Conformance) -> None:
        session = conformance.session(worker_in_child=True)
        session.start_worker()
        session.start("one round")
        session.wait_for_turns(1)
        session.kill_worker()
        session.start_worker()
        assert session.send(script.HELLO)
        session.wait_for_turns(2)
        assert session.messages()[-1].text == script.GREETING
        assert len(session.tool_runs(LOOKUP_ORDER)) == 1
        assert_session_consistent(session, 2)


__all__ = ["CRASH_POINTS", "CrashConformance", "CrashPoint"]
