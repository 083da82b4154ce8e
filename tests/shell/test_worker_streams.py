"""A session Worker keeps its task streams across turns: a tool turn runs two tasks at once
(``CallTool`` beside ``ResumeTurn``'s wait), and with the SDK's default of one idle stream the Worker
then closed one stream and opened and registered another in every turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from dex_agents.engine import EngineServer
from dex_agents.engine.dispatch import Dispatcher
from dex_agents.engine.tasks import WorkerStream
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.environment import AgentTestEnvironment
from tests.shell.scenario_flows import READ_POLICY, answer_tool, call, new_session_id, scripted_runner, session_flow

TURNS = 7
MOST_OPENED_WHILE_WARM = 2
"""With one idle stream wanted, every warm tool turn registers a stream (6 of 6). With two, none does
on a quiet machine; under load the engine can hand a task to the held spare before the stream that
just finished reports so, which opens one now and then."""


def _tool_turn(index: int) -> tuple[ScriptedModelCall, ...]:
    return (ScriptedModelCall(tool_calls=(call(f"call-{index}", "lookup_order", order_id=index),)),
            ScriptedModelCall(text=f"Order {index} ships today."))


def test_tool_turns_register_no_new_task_stream_once_the_worker_is_warm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[WorkerStream] = []
    register = Dispatcher.register

    def counting_register(self: Dispatcher, stream: WorkerStream) -> None:
        registered.append(stream)
        register(self, stream)

    monkeypatch.setattr(Dispatcher, "register", counting_register)
    script = {f"Where is order {index}?": _tool_turn(index) for index in range(1, TURNS + 1)}
    flow = session_flow(scripted_runner(tmp_path, script, {"lookup_order": answer_tool("ships today")}),
                        prefix="WarmStreams", tool_policies={"lookup_order": READ_POLICY})
    server = EngineServer(tmp_path / "engine.sqlite3")
    server.start()
    try:
        with AgentTestEnvironment.start(server_address=server.address, flows=[flow]) as environment:
            sessions = environment.sessions(flow)
            try:
                session_id = new_session_id()
                sessions.start_session(session_id, "Where is order 1?")
                sessions.wait_for_completed_turns(session_id, 1)
                warm = len(registered)
                for index in range(2, TURNS + 1):
                    assert sessions.send_user_message(session_id, f"Where is order {index}?")
                    sessions.wait_for_completed_turns(session_id, index)
                opened_while_warm = len(registered) - warm
            finally:
                sessions.close()
    finally:
        server.stop()
    assert warm >= 1
    assert opened_while_warm <= MOST_OPENED_WHILE_WARM, (
        f"{opened_while_warm} task streams registered in {TURNS - 1} warm tool turns")
