"""``EngineProcess``: the engine as a child in its own process group (start, ready, kill, stop)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dex_agents.engine import EngineProcess
from dex_agents.engine.launch import EngineStartError
from tests.engine.processes import engine_is_healthy


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_start_serves_in_own_process_group_and_kill_is_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "engine.sqlite3"
    engine = EngineProcess.start(db)
    try:
        assert engine.address == f"127.0.0.1:{engine.port}" and engine.port > 0
        assert os.getpgid(engine.pid) == engine.pid != os.getpgid(0)
        assert engine_is_healthy(engine.address, tmp_path)
        assert db.exists()
    finally:
        engine.kill()
    assert engine.returncode == -signal.SIGKILL
    assert not _alive(engine.pid)


def test_restart_on_the_same_database_after_kill(tmp_path: Path) -> None:
    db = tmp_path / "engine.sqlite3"
    first = EngineProcess.start(db)
    first.kill()
    second = EngineProcess.start(db)
    try:
        assert engine_is_healthy(second.address, tmp_path)
    finally:
        second.stop()


def test_stop_is_graceful_sigterm_and_exits_zero(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = EngineProcess.start(tmp_path / "engine.sqlite3", log_path=log)
    engine.stop()
    assert engine.returncode == 0
    text = log.read_text(encoding="utf-8")
    assert "dex-agents engine ready on 127.0.0.1:" in text
    for trouble in ("Traceback", "Fatal Python error", "Warning"):
        assert trouble not in text, text
    assert log.exists(), "a caller's log file is kept"


def test_explicit_port_is_used(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = EngineProcess.start(tmp_path / "engine.sqlite3", port=port)
    try:
        assert engine.port == port and engine.address == f"127.0.0.1:{port}"
    finally:
        engine.stop()


def test_port_in_use_fails_with_log_tail(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(EngineStartError, match="exited with status 1") as raised:
            EngineProcess.start(tmp_path / "engine.sqlite3", port=port)
    assert f"cannot start on 127.0.0.1:{port}" in str(raised.value)


def test_bad_token_file_fails_with_log_tail(tmp_path: Path) -> None:
    with pytest.raises(EngineStartError, match="exited with status 2") as raised:
        EngineProcess.start(tmp_path / "engine.sqlite3", token_file=tmp_path / "absent")
    assert "does not exist" in str(raised.value)


def test_ready_timeout_kills_the_child_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    with pytest.raises(EngineStartError, match="no ready line within 0 s"):
        EngineProcess.start(tmp_path / "engine.sqlite3", log_path=log, ready_timeout=0.0)
    # The killed child's group is gone: no process still holds the log open to write to it.
    assert _processes_holding(log) == []


@pytest.mark.parametrize("parent_exit", ["normal exit (atexit)", "SIGKILL (stdin pipe closes)"])
def test_engines_never_outlive_the_launching_process(tmp_path: Path, parent_exit: str) -> None:
    suicide = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)" if "SIGKILL" in parent_exit else ""
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from dex_agents.engine import EngineProcess
        engine = EngineProcess.start(Path({str(tmp_path / "engine.sqlite3")!r}),
                                     log_path=Path({str(tmp_path / "engine.log")!r}))  # a killed parent keeps it
        print(engine.pid, flush=True)
        {suicide}
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    pid = int(result.stdout.strip())
    deadline = time.monotonic() + 20
    while _alive(pid) and not _zombie(pid):
        assert time.monotonic() < deadline, f"engine {pid} survived its parent ({parent_exit})"
        time.sleep(0.05)


def _processes_holding(path: Path) -> list[int]:
    """The pids of the processes that have ``path`` open, read from ``/proc/<pid>/fd``."""
    target = str(path.resolve())
    holders: list[int] = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == target for fd in fd_dir.iterdir()):
                holders.append(int(fd_dir.parent.name))
        except OSError:  # the process exited meanwhile, or its descriptors are not ours to read
            continue
    return holders


def _zombie(pid: int) -> bool:
    """An exited child of a dead parent may linger as a zombie until init reaps it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"
