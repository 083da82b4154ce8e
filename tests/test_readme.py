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


def test_the_readme_table_of_tool_effects_is_the_policies() -> None:
    """Issue 29, finding 8: which effect needs approval and how each is retried is in the README,
    and the table says what ``dex_agents.pure.machine.policies`` decides."""
    import re

    from dex_agents.pure.machine.policies import (
        approval_required_by_default,
        crash_status,
        tool_step_attempts,
        tool_step_type,
    )
    from dex_agents.pure.values.session import ToolEffect

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = {match.group(1): match.groups()[1:] for match in re.finditer(
        r"^\| `(\w+)` \| (yes|no) \| `(\w+)` \| (\d+)[^|]* \| `(\w+)` \|$", readme, re.MULTILINE)}
    assert set(rows) == {effect.value for effect in ToolEffect}
    for effect in ToolEffect:
        approval, step, attempts, crash = rows[effect.value]
        assert (approval == "yes") is approval_required_by_default(effect)
        assert (step, int(attempts), crash) == (tool_step_type(effect).value, tool_step_attempts(effect),
                                                crash_status(effect).value)
    assert "ToolPolicy(effect=..., requires_approval=...)" in readme
