"""Cancel a turn, or one tool call (issue 25, item 2), on an in-process Worker and the local engine
through the real SDK: a model call blocked in the runner is aborted through Dex's cancellation and the
turn ends canceled, the queued message starts the next turn and its model call reads the note; a
running tool is cancelled at its next heartbeat, the model reads ``cancelled by the user: <reason>``
and the turn goes on; a cancellation that comes after the turn ended answers ``False``."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from dex_agents.client import SessionRefusedError
from dex_agents.pure.machine.rpc_calls import CancelTurnCalled
from dex_agents.pure.values.session import AgentStatus, ToolCallStatus
from dex_agents.serving.gate import FileGate
from dex_agents.shell import AgentSessionFlow
from dex_agents.shell import flow as shell_flow
from dex_agents.shell.driver import drive_rpc
from dex_agents.shell.runner import DeferredToolExecution
from dex_agents.shell.timing import SessionTiming
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.coordination import InvocationLog
from dex_agents.testing.environment import AgentTestEnvironment
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.scripted_runner import ScriptedTool
from dex_agents.testing.session_client import AgentSessionTestClient
from tests.engine.harness import WAIT_SECONDS
from tests.shell.scenario_flows import (
    READ_POLICY,
    call,
    completed_steps,
    new_session_id,
    of_type,
    scripted_runner,
    session_flow,
)

QUICK_HEARTBEATS = SessionTiming(heartbeat_interval_seconds=0.2)
STUCK = "Summarize the archive"
SLOW = "Look up order 42"


def serve(agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
           flow: AgentSessionFlow) -> tuple[AgentTestEnvironment, AgentSessionTestClient]:
    """An environment whose in-process Worker serves ``flow``, and a session client for it."""
    environment = agent_environment([flow])
    return environment, agent_sessions(environment, flow)


def start_until(sessions: AgentSessionTestClient, message: str, gate: FileGate) -> str:
    """A new session started with ``message``, once its model call or tool has reached ``gate``."""
    session_id = new_session_id()
    sessions.start_session(session_id, message)
    gate.wait_until_reached()
    return session_id


def slow_tool_flow(directory: Path, tool: ScriptedTool, answer: str, *, prefix: str) -> AgentSessionFlow:
    """A Flow whose turn for ``SLOW`` calls the read ``slow`` (``tool``, as ``call-slow``), then answers
    ``answer``."""
    script = {SLOW: (ScriptedModelCall(tool_calls=(call("call-slow", "slow", order_id=42),)),
                     ScriptedModelCall(text=answer))}
    return session_flow(scripted_runner(directory, script, {"slow": tool}), prefix=prefix,
                        tool_policies={"slow": READ_POLICY}, timing=QUICK_HEARTBEATS)


def blocking_tool(directory: Path) -> ScriptedTool:
    """A read that blocks at the gate ``tool`` and logs ``started`` and, when Dex cancels it, ``cancelled``."""
    log = InvocationLog(directory, "slow")

    async def tool(_call: DeferredToolExecution) -> str:
        log.record("started")
        try:
            await FileGate(directory, "tool").mark_reached_async()
        except asyncio.CancelledError:
            log.record("cancelled")
            raise
        return "found it"

    return tool


def test_a_turn_canceled_during_its_model_call_ends_canceled_and_the_next_turn_is_told(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    script = {STUCK: (ScriptedModelCall(text="never", gate_before_output="model"),)}
    flow = session_flow(scripted_runner(tmp_path, script), prefix="CancelTurn", timing=QUICK_HEARTBEATS)
    environment, sessions = serve(agent_environment, agent_sessions, flow)
    client = sessions.sessions
    session_id = start_until(sessions, STUCK, FileGate(tmp_path, "model"))
    assert client.send(session_id, "And now?") is True
    with pytest.raises(ValueError, match="reason must not be blank"):
        client.cancel_turn(session_id, "turn-1", " ")
    assert client.cancel_turn(session_id, "turn-2", "wrong turn") is False
    assert client.cancel_turn(session_id, "turn-1", "the archive is huge") is True

    state = sessions.wait_for_turns(session_id, 2)
    assert (state.completed_turn_count, state.canceled_turn_count, state.failed_turn_count) == (1, 1, 0)
    assert state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    assert client.cancel_turn(session_id, "turn-1", "again") is False, "it ended"
    messages = client.snapshot(session_id).messages
    assert [m.turn_id for m in messages] == ["turn-1", "turn-1", "turn-2", "turn-2"]
    note = messages[1].text or ""
    assert note.startswith("[Dex] The user cancelled the previous turn") and "Reason: the archive is huge" in note
    assert messages[3].text == "echo: And now? (3 messages)", "the next model call read the note"
    events = sessions.events(session_id)
    (canceled,) = of_type(events, "dex_agents.turn_canceled")
    assert canceled.turn_id == "turn-1" and canceled.payload["reason"] == "the archive is huge"
    assert not of_type(events, "turn_failed")
    steps = completed_steps(environment.server_address, session_id)
    assert steps == ["StartAgentSession", "CancelTurn", "AwaitUserMessage", "RunModel"], \
        "turn-1's blocked model call was cancelled by Dex: only turn-2's completed"


def test_a_cancelled_tool_call_gives_the_model_the_reason_and_the_turn_goes_on(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = slow_tool_flow(tmp_path, blocking_tool(tmp_path), "Sorry, the lookup was cancelled.", prefix="CancelCall")
    environment, sessions = serve(agent_environment, agent_sessions, flow)
    client = sessions.sessions
    session_id = start_until(sessions, SLOW, FileGate(tmp_path, "tool"))
    with pytest.raises(SessionRefusedError):  # the server's own check of a reason the client could not see
        client.cancel_tool_call(session_id, "call-slow", "\ud800")
    assert client.cancel_tool_call(session_id, "call-unknown", "too slow") is False
    assert client.cancel_tool_call(session_id, "call-slow", "too slow") is True
    assert client.cancel_tool_call(session_id, "call-slow", "too slow") is False, "already final"

    state = sessions.wait_for_completed_turns(session_id, 1)
    assert state.canceled_turn_count == 0
    (result,) = [m for m in client.snapshot(session_id).messages if m.role.value == "tool"]
    assert result.tool_output == "cancelled by the user: too slow"
    assert client.snapshot(session_id).messages[-1].text == "Sorry, the lookup was cancelled."
    finished = of_type(sessions.events(session_id), "tool_call_finished")
    assert [e.payload["status"] for e in finished] == [ToolCallStatus.CANCELED.value]
    log = InvocationLog(tmp_path, "slow")
    sessions.wait_for_state(session_id, lambda _s: log.path.read_text().split() == ["started", "cancelled"],
                            description="the tool to see its cancellation")
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "RecordToolCancellation", "ResumeTurn", "RunModel"], "CallTool never completed"


def stubborn_tool(directory: Path) -> ScriptedTool:
    """A read that ignores its cancellation: it logs it, waits for the gate ``finish`` and answers anyway."""
    log = InvocationLog(directory, "stubborn")

    async def tool(_call: DeferredToolExecution) -> str:
        log.record("started")
        try:
            await FileGate(directory, "tool").mark_reached_async()
        except asyncio.CancelledError:
            log.record("cancelled")
            await FileGate(directory, "finish").mark_reached_async()
            log.record("answered late")
        return "found it anyway"

    return tool


def test_a_step_that_finishes_after_its_cancellation_commits_nothing(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = slow_tool_flow(tmp_path, stubborn_tool(tmp_path), "Cancelled, then.", prefix="CancelLate")
    environment, sessions = serve(agent_environment, agent_sessions, flow)
    client = sessions.sessions
    session_id = start_until(sessions, SLOW, FileGate(tmp_path, "tool"))
    assert client.cancel_tool_call(session_id, "call-slow", "not needed") is True
    finish = FileGate(tmp_path, "finish")
    finish.wait_until_reached()  # the tool saw its cancellation and still runs
    sessions.wait_for_completed_turns(session_id, 1)  # the turn went on without it
    finish.release()
    log = InvocationLog(tmp_path, "stubborn")
    sessions.wait_for_state(session_id, lambda _s: "answered late" in log.entries(),
                            description="the stubborn tool to answer late")
    assert client.state(session_id) is not None
    (result,) = [m for m in client.snapshot(session_id).messages if m.role.value == "tool"]
    assert result.tool_output == "cancelled by the user: not needed", "the late answer is discarded"
    finished = of_type(sessions.events(session_id), "tool_call_finished")
    assert [e.payload["status"] for e in finished] == [ToolCallStatus.CANCELED.value]
    assert log.entries() == ["started", "cancelled", "answered late"], "it ran once"
    assert "CallTool" not in completed_steps(environment.server_address, session_id)


def test_a_cancellation_racing_the_tools_commit_has_one_outcome_either_way(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """The tool Step's commit and the cancellation are ordered by Dex: whichever takes effect first
    decides, and the session agrees with it everywhere: the record, what the model read, the call's last
    ``tool_call_finished``. ``cancel_tool_call`` answers ``true`` when the call was open as it asked; a
    Step's events are written before its result commits, so a call cancelled while its Step was
    committing may show that Step's own ``tool_call_finished`` first."""
    flow = slow_tool_flow(tmp_path, blocking_tool(tmp_path), "Done.", prefix="CancelRace")
    _, sessions = serve(agent_environment, agent_sessions, flow)
    client = sessions.sessions
    for _ in range(4):
        gate = FileGate(tmp_path, "tool")
        gate.reset()
        session_id = start_until(sessions, SLOW, gate)
        gate.release()  # the tool returns now, while the cancellation is on its way
        asked = client.cancel_tool_call(session_id, "call-slow", "raced")
        sessions.wait_for_completed_turns(session_id, 1)
        (result,) = [m for m in client.snapshot(session_id).messages if m.role.value == "tool"]
        statuses = [e.payload["status"] for e in of_type(sessions.events(session_id), "tool_call_finished")]
        if result.tool_output == "cancelled by the user: raced":
            assert asked and statuses in (["canceled"], ["succeeded", "canceled"]), statuses
        else:
            assert result.tool_output == "found it" and statuses == ["succeeded"], (result.tool_output, statuses)


