"""The engine README stays true: its Python example runs as written and prints what it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme_examples import python_blocks, run_example

README = Path(__file__).resolve().parents[2] / "engine" / "README.md"
PYTHON_BLOCKS = python_blocks(README)


def test_the_engine_readme_has_a_python_example() -> None:
    assert PYTHON_BLOCKS


@pytest.mark.parametrize("source", PYTHON_BLOCKS)
def test_the_engine_readme_python_example_runs(
    source: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_example(source, README, tmp_path, monkeypatch)
    assert capsys.readouterr().out.splitlines() == ["hello, world"] * 3
