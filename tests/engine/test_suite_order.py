"""The suite's run order (``run_order``): long tests spread evenly over the first quarter
of the run (all first when they are more), each group in its own order, nothing lost or repeated."""

from __future__ import annotations

import pytest

from tests.engine.run_order import LONG_RUNNING_MODULES, SUITE_DIRECTORY, is_long_running, spread_early


def _is_long(name: str) -> bool:
    return name.startswith("L")


@pytest.mark.parametrize(("longs", "shorts"), [(10, 90), (3, 300), (51, 261), (40, 60), (5, 2), (0, 7), (4, 0)])
def test_long_items_are_spread_over_the_first_quarter(longs: int, shorts: int) -> None:
    items = [f"S{n}" for n in range(shorts)] + [f"L{n}" for n in range(longs)]
    ordered = spread_early(items, _is_long)
    assert sorted(ordered) == sorted(items)
    assert [name for name in ordered if _is_long(name)] == [f"L{n}" for n in range(longs)]
    assert [name for name in ordered if not _is_long(name)] == [f"S{n}" for n in range(shorts)]
    positions = [index for index, name in enumerate(ordered) if _is_long(name)]
    front = max(longs, len(items) // 4)
    assert all(position < front for position in positions), "every long item in the front"
    gaps = [later - earlier for earlier, later in zip(positions, positions[1:], strict=False)]
    assert not gaps or max(gaps) - min(gaps) <= 1, "evenly spaced"


def test_only_this_directorys_long_running_modules_are_long() -> None:
    assert {path.stem for path in SUITE_DIRECTORY.glob("test_*.py")} >= LONG_RUNNING_MODULES, "no stale names"
    assert is_long_running(SUITE_DIRECTORY / "test_timeouts.py")
    assert not is_long_running(SUITE_DIRECTORY / "test_waits.py")
    assert not is_long_running(SUITE_DIRECTORY.parent / "shell" / "test_timeouts.py")
