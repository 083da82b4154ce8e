"""Smoke runs of the engine's backlog, long-poll and floor benchmarks with tiny sizes: each
completes, prints its figures' labels, and leaves no files behind. The figures are never asserted."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import engine_backlog, engine_long_polls, floor


BACKLOG_LABELS = ("backlog: 70 open runs", "restart to ready with the backlog:", "StartFlow on an empty engine:",
                  "StartFlow right after the restart:", "every open run recovered after",
                  "StartFlow with the whole backlog queued")
FLOOR_LABELS = ("synchronous=FULL (power-loss): n=50", "synchronous=NORMAL (process-crash): n=50",
                "sync server: round trip: n=50", "aio  server: round trip: n=50", "server CPU per round trip",
                "turn floor at power-loss:", "turn floor at process-crash:")
LONG_POLL_LABELS = ("quiet:", "5 WaitForFlow abandoned after 2 s", "200 WaitForAttribute polls waiting:",
                    "5 silent PollWorkerTask streams open:", "steps/s; HealthCheck")


@pytest.mark.slow
@pytest.mark.parametrize(("main", "argv", "labels"), [
    (engine_backlog.main, ["--runs", "20", "--ready-timeout", "60"], BACKLOG_LABELS),
    (engine_long_polls.main, ["--polls", "5", "--window", "0.2"], LONG_POLL_LABELS),
    (floor.main, ["--quick"], FLOOR_LABELS),
], ids=["backlog", "long_polls", "floor"])
def test_the_benchmark_prints_its_figures(main: Callable[[list[str]], None], argv: list[str], labels: tuple[str, ...],
                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    main(argv)
    output = capsys.readouterr().out
    for label in labels:
        assert label in output, output
    assert list(tmp_path.iterdir()) == [], "temporary files were left behind"


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_floors_commit_count_is_the_one_a_turn_makes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``floor``'s turn floor multiplies by ``TURN_COMMITS``: that count is measured here, from the
    fsync'd commits ``turn_profile`` counts in real one-tool turns, not taken from the label it prints."""
    profile = subprocess.run([sys.executable, "-m", "benchmarks.turn_profile", "--turns", "2"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300, check=False)
    assert profile.returncode == 0, profile.stderr[-2000:]
    row = re.search(r"^\s*commits \(fsync'd\)\s+([0-9.]+)", profile.stdout, re.MULTILINE)
    assert row is not None, profile.stdout
    measured = float(row.group(1))
    assert measured == floor.TURN_COMMITS, f"a turn makes {measured} fsync'd commits, the floor counts {floor.TURN_COMMITS}"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    floor.main(["--quick"])
    output = capsys.readouterr().out
    for level in ("power-loss", "process-crash"):
        assert f"turn floor at {level}: {int(measured)} commits" in output, output
