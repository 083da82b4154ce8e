"""The command line's own behaviour: the engine command unchanged, one-line errors, the entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

from dex_agents.testing import find_free_loopback_ports
from tests.cli.support import run_cli


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
    for command in ("engine", "demo", "chat", "sessions"):
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
