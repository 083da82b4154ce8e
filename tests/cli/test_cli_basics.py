"""The command line's own behaviour: the engine command unchanged, one-line errors, the entry point."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

from dex_agents.client import SessionClient
from dex_agents.testing import find_free_loopback_ports
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import background_cli, run_cli
from tests.shell.agents import unique_flow_type


def test_the_console_script_runs_the_new_command_line() -> None:
    scripts = {entry.name: entry.value for entry in entry_points(group="console_scripts")}
    assert scripts["dex-agents"] == "dex_agents.cli.main:main"


def test_engine_help_is_the_engines_own() -> None:
    result = run_cli("engine", "--help")
    assert result.returncode == 0, result.stderr
    assert "--port" in result.stdout and "--token-file" in result.stdout and "--db" in result.stdout


def test_engine_bad_arguments_keep_exit_status_2() -> None:
    result = run_cli("engine", "--port", "70000")
    assert result.returncode == 2
    assert "outside 0..65535" in result.stderr


def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    for command in ("engine", "worker", "demo", "chat", "sessions"):
        assert command in result.stdout


def test_an_unreachable_server_is_one_error_line() -> None:
    (port,) = find_free_loopback_ports(1)
    result = run_cli("sessions", "list", "--server", f"127.0.0.1:{port}")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"dex-agents: error: the Dex server at 127.0.0.1:{port} does not answer")
    assert "Traceback" not in result.stderr


def test_a_malformed_server_address_is_one_error_line() -> None:
    result = run_cli("sessions", "show", "s-1", "--server", "not an address")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "dex-agents: error: bad server address 'not an address' (hint: expected HOST:PORT, e.g. 127.0.0.1:8801)"]


def test_sessions_need_a_server() -> None:
    result = run_cli("sessions", "list")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "DEX_SERVER_ADDRESS" in result.stderr


def test_demo_without_a_terminal_or_auto_approve_fails_fast_with_a_hint() -> None:
    result = run_cli("demo", timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "dex-agents: error: the demo asks for approvals but stdin is not a terminal (hint: rerun with --auto-approve)"]
    assert result.stdout == ""


def test_debug_adds_the_traceback() -> None:
    (port,) = find_free_loopback_ports(1)
    result = run_cli("--debug", "sessions", "list", "--server", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("dex-agents: error: the Dex server at")


def test_a_taken_engine_port_is_one_line_that_says_so(dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    host, _, port = dex_engine.server_address.rpartition(":")
    result = run_cli("engine", "--host", host, "--port", port, "--db", str(tmp_path / "second.sqlite3"), timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"dex-agents engine: error: cannot start on {host}:{port}: the port is in use (stop what listens there, "
        f"or pick another port with --port; --port 0 picks a free one)"]
    assert list(tmp_path.iterdir()) == []


def test_a_stopped_engine_leaves_only_its_database(tmp_path: Path) -> None:
    database = tmp_path / "engine.sqlite3"
    with background_cli("engine", "--port", "0", "--db", str(database)) as first:
        first.wait_for_line("dex-agents engine ready on ")
        second = run_cli("engine", "--port", "0", "--db", str(database), timeout=60)
        assert second.returncode == 2 and "in use by another engine" in second.stderr
        assert first.stop() == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["engine.sqlite3"]
    with background_cli("engine", "--port", "0", "--db", str(database)) as again:  # the database is free again
        again.wait_for_line("dex-agents engine ready on ")
        assert again.stop() == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["engine.sqlite3"]


def test_output_that_is_not_a_terminal_is_not_wrapped(dex_engine: PrivateDexEngine) -> None:
    flow_type = unique_flow_type("CliNoWrap")
    session_id = "a-session-id-longer-than-any-terminal-" + "x" * 90
    with SessionClient.connect(dex_engine.server_address, flow_type) as sessions:
        sessions.start(session_id)  # no Worker needed to list it
        result = run_cli("sessions", "list", "--flow-type", flow_type, "--server", dex_engine.server_address)
        assert result.returncode == 0, result.stderr
        header, line = result.stdout.splitlines()
        assert header.split() == ["SESSION", "STATUS", "STARTED", "CLOSED"]
        assert re.fullmatch(re.escape(session_id) + r" +running +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", line), line
        everything = run_cli("sessions", "list", "--server", dex_engine.server_address)
        assert re.search(re.escape(session_id) + r" +" + flow_type + r" +running ", everything.stdout), everything.stdout
        sessions.stop(session_id)
