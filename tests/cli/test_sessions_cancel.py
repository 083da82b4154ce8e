"""``dex-agents sessions cancel`` as a subprocess against a running engine with a Worker child serving
the support agent: ``--tool-call`` cancels one blocked tool call and the turn goes on with the reason as
its result; without it the running turn (its ID read from the session) is cancelled in its model call
and ends canceled; with nothing running the command fails with a hint."""

from __future__ import annotations

from pathlib import Path

from dex_agents.serving.gate import FileGate
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import served_support_agent, sessions_cli
from tests.shell.agents import (
    GATED_LOOKUP_MESSAGE,
    GATED_MODEL_MESSAGE,
    LOOKUP_ANSWER,
    LOOKUP_CALL_ID,
    LOOKUP_GATE,
    MODEL_GATE,
)


def test_cancel_a_tool_call_then_a_turn_from_the_command_line(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    killable_worker: KillableWorkerFactory, tmp_path: Path,
) -> None:
    _, sessions = served_support_agent("CliCancel", agent_environment, agent_sessions, killable_worker, tmp_path)
    cli = sessions_cli(dex_engine.server_address)
    sessions.start_session("cli-cancel-1", GATED_LOOKUP_MESSAGE)
    FileGate(tmp_path, LOOKUP_GATE).wait_until_reached()
    status, out, err = cli("cancel", "cli-cancel-1", "--tool-call", LOOKUP_CALL_ID, "--reason", "the warehouse is down")
    assert status == 0, err
    assert out.strip() == f"cancelled tool call {LOOKUP_CALL_ID} of cli-cancel-1: the warehouse is down"
    state = sessions.wait_for_completed_turns("cli-cancel-1", 1)
    assert state.canceled_turn_count == 0, "the turn went on"
    messages = sessions.snapshot("cli-cancel-1").messages
    assert [m.tool_output for m in messages if m.role.value == "tool"] == ["cancelled by the user: the warehouse is down"]
    assert messages[-1].text == LOOKUP_ANSWER

    status, out, err = cli("cancel", "cli-cancel-1")
    assert (status, err.strip()) == (1, "dex-agents: error: session cli-cancel-1 runs no turn: there is nothing to "
                                        "cancel (hint: see it with: dex-agents sessions show cli-cancel-1)")

    assert sessions.sessions.send("cli-cancel-1", GATED_MODEL_MESSAGE) is True
    FileGate(tmp_path, MODEL_GATE).wait_until_reached()
    status, out, err = cli("cancel", "cli-cancel-1", "--reason", "asked by mistake")
    assert status == 0, err
    assert out.strip() == "cancelled turn-2 of cli-cancel-1: asked by mistake"
    state = sessions.wait_for_turns("cli-cancel-1", 2)
    assert (state.completed_turn_count, state.canceled_turn_count) == (1, 1)

    status, out, err = cli("show", "cli-cancel-1")
    assert status == 0, err
    assert "turns 2 (completed 1, failed 0, canceled 1)" in out
    assert "The user cancelled the previous turn before it finished." in out

    status, out, err = cli("cancel", "cli-cancel-1", "--tool-call", "call-nope")
    assert (status, err.strip()) == (1, "dex-agents: error: tool call call-nope of cli-cancel-1 is not running (it "
                                        "ended, or is being cancelled already) (hint: see it with: dex-agents "
                                        "sessions show cli-cancel-1)")
