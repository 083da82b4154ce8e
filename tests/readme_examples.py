"""The Python examples of a README, and running one as written (in a temporary directory of its own,
which it must leave empty)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest


def python_blocks(readme: Path) -> list[str]:
    """The ```python blocks of ``readme``, in order."""
    return re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.DOTALL)


def run_example(source: str, readme: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Execute ``source`` as a module of its own; fails if it leaves anything in the temp directory."""
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    exec(compile(source, str(readme), "exec"), {"__name__": "readme_example"})
    assert list(temporary.iterdir()) == [], "the example leaves no temporary files behind"
