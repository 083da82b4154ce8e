"""``dex-agents chat`` with a user's agent (``--agent module:attribute``), its own engine or a server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dex_agents.cli.frameworks import Framework
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli import stand_in_demo
from tests.cli.support import background_cli, cli_environment, run_cli

AGENT = "tests.cli.stand_in_demo:chat_flow"


def _environment(tmp_path: Path) -> dict[str, str]:
    scratch = tmp_path / "scratch"
    state = tmp_path / "state"
    scratch.mkdir()
    state.mkdir()
    return {"TMPDIR": str(scratch), "DEX_AGENTS_DEMO_STATE_DIR": str(state)}


def test_chat_runs_turns_with_its_own_engine_and_cleans_up(tmp_path: Path) -> None:
    environment = _environment(tmp_path)
    result = run_cli("chat", "--agent", AGENT, "--auto-approve", environment=environment,
                     stdin_text=f"{stand_in_demo.LOOKUP_TURN}\n{stand_in_demo.REFUND_TURN}\n/quit\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index(stand_in_demo.LOOKUP_ANSWER) < out.index("auto-approved refund_order")
    assert stand_in_demo.REFUND_ANSWER in out and "turn 2 completed; usage:" in out
    assert os.listdir(environment["TMPDIR"]) == []
    assert (tmp_path / "state" / "refunds.log").read_text().count("\n") == 1


def test_chat_against_a_server_uses_its_workers_and_leaves_the_session_open(
        dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    environment = _environment(tmp_path)
    server = ("--server", dex_engine.server_address)
    refused = run_cli("chat", "--agent", AGENT, *server, environment=environment,
                      stdin_text=f"{stand_in_demo.LOOKUP_TURN}\n")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"dex-agents: error: no Worker serving StandInChat answered on {dex_engine.server_address} within 1 s "
        f"(hint: start a Worker serving StandInChat: dex-agents worker --agent MODULE:ATTRIBUTE "
        f"--server {dex_engine.server_address})"]

    with background_cli("worker", "--agent", AGENT, *server, environment=environment) as worker:
        worker.wait_for_line("dex-agents worker ready: serving StandInChat")
        first = run_cli("chat", "--agent", AGENT, *server, environment=environment,
                        stdin_text=f"{stand_in_demo.LOOKUP_TURN}\n")
        assert first.returncode == 0, first.stderr
        assert stand_in_demo.LOOKUP_ANSWER in first.stdout and "engine:" not in first.stdout
        found = re.search(r"session (chat-[0-9a-f]+) stays open", first.stdout)
        assert found is not None, first.stdout
        again = run_cli("chat", "--session", found.group(1), *server, "--auto-approve", environment=environment,
                        stdin_text=f"{stand_in_demo.REFUND_TURN}\n")
        assert again.returncode == 0, again.stderr
        assert f"session {found.group(1)} (StandInChat)" in again.stdout
        assert stand_in_demo.LOOKUP_ANSWER not in again.stdout  # the earlier turn is not shown again
        assert stand_in_demo.REFUND_ANSWER in again.stdout and "turn 1 completed" in again.stdout
    assert run_cli("chat", "--session", "x", environment=environment).returncode == 2


def test_piped_input_is_echoed_after_the_prompt(tmp_path: Path) -> None:
    result = run_cli("chat", "--agent", AGENT, environment=_environment(tmp_path),
                     stdin_text=f"{stand_in_demo.LOOKUP_TURN}\n/quit\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"you: {stand_in_demo.LOOKUP_TURN}" in lines and "you: /quit" in lines
    assert lines.index(f"you: {stand_in_demo.LOOKUP_TURN}") < lines.index("you: /quit")


def test_chat_without_a_terminal_cannot_ask_for_approval(tmp_path: Path) -> None:
    result = run_cli("chat", "--agent", AGENT, environment=_environment(tmp_path),
                     stdin_text=f"{stand_in_demo.REFUND_TURN}\n")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "dex-agents: error: an approval is needed but stdin is not a terminal (hint: rerun with --auto-approve)"]


def test_a_bad_agent_reference_is_one_error_line(tmp_path: Path) -> None:
    result = run_cli("chat", "--agent", "tests.cli.stand_in_demo:no_such_agent", environment=_environment(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "dex-agents: error: --agent: 'tests.cli.stand_in_demo' has no attribute 'no_such_agent'"]


def test_ctrl_c_stops_the_chat_and_everything_it_started(tmp_path: Path) -> None:
    environment = _environment(tmp_path)
    chat = subprocess.Popen([sys.executable, "-m", "dex_agents.cli", "chat", "--agent", AGENT],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_environment(environment))
    try:
        assert chat.stdout is not None
        deadline = time.monotonic() + 60
        while "session chat-" not in chat.stdout.readline():
            assert time.monotonic() < deadline and chat.poll() is None, "the chat did not start"
        time.sleep(0.2)
        chat.send_signal(signal.SIGINT)
        _, err = chat.communicate(timeout=60)
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
    assert chat.returncode == 130, err
    assert err.strip().splitlines() == ["dex-agents: interrupted"]
    assert os.listdir(environment["TMPDIR"]) == []


@pytest.mark.parametrize("framework", [framework.value for framework in Framework])
def test_chat_talks_to_the_demo_agent_on_each_framework(tmp_path: Path, framework: str) -> None:
    environment = {"TMPDIR": str(tmp_path)}
    result = run_cli("chat", "--framework", framework, "--auto-approve", environment=environment,
                     stdin_text="Where is order 42?\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "tool lookup_order finished: succeeded" in result.stdout
    assert "Order 42: shipped" in result.stdout and "turn 1 completed; usage:" in result.stdout
    assert os.listdir(tmp_path) == []


def test_framework_with_an_agent_of_ones_own_is_refused(tmp_path: Path) -> None:
    result = run_cli("chat", "--framework", "langchain", "--agent", AGENT, environment={"TMPDIR": str(tmp_path)})
    assert result.returncode == 2
    assert "--framework picks the demo agent's framework" in result.stderr
