"""Smoke runs of the turn benchmarks: each completes, prints its figures' labels, and leaves nothing
behind. The figures themselves are never asserted (they depend on the machine)."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import concurrent_sessions, turn_overhead

LABELS = (
    "durability: power-loss (fsync per commit, SQLite synchronous=FULL)",
    "durability: process-crash (no fsync",
    "Python ",
    "CPUs: ",
    "(a) 3 sequential turns on one session",
    "(b) one turn on each of 3 fresh sessions",
    "durable:",
    "direct:",
    "overhead:",
    "p50=",
    "p99=",
    "target: overhead p50 <= 4 ms at power-loss durability",
    "target: overhead p50 <= 3.5 ms at process-crash durability",
    "overhead of turn 1",
    "overhead ratio turn 3 / turn 1",
    "target: <= 1.5x",
    "Step executions per turn: 5 ",
    "CPU per turn",
)

CONCURRENCY_LABELS = (
    "durability: power-loss (fsync per commit, SQLite synchronous=FULL)",
    "1 concurrent session(s) x 2 turns (2 turns)",
    "3 concurrent session(s) x 2 turns (6 turns)",
    "turns/s: ",
    "turn latency: p50=",
    "CPU per turn: engine ",
    "turns per CPU-second: ",
)


def _children() -> set[int]:
    """PIDs of this process's live children (Linux ``/proc``)."""
    me = str(os.getpid())
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            children.add(int(entry.name))
    return children


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts child processes through /proc")
@pytest.mark.parametrize(("main", "labels"), [(turn_overhead.main, LABELS), (concurrent_sessions.main, CONCURRENCY_LABELS)],
                         ids=["turn_overhead", "concurrent_sessions"])
def test_quick_run_prints_every_label_and_leaves_nothing_behind(
    main: Callable[[list[str]], None], labels: tuple[str, ...],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    children_before = _children()

    main(["--quick"])

    output = capsys.readouterr().out
    missing = [label for label in labels if label not in output]
    assert not missing, f"labels missing from the output: {missing}\n{output}"
    assert _children() <= children_before, "the engine child (or another process) is still running"
    assert list(scratch.iterdir()) == [], "temporary files were left behind"
    assert not [t for t in threading.enumerate() if t.name == "turn-overhead-loop"], "a loop thread still runs"


LONG_SESSION_LABELS = (
    "turns: 40; continue-as-new threshold: 80 history events",
    "model window: 20 messages; compactions: ",
    "rollovers: ",
    "history events of the current run: ",
    "turn p50: turns 10-110 ",
    "replay identical: True",
)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts child processes through /proc")
def test_a_short_long_session_rolls_over_compacts_replays_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import long_session

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    children_before = _children()

    long_session.main(["--turns", "40", "--threshold", "80", "--window", "20"])

    output = capsys.readouterr().out
    missing = [label for label in LONG_SESSION_LABELS if label not in output]
    assert not missing, f"labels missing from the output: {missing}\n{output}"
    assert "compactions: 0" not in output and "rollovers: 0" not in output, output
    assert _children() <= children_before, "the engine child is still running"
    assert list(scratch.iterdir()) == [], "temporary files were left behind"
