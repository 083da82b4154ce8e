"""The deployment guide's recipes (``docs/deploy/``) are valid: each systemd unit parses into the sections
and settings a drained Worker or the engine needs (and passes ``systemd-analyze verify`` where systemd
is installed), the container recipe's instructions are well-formed with an exec-form entry point and
SIGTERM as its stop signal, and every ``dex-agents`` command line they run is accepted by the command
line's own parser (``--help`` of the subcommand lists each flag they use)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy"
UNITS = ("dex-agents-worker.service", "dex-agents-engine.service")
DRAIN_SECONDS = 30  # the SDK's graceful drain of running tasks


def unit_settings(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit as section -> key -> values (keys may repeat); fails on a line outside the format."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, equals, value = line.partition("=")
        assert equals and key.strip() and current is not None, f"line {number} is not KEY=value in a section: {raw!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def dex_agents_flags(command: list[str]) -> tuple[list[str], list[str]]:
    """The subcommand (``worker`` or ``engine``) and the ``--flags`` of a ``dex-agents`` command line."""
    assert Path(command[0]).name == "dex-agents", command
    return command[1:2], [word for word in command[2:] if word.startswith("--")]


def assert_flags_known(subcommand: list[str], flags: list[str]) -> None:
    completed = subprocess.run([sys.executable, "-m", "dex_agents.cli", *subcommand, "--help"], capture_output=True,
                               text=True, timeout=120, check=False, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert completed.returncode == 0, completed.stderr
    for flag in flags:
        assert flag in completed.stdout, f"dex-agents {subcommand[0]} has no {flag}"


@pytest.mark.parametrize("name", UNITS)
def test_the_systemd_unit_runs_dex_agents_and_stops_it_with_a_drain(name: str) -> None:
    settings = unit_settings((DEPLOY / name).read_text(encoding="utf-8"))
    assert set(settings) == {"Unit", "Service", "Install"}
    service = settings["Service"]
    assert service["KillSignal"] == ["SIGTERM"] and service["Restart"] == ["on-failure"]
    assert service["User"] != ["root"]
    [exec_start] = service["ExecStart"]
    subcommand, flags = dex_agents_flags(shlex.split(exec_start))
    assert_flags_known(subcommand, flags)
    if subcommand == ["worker"]:
        assert "--agent" in flags and int(service["TimeoutStopSec"][0]) > DRAIN_SECONDS
        assert any(value.startswith("DEX_SERVER_ADDRESS=") for value in service["Environment"])
    assert settings["Install"]["WantedBy"] == ["multi-user.target"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_verifies_the_units(tmp_path: Path) -> None:
    """``systemd-analyze verify`` on copies whose ``ExecStart`` names this checkout's ``dex-agents`` (the
    units' own path, ``/srv/my-agent/.venv``, does not exist here): no warning, no error."""
    executable = Path(sys.executable).parent / "dex-agents"
    for name in UNITS:
        text = (DEPLOY / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text.replace("/srv/my-agent/.venv/bin/dex-agents", str(executable)),
                                     encoding="utf-8")
    completed = subprocess.run(["systemd-analyze", "verify", "--man=no", *(str(tmp_path / n) for n in UNITS)],
                               capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0 and completed.stderr == "", completed.stderr


def containerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a container recipe, continuation lines joined; fails on an unknown one."""
    known = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "STOPSIGNAL", "ENTRYPOINT", "CMD", "ARG", "LABEL",
             "EXPOSE", "HEALTHCHECK", "ADD", "VOLUME", "SHELL"}
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, arguments = pending.partition(" ")
        assert keyword in known, f"unknown instruction {keyword!r}"
        instructions.append((keyword, arguments.strip()))
        pending = ""
    assert not pending, "a continued line never ends"
    return instructions


def test_the_container_recipe_runs_a_worker_that_drains_on_sigterm() -> None:
    instructions = containerfile_instructions((DEPLOY / "Containerfile").read_text(encoding="utf-8"))
    assert instructions[0][0] == "FROM" and instructions[0][1].startswith("python:3.1")
    keywords = [keyword for keyword, _ in instructions]
    assert keywords.count("ENTRYPOINT") == 1 and keywords.count("CMD") == 1
    arguments = dict(instructions)
    assert arguments["STOPSIGNAL"] == "SIGTERM"
    assert arguments["USER"] not in ("root", "0")
    assert keywords.index("USER") < keywords.index("ENTRYPOINT")
    entrypoint = json.loads(arguments["ENTRYPOINT"])  # exec form: SIGTERM reaches the Worker, not a shell
    command = json.loads(arguments["CMD"])
    assert isinstance(entrypoint, list) and isinstance(command, list)
    subcommand, flags = dex_agents_flags([*entrypoint, *command])
    assert subcommand == ["worker"] and "--agent" in flags
    assert_flags_known(subcommand, flags)


def test_the_guide_links_every_recipe_and_the_readme_links_the_guide() -> None:
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for recipe in sorted(DEPLOY.iterdir()):
        assert f"(deploy/{recipe.name})" in guide, f"docs/deploy.md does not link {recipe.name}"
    assert "(docs/deploy.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