def test_a_turn_that_began_as_the_cancellation_of_the_previous_one_committed_carries_on(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``cancel_turn("turn-1")`` reads turn-1 running, and commits after turn-1 ended and turn-2's model
    call began (its handler is held between the engine's read and its commit): Dex cancels the running
    Steps, turn-2's, and ``CancelTurn`` starts turn-2's model call again instead of cancelling a turn
    nobody asked to cancel."""
    script = {STUCK: (ScriptedModelCall(text="one", gate_before_output="model-1"),),
              SLOW: (ScriptedModelCall(text="two", gate_before_output="model-2"),)}
    flow = session_flow(scripted_runner(tmp_path, script), prefix="CancelOutran", timing=QUICK_HEARTBEATS)
    entered, release = threading.Event(), threading.Event()

    def held_cancel(*arguments: Any) -> Any:
        if isinstance(arguments[2], CancelTurnCalled):
            entered.set()
            assert release.wait(WAIT_SECONDS), "the test never released the cancellation"
        return drive_rpc(*arguments)

    monkeypatch.setattr(shell_flow, "drive_rpc", held_cancel)
    environment, sessions = serve(agent_environment, agent_sessions, flow)
    client = sessions.sessions
    session_id = start_until(sessions, STUCK, FileGate(tmp_path, "model-1"))
    assert client.send(session_id, SLOW) is True
    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(client.cancel_turn, session_id, "turn-1", "too slow")
        assert entered.wait(WAIT_SECONDS), "the cancellation's handler was never called"
        FileGate(tmp_path, "model-1").release()  # turn-1 ends; turn-2's model call begins
        turn_2_model = FileGate(tmp_path, "model-2")
        turn_2_model.wait_until_reached()
        release.set()
        assert asked.result(WAIT_SECONDS) is True, "turn-1 was running when it asked"
    turn_2_model.release()
    state = sessions.wait_for_completed_turns(session_id, 2)
    assert (state.completed_turn_count, state.canceled_turn_count) == (2, 0)
    assert [m.text for m in client.snapshot(session_id).messages if m.role.value == "assistant"] == ["one", "two"]
    assert not of_type(sessions.events(session_id), "dex_agents.turn_canceled")
    steps = completed_steps(environment.server_address, session_id)
    assert sorted(steps) == sorted(["StartAgentSession", "RunModel", "AwaitUserMessage", "CancelTurn", "RunModel"])
