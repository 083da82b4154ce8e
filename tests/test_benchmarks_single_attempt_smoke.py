"""Smoke runs of the single-attempt benchmarks (issue 25, item 5): the confirmation's cost prints its
figures, and a few sessions whose tool SIGKILLs its own Worker as its first instruction end with the
call ``outcome_unknown`` and no second run (the 200-session run is the README's)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from benchmarks import single_attempt_cost, single_attempt_sigkill


def test_the_cost_benchmark_prints_the_confirmation_and_both_turns(capsys: pytest.CaptureFixture[str]) -> None:
    assert single_attempt_cost.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for label in ("confirmation per call: n=", "confirmed: n=3", "not confirmed: n=3", "load average"):
        assert label in out, out


def test_a_tool_that_sigkills_its_worker_first_runs_once(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))
    assert single_attempt_sigkill.main(["--quick"]) == 0
    assert list(scratch.iterdir()) == [], "the run (or a killed Worker child) left files behind"
    out = capsys.readouterr().out
    assert "sessions: 4 on 2 lanes" in out, out
    assert "second runs of the tool: 0" in out, out
    assert "calls recorded outcome_unknown: 4" in out, out
