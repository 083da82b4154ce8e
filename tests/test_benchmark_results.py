"""Issue 29, finding 12: every ``benchmarks/results/`` file the README quotes is in the repository, with
the header ``benchmarks.record`` (or the run's own harness) wrote."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.record import result_path

ROOT = Path(__file__).resolve().parents[1]


def test_every_results_file_the_readme_names_exists_and_says_when_it_ran() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = sorted(set(re.findall(r"benchmarks/results/[\w.-]+\.txt", readme)))
    assert named, "the README names its results files"
    for name in named:
        text = (ROOT / name).read_text(encoding="utf-8")
        assert text.startswith("# ") and re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d", text), name
        assert "load average" in text, name


def test_a_second_run_of_a_day_gets_its_own_file() -> None:
    assert result_path("never_run", "1999-01-01").name == "never_run-1999-01-01.txt"
    assert result_path("turn_profile", "2026-12-01").name == "turn_profile-2026-12-01-2.txt"  # the first is kept
