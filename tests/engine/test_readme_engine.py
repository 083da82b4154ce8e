"""The engine README stays true: its Python example runs as written and prints what it shows."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "engine" / "README.md"
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_engine_readme_has_a_python_example() -> None:
    assert PYTHON_BLOCKS


@pytest.mark.parametrize("source", PYTHON_BLOCKS)
def test_the_engine_readme_python_example_runs(
    source: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    exec(compile(source, str(README), "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.splitlines() == ["hello, world"] * 3
    assert list(temporary.iterdir()) == [], "the example leaves no temporary files behind"
