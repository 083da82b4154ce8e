"""Issue 29, "Done when": an application outside the checkout, installed non-editable from the checkout
with its extras, runs its own agent with ``dex-agents engine`` + ``dex-agents worker`` + ``SessionClient``
following only the README.

The test reads the README's section "Your own agent: engine, Worker and client" and does what it says,
in a temporary directory: its shell lines run as written (the checkout's path for ``/path/to/dex-agents``
and a free port for ``8801``, there and in the files), its two files are written from its ```` ```py ```` blocks (``py``, not
``python``: ``tests/test_readme.py`` runs every ``python`` block in this process, and these need the
engine and the Worker), the engine and the Worker run until SIGTERM, and the client's output is the
README's. One fresh virtual environment per run (about a minute with pip's cache); everything it made
is removed at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dex_agents.testing import find_free_loopback_ports
from tests.cli.support import BackgroundCli

CHECKOUT = Path(__file__).resolve().parents[1]
README = CHECKOUT / "README.md"
SECTION = "## Your own agent: engine, Worker and client"
READY_PREFIXES = {"engine": "dex-agents engine ready on ", "worker": "dex-agents worker ready: "}
INSTALL_SECONDS = 900.0


def _section_blocks() -> list[tuple[str, str]]:
    """The section's fenced blocks, in order, as (language, text)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(r"```(\w+)\n(.*?)```", text[start: end if end >= 0 else len(text)], flags=re.DOTALL)


def _commands(block: str, port: int) -> list[list[str]]:
    """A shell block's commands (comments dropped), with the checkout's path and the free port."""
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append([word.replace("/path/to/dex-agents", str(CHECKOUT)).replace("8801", str(port))
                             for word in words])
    return commands


@contextlib.contextmanager
def _running() -> Iterator[list[BackgroundCli]]:
    started: list[BackgroundCli] = []
    try:
        yield started
    finally:
        for command in reversed(started):
            command.kill()


@pytest.mark.slow
def test_an_application_outside_the_checkout_runs_its_own_agent_following_the_readme(tmp_path: Path) -> None:
    blocks = _section_blocks()
    assert [language for language, _ in blocks] == ["bash", "py", "py", "bash", "text"], blocks
    (port,) = find_free_loopback_ports(1)
    application = tmp_path / "application"
    temporary = tmp_path / "tmp"
    application.mkdir()
    temporary.mkdir()
    dropped = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "DEX_SERVER_ADDRESS", "PYTHONDONTWRITEBYTECODE"}
    environment = {key: value for key, value in os.environ.items() if key not in dropped}
    environment |= {"TMPDIR": str(temporary), "NO_COLOR": "1"}
    try:
        for command in _commands(blocks[0][1], port):  # the venv and the non-editable install
            done = subprocess.run(command, cwd=application, env=environment, capture_output=True, text=True,
                                  timeout=INSTALL_SECONDS)
            assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        installed = subprocess.run([str(application / ".venv/bin/python"), "-c",
                                    "import dex_agents.cli; print(dex_agents.cli.__file__)"], cwd=tmp_path,
                                   env=environment, capture_output=True, text=True, timeout=120, check=True)
        assert str(application / ".venv") in installed.stdout, "the checkout is installed as a copy, not editable"

        for _, source in blocks[1:3]:  # the agent module and the client script, named by their first line
            name = source.splitlines()[0].removeprefix("# ").strip()
            assert re.fullmatch(r"\w+\.py", name), source
            (application / name).write_text(source.replace("8801", str(port)), encoding="utf-8")

        *servers, client = _commands(blocks[3][1], port)
        assert [command[:2] for command in servers] == [[".venv/bin/dex-agents", "engine"],
                                                        [".venv/bin/dex-agents", "worker"]]
        with _running() as started:
            for command in servers:
                started.append(BackgroundCli(subprocess.Popen(
                    command, cwd=application, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True, start_new_session=True)))
                started[-1].wait_for_line(READY_PREFIXES[command[1]], timeout=120.0)
            engine, worker = started
            assert worker.lines[-1] == f"dex-agents worker ready: serving OrderAgent on 127.0.0.1:{port} (8 task slots)"
            assert [line.split(" (at ")[0] for line in worker.lines[:-1]] == [
                "dex-agents worker: starting: importing the Worker's runtime",
                "dex-agents worker: loading the agents order_agent:flow",
                f"dex-agents worker: connecting to the Dex server at 127.0.0.1:{port} (Flow types OrderAgent)",
                f"dex-agents worker: registered Flow types OrderAgent with 127.0.0.1:{port}"]

            asked = subprocess.run(client, cwd=application, env=environment, capture_output=True, text=True,
                                   timeout=180)
            assert asked.returncode == 0, asked.stderr
            assert asked.stdout == blocks[4][1].replace("8801", str(port))

            assert worker.stop() == 0 and worker.lines[-1] == "dex-agents worker stopped (SIGTERM)"
            assert engine.stop() == 0, engine.lines
        assert sorted(path.name for path in application.iterdir()) == [
            ".venv", "__pycache__", "ask.py", "engine.sqlite3", "order_agent.py"]
        assert list(temporary.iterdir()) == [], "the commands leave nothing in the temporary directory"
    finally:
        shutil.rmtree(application, ignore_errors=True)  # the virtual environment is large: never kept
        shutil.rmtree(temporary, ignore_errors=True)
