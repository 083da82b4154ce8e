"""A single-attempt tool runs only once Dex answered its Step's ``tool_call_started`` event
(``shell.start_confirmation``): the confirmation loop is bounded and fails safe, the reader finds
exactly this attempt's event on a real engine, and a Worker that cannot confirm records the call
``outcome_unknown`` without running the tool."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import grpc
import pytest
from dex import AsyncContext

from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolCallStatus, ToolEffect
from dex_agents.shell.flow import create_agent_session_flow
from dex_agents.shell.start_confirmation import StartConfirmations, StartNotConfirmedError, StartReader, confirm_start
from dex_agents.shell.timing import SessionTiming
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.agents import unique_flow_type
from tests.shell.scenario_flows import answer_tool, call, new_session_id, scripted_runner, tool_log

SINGLE_ATTEMPT: ToolPolicy = ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)
MESSAGE = "Refund order 42"
SCRIPT = {MESSAGE: (ScriptedModelCall(tool_calls=(call("call-refund", "refund", order_id=42),)),
                    ScriptedModelCall(text="Done."))}


class _Context:
    flow_id = "session-1"
    step_execution_id = "CallSingleAttemptTool-1"
    attempt = 1


class _Reader:
    """Answers ``found_on`` (the read that finds the event; 0: never), or raises ``error``."""

    def __init__(self, found_on: int = 0, error: Exception | None = None) -> None:
        self.reads = 0
        self.found_on = found_on
        self.error = error

    def has_started(self, flow_id: str, step_execution_id: str, attempt: int, tool_call_id: str) -> bool:
        self.reads += 1
        if self.error is not None:
            raise self.error
        assert (flow_id, step_execution_id, attempt, tool_call_id) == ("session-1", "CallSingleAttemptTool-1", 1, "c")
        return self.reads == self.found_on


def _confirm(reader: _Reader | None, deadline_seconds: float = 5.0) -> None:
    confirmations = StartConfirmations()
    confirmations.reader = cast(StartReader, reader)
    asyncio.run(confirm_start(cast(AsyncContext, _Context()), confirmations, "c", deadline_seconds=deadline_seconds))


def test_the_start_is_confirmed_once_dex_answers_the_event() -> None:
    reader = _Reader(found_on=3)
    _confirm(reader)
    assert reader.reads == 3


def test_without_a_reader_the_tool_never_runs() -> None:
    with pytest.raises(StartNotConfirmedError, match="session_worker"):
        _confirm(None)


def test_the_confirmation_gives_up_at_its_deadline() -> None:
    reader = _Reader()
    with pytest.raises(StartNotConfirmedError, match="within 0.05 s"):
        _confirm(reader, deadline_seconds=0.05)
    assert reader.reads >= 2


def test_a_read_dex_refuses_fails_safe() -> None:
    error = grpc.RpcError()
    error.code = lambda: grpc.StatusCode.UNAVAILABLE  # type: ignore[method-assign]
    with pytest.raises(StartNotConfirmedError, match="refused"):
        _confirm(_Reader(error=error))


def test_the_reader_finds_this_attempts_event_on_a_real_engine(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = create_agent_session_flow(scripted_runner(tmp_path, SCRIPT, {"refund": answer_tool("refunded")}),
                                     unique_flow_type("Confirm"), tool_policies={"refund": SINGLE_ATTEMPT})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)
    assert tool_log(tmp_path).entries() == [f"refund:{session_id}/turn-1/call-refund"]

    reader = StartReader(environment.server_address, None, flow.get_flow_type(), flow.agent_events.name)
    try:
        assert reader.has_started(session_id, "CallSingleAttemptTool-1", 1, "call-refund") is True
        assert reader.has_started(session_id, "CallSingleAttemptTool-1", 2, "call-refund") is False
        assert reader.has_started(session_id, "CallSingleAttemptTool-2", 1, "call-refund") is False
        assert reader.has_started(session_id, "CallSingleAttemptTool-1", 1, "call-other") is False
    finally:
        reader.close()


def test_a_worker_that_cannot_confirm_records_outcome_unknown_and_never_runs_the_tool(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = create_agent_session_flow(scripted_runner(tmp_path, SCRIPT, {"refund": answer_tool("refunded")}),
                                     unique_flow_type("Unconfirmed"), tool_policies={"refund": SINGLE_ATTEMPT},
                                     timing=SessionTiming(heartbeat_proof_seconds=0.2))
    environment = agent_environment([flow])
    flow.runtime.confirmations.reader = cast(StartReader, _NeverFound())
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)

    assert tool_log(tmp_path).entries() == []
    messages = sessions.snapshot(session_id).messages
    [tool_message] = [m for m in messages if m.tool_call_id == "call-refund" and m.tool_output is not None]
    assert "did not confirm the single-attempt tool's start" in (tool_message.tool_output or "")
    finished = [e for e in sessions.events(session_id) if e.type == "tool_call_finished"]
    assert [(e.step_execution_id, e.payload["status"]) for e in finished] == [
        ("RecordToolOutcomeUnknown-1", ToolCallStatus.OUTCOME_UNKNOWN.value)]


class _NeverFound:
    def has_started(self, flow_id: str, step_execution_id: str, attempt: int, tool_call_id: str) -> bool:
        return False

    def close(self) -> None:
        pass
