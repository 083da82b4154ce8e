"""``dex-agents chat`` with a user's agent (``--agent module:attribute``), its own engine or a server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli import stand_in_demo
from tests.cli.support import cli_environment, run_cli

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


def test_chat_against_a_server(dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    environment = _environment(tmp_path)
    result = run_cli("chat", "--agent", AGENT, "--server", dex_engine.server_address, environment=environment,
                     stdin_text=f"{stand_in_demo.LOOKUP_TURN}\n")
    assert result.returncode == 0, result.stderr
    assert stand_in_demo.LOOKUP_ANSWER in result.stdout and "engine:" not in result.stdout


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
