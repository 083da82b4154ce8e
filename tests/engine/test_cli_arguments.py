"""``dex-agents engine`` rejects bad arguments with exit 2 and a message, before touching anything."""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from dex_agents.engine.cli import main, ready_line
from dex_agents.engine.durability import Durability


@dataclass(frozen=True)
class Completed:
    """What one command line run printed and its exit status."""

    returncode: int
    stdout: str
    stderr: str


def _run(*args: str, cwd: Path) -> Completed:
    """Run ``dex-agents`` in this process from ``cwd`` (every case here exits before binding anything;
    the real child process is covered by the signal and launch tests)."""
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level  # main() configures logging for its process
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as exit_:  # argparse ends --help and bad arguments this way
                status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os.chdir(previous)
        root.handlers[:] = handlers
        root.setLevel(level)
    return Completed(status, out.getvalue(), err.getvalue())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "required: COMMAND"),
        (("serve",), "invalid choice: 'serve'"),
        (("engine", "--port", "99999"), "outside 0..65535"),
        (("engine", "--port", "-1"), "outside 0..65535"),
        (("engine", "--port", "eighty"), "not a port number: 'eighty'"),
        (("engine", "--log-level", "LOUD"), "invalid choice: 'LOUD'"),
        (("engine", "--durability", "eventual"), "unknown durability level 'eventual': choose power-loss or process-crash"),
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    result = _run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert needle in result.stderr
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == [], "nothing is created on bad arguments"


def test_missing_token_file_exits_2_without_creating_the_database(tmp_path: Path) -> None:
    db = tmp_path / "engine.sqlite3"
    result = _run("engine", "--port", "0", "--db", str(db), "--token-file", str(tmp_path / "absent"), cwd=tmp_path)
    assert result.returncode == 2
    assert "--token-file" in result.stderr and "does not exist" in result.stderr
    assert not db.exists()


@pytest.mark.parametrize(
    ("content", "needle"), [(b"\n\t \n", "is empty"), (b"\xc3\x28", "not valid UTF-8")]
)
def test_unusable_token_file_exits_2(tmp_path: Path, content: bytes, needle: str) -> None:
    token = tmp_path / "token"
    token.write_bytes(content)
    db = tmp_path / "engine.sqlite3"
    result = _run("engine", "--port", "0", "--db", str(db), "--token-file", str(token), cwd=tmp_path)
    assert result.returncode == 2
    assert needle in result.stderr
    assert not db.exists()


def test_database_in_missing_directory_exits_2(tmp_path: Path) -> None:
    db = tmp_path / "no-such-dir" / "engine.sqlite3"
    result = _run("engine", "--port", "0", "--db", str(db), cwd=tmp_path)
    assert result.returncode == 2
    assert "does not exist" in result.stderr
    assert not db.parent.exists()


def test_database_path_that_is_a_directory_exits_2(tmp_path: Path) -> None:
    result = _run("engine", "--port", "0", "--db", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert "is not a file" in result.stderr


def test_ready_line_format_names_the_durability_level() -> None:
    assert ready_line("127.0.0.1", 8801) == (
        "dex-agents engine ready on 127.0.0.1:8801; durability power-loss (fsync per commit, SQLite synchronous=FULL)")
    assert ready_line("::1", 9, Durability.PROCESS_CRASH) == (
        "dex-agents engine ready on [::1]:9; durability process-crash (no fsync: commits survive a process crash, "
        "not an OS crash; SQLite synchronous=NORMAL)")


def test_help_lists_the_public_options_only(tmp_path: Path) -> None:
    top = _run("--help", cwd=tmp_path)
    engine = _run("engine", "--help", cwd=tmp_path)
    assert top.returncode == 0 and "engine" in top.stdout
    assert engine.returncode == 0
    for option in ("--host", "--port", "--db", "--token-file", "--log-level", "--durability"):
        assert option in engine.stdout
    assert "--stop-on-stdin-eof" not in engine.stdout, "the launcher's flag stays hidden"
    assert list(tmp_path.iterdir()) == []
