"""The README stays true: its Python examples run as written."""

from pathlib import Path

import pytest

from tests.readme_examples import python_blocks, run_example

README = Path(__file__).resolve().parents[1] / "README.md"
PYTHON_BLOCKS = python_blocks(README)


def test_readme_has_python_examples() -> None:
    assert PYTHON_BLOCKS


@pytest.mark.parametrize("source", PYTHON_BLOCKS)
def test_readme_python_example_runs(
    source: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_example(source, README, tmp_path, monkeypatch)
    assert capsys.readouterr().out.strip(), "the example prints what it shows"
