"""Smoke runs of the profile benchmarks of issue 16 (each in a child process: ``turn_profile`` and
``large_messages`` instrument the engine's classes): each completes and prints its figures' labels.
The figures themselves are never asserted. ``side_by_side``'s table is checked on rows of its format."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.side_by_side import MachineSample, machine_line, table

ROOT = Path(__file__).resolve().parent.parent


def run(module: str, *args: str) -> str:
    completed = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                               timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


@pytest.mark.slow
def test_turn_profile_counts_frames_commits_and_decodes_per_turn() -> None:
    output = run("benchmarks.turn_profile", "--turns", "2")
    for label in ("counts per turn", "bytes to Worker", "commits (fsync'd)", "frames from Worker: execute.result",
                  "values decoded", "framework messages rebuilt"):
        assert label in output
    fresh = run("benchmarks.turn_profile", "--turns", "2", "--fresh")
    assert "2 fresh sessions, one turn each" in fresh


@pytest.mark.slow
def test_shape_floor_prints_the_turn_and_its_cpu() -> None:
    output = run("benchmarks.shape_floor", "--turns", "3")
    for label in ("Step shape of a one-tool turn", "turn: n=3 p50=", "CPU per turn: engine"):
        assert label in output


@pytest.mark.slow
def test_large_messages_completes_every_turn_and_both_reads() -> None:
    output = run("benchmarks.large_messages", "--messages", "2", "--short-turns", "1")
    assert "LoadBlobs" in output
    assert "warm Worker: snapshot of 6 messages" in output
    assert "Worker without its cache: snapshot of 6 messages" in output


def test_the_side_by_side_table_gives_each_row_its_own_systems_overhead() -> None:
    rows: list[dict[str, object]] = [
        {"system": "a", "variant": "baseline", "durable": False, "baseline": None, "p50_ms": 2.0, "p90_ms": 3.0,
         "cpu_ms_per_turn_python": 2.0},
        {"system": "a", "variant": "sync", "durable": True, "baseline": "baseline", "p50_ms": 6.5, "p90_ms": 8.0,
         "cpu_ms_per_turn_python": 5.0, "cpu_ms_per_turn_engine": 4.0},
        {"system": "b", "variant": "baseline-long", "durable": False, "baseline": None, "p50_ms": 9.0, "p90_ms": 9.0,
         "cpu_ms_per_turn_python": 9.0},
        {"system": "b", "variant": "one-session", "durable": True, "baseline": "baseline-long", "p50_ms": 20.0,
         "p90_ms": 30.0, "cpu_ms_per_turn_python": 9.0},
    ]
    sample = MachineSample.now()
    lines = table(rows, {"a": machine_line(sample, sample)})
    assert "| a | sync | yes | 6.50 | 8.00 | +4.50 | +5.00 | 5.00 python + 4.00 engine |" in lines
    assert "| b | one-session | yes | 20.0 | 30.0 | +11.0 | +21.0 | 9.00 python |" in lines
    assert any(line.startswith("- a: load ") and "steal" in line for line in lines)
