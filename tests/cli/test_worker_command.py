"""``dex-agents worker`` serving the demo agent, and the ``sessions`` commands answering its sessions,
all run as a user runs them: an engine, a Worker and every command in its own process."""

from __future__ import annotations

import importlib.util
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dex_agents.cli.worker import PROGRESS_PREFIX
from dex_agents.client import SessionClient
from tests.cli.support import background_cli, run_cli

DEMO_AGENT = "dex_agents.demo.support_agent:support_flow"
HAS_DEMO = importlib.util.find_spec("pydantic_ai") is not None


def _progress_steps(lines: list[str]) -> list[str]:
    """The steps of the progress lines among ``lines``, checked to count seconds upwards."""
    steps: list[str] = []
    seconds: list[float] = []
    for line in lines:
        if line.startswith(PROGRESS_PREFIX):
            found = re.fullmatch(r"(.*) \(at (\d+\.\d) s\)", line.removeprefix(PROGRESS_PREFIX))
            assert found is not None, line
            steps.append(found.group(1))
            seconds.append(float(found.group(2)))
    assert seconds == sorted(seconds), lines
    return steps


def test_the_worker_command_prints_its_first_progress_line_before_importing_the_runtime() -> None:
    """What ``dex-agents worker`` imports before its first line: neither the Dex SDK nor the client."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, dex_agents.cli.main, dex_agents.cli.worker, "
                             "dex_agents.cli.connection, dex_agents.logs; print(' '.join(sorted(sys.modules)))"],
                            capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert [name for name in loaded if name.partition(".")[0] in {"dex", "grpc", "pydantic", "pydantic_ai"}
            or name.startswith(("dex_agents.client", "dex_agents.shell", "dex_agents.serving"))] == []
    from dex_agents.cli.connection import SERVER_ENV
    from dex_agents.client import SERVER_ADDRESS_ENV

    assert SERVER_ENV == SERVER_ADDRESS_ENV


@pytest.mark.skipif(not HAS_DEMO, reason="the pydantic-ai extra is not installed")
def test_the_demo_agent_served_by_dex_agents_worker_answers_the_sessions_commands(tmp_path: Path) -> None:
    state = tmp_path / "state"
    engine_directory = tmp_path / "engine"
    engine_directory.mkdir()
    with background_cli("engine", "--port", "0", "--db", str(engine_directory / "engine.sqlite3")) as engine:
        address = engine.wait_for_line("dex-agents engine ready on ").split()[4].rstrip(";")
        server = ("--server", address)
        worker_environment = {"DEX_AGENTS_DEMO_STATE_DIR": str(state), "TMPDIR": str(tmp_path)}
        with background_cli("worker", "--agent", DEMO_AGENT, *server, "--task-slots", "4",
                            environment=worker_environment) as worker:
            ready = worker.wait_for_line("dex-agents worker ready")
            assert ready == f"dex-agents worker ready: serving SupportAgent on {address} (4 task slots)"
            assert _progress_steps(worker.lines[:worker.lines.index(ready)]) == [
                "starting: importing the Worker's runtime", f"loading the agents {DEMO_AGENT}",
                f"connecting to the Dex server at {address} (Flow types SupportAgent)",
                f"registered Flow types SupportAgent with {address}"]

            chat = run_cli("chat", *server, stdin_text="Where is order 42?\n")  # the Worker above serves it
            assert chat.returncode == 0, chat.stderr
            assert "you: Where is order 42?" in chat.stdout.splitlines()
            assert "Here is what I found: Order 42: shipped" in chat.stdout and "engine:" not in chat.stdout
            found = re.search(r"session (chat-[0-9a-f]+) stays open on", chat.stdout)
            assert found is not None, chat.stdout
            session_id = found.group(1)

            sent = run_cli("sessions", "send", session_id, "Please refund order 42", *server)
            assert (sent.returncode, sent.stdout.strip()) == (0, f"sent to {session_id}"), sent.stderr
            with SessionClient.connect(address, "SupportAgent") as sessions:
                interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
                shown = run_cli("sessions", "show", session_id, *server)
                assert shown.returncode == 0, shown.stderr
                assert f"{interrupt.interrupt_id} refund_order(" in shown.stdout and "awaiting_approval" in shown.stdout

                approved = run_cli("sessions", "approve", session_id, interrupt.interrupt_id, *server)
                assert approved.returncode == 0, approved.stderr
                assert approved.stdout.strip() == f"interrupt {interrupt.interrupt_id} approved"
                sessions.wait_for_completed_turns(session_id, 2)
                shown = run_cli("sessions", "show", session_id, *server)
                assert "Done: Refunded 19.99 for order 42." in shown.stdout, shown.stdout
                assert (state / "refunds.log").read_text().splitlines() == [
                    f"order=42 amount=19.99 key={session_id}/turn-2/{interrupt.tool_call_id}"]

                assert worker.stop(signal.SIGTERM) == 0
                assert worker.lines[-1] == "dex-agents worker stopped (SIGTERM)"

                hint = (f"no Worker serving SupportAgent answered on {address} within 1 s (hint: start the demo "
                        f"agent's Worker: dex-agents worker --agent {DEMO_AGENT} --server {address})")
                for command in (("show", session_id), ("send", session_id, "Anything else?"),
                                ("approve", session_id, interrupt.interrupt_id)):
                    refused = run_cli("sessions", *command, *server, timeout=60)
                    assert refused.returncode == 1
                    assert refused.stderr.strip().splitlines() == [f"dex-agents: error: {hint}"]
                state_after = sessions.state(session_id)
                assert state_after is not None and state_after.message_count == 8

            with background_cli("worker", "--agent", DEMO_AGENT, *server, environment=worker_environment) as again:
                again.wait_for_line("dex-agents worker ready")
                shown = run_cli("sessions", "show", session_id, *server)
                assert "turns 2 (completed 2, failed 0); messages 8; queued 0" in shown.stdout, shown.stdout
                assert again.stop(signal.SIGINT) == 0
        assert engine.stop() == 0
    assert sorted(path.name for path in engine_directory.iterdir()) == ["engine.sqlite3"]  # no lock left behind


def test_worker_refuses_bad_agents_before_connecting(tmp_path: Path) -> None:
    server = ("--server", "127.0.0.1:9")  # nothing is served there: every case fails before connecting

    def error_of(*arguments: str) -> tuple[int, list[str]]:
        result = run_cli("worker", *arguments, *server, timeout=60)
        return result.returncode, result.stderr.strip().splitlines()

    assert error_of("--agent", "no_colon") == (2, [
        "dex-agents: error: --agent: bad agent reference 'no_colon': expected module:attribute, "
        "e.g. my_app.agents:build_flow"])
    assert error_of("--agent", "tests.cli.stand_in_demo:nothing_here") == (2, [
        "dex-agents: error: --agent: 'tests.cli.stand_in_demo' has no attribute 'nothing_here'"])
    assert error_of("--agent", "tests.cli.stand_in_demo:DEMO_TURNS") == (2, [
        "dex-agents: error: --agent: 'tests.cli.stand_in_demo:DEMO_TURNS' is a tuple, not an AgentSessionFlow: "
        "name a Flow from create_agent_session_flow, a list of them, or a function returning either"])
    assert error_of("--agent", "tests.cli.worker_agents:client_definition") == (2, [
        "dex-agents: error: Flow type 'Definition' is a Client's definition (session_flow_definition) with no "
        "runner; a Worker serves the Flow from create_agent_session_flow"])
    assert error_of("--agent", "tests.cli.worker_agents:twins") == (2, [
        "dex-agents: error: two agents share the Flow type Twin; each needs its own"])
    status, lines = error_of("--agent", "tests.cli.worker_agents:failing_factory")
    assert (status, lines) == (2, ["dex-agents: error: --agent: tests.cli.worker_agents:failing_factory raised "
                                   "ValueError: no model configured"])
    status, lines = error_of("--agent", "tests.cli.stand_in_demo:chat_flow", "--task-slots", "0")
    assert status == 2 and "--task-slots" in "\n".join(lines)


def test_worker_without_a_server_or_reachable_server_is_one_line(tmp_path: Path) -> None:
    result = run_cli("worker", "--agent", "tests.cli.stand_in_demo:chat_flow", timeout=60,
                     environment={"DEX_AGENTS_DEMO_STATE_DIR": str(tmp_path)})
    assert result.returncode == 2 and "DEX_SERVER_ADDRESS" in result.stderr
    from dex_agents.testing import find_free_loopback_ports

    (port,) = find_free_loopback_ports(1)
    result = run_cli("worker", "--agent", "tests.cli.stand_in_demo:chat_flow", "--server", f"127.0.0.1:{port}",
                     timeout=60, environment={"DEX_AGENTS_DEMO_STATE_DIR": str(tmp_path), "TMPDIR": str(tmp_path)})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dex-agents: error: the Dex server at 127.0.0.1:{port} does "
                                                   f"not answer"), result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # the Worker's temporary directory is gone
