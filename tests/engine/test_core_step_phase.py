"""Engine core, a Step execution's phase is an explicit state machine: the moves its table allows
are the only ones the row cache lets through (anything else raises ``IllegalStepTransition``), the
final phases have none, and every active phase may be canceled (a run's close cancels them all)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from dex_agents.engine.repository.row_cache import RowCache
from dex_agents.engine.step_phase import (
    ACTIVE_PHASES,
    CREATED_AS,
    MOVES,
    IllegalStepTransition,
    Phase,
    check_move,
)
from dex_agents.engine.repository.store import Store

PHASES: tuple[Phase, ...] = get_args(Phase)


@pytest.mark.parametrize(("old", "new"), list(itertools.product(PHASES, PHASES)))
def test_a_move_is_allowed_exactly_when_the_table_says(old: Phase, new: Phase) -> None:
    if old == new or new in MOVES[old]:
        check_move("S-1", old, new)
    else:
        with pytest.raises(IllegalStepTransition, match=f"{old} -> {new}"):
            check_move("S-1", old, new)


def test_the_table_is_a_life_that_ends() -> None:
    assert set(MOVES) == set(PHASES)
    assert {phase for phase in PHASES if not MOVES[phase]} == {"done", "failed", "canceled"}
    assert set(ACTIVE_PHASES) == {phase for phase in PHASES if MOVES[phase]}
    assert all("canceled" in MOVES[phase] for phase in ACTIVE_PHASES)
    assert CREATED_AS <= set(ACTIVE_PHASES)
    reachable = set(CREATED_AS)
    for _ in PHASES:
        reachable |= {to for phase in reachable for to in MOVES[phase]}
    assert reachable == set(PHASES), "every phase is reachable from a creation"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "engine.sqlite3")
    yield opened
    opened.close()


def test_the_row_cache_refuses_a_move_the_table_does_not_allow(store: Store) -> None:
    with store.transaction() as db:
        db.execute("INSERT INTO flows (flow_id, run_id, flow_type, status, start_ms, request_id, config, start_request) "
                   "VALUES ('f', 'r', 'F', 1, 0, '', x'', x'')")
        db.execute("INSERT INTO steps (uid, seid, step_type, n, seq, input, options, from_seid, phase, attempt, "
                   "first_attempt_ms) VALUES (1, 'S-1', 'S', 1, 1, x'', x'', '', 'execute', 1, 0)")
    rows = RowCache(lambda: store.db)
    store.on_rollback(rows.clear)
    with store.transaction() as db:
        rows.update_step(db, 1, "S-1", phase="done")
    with pytest.raises(IllegalStepTransition, match="done -> execute"), store.transaction() as db:
        rows.update_step(db, 1, "S-1", phase="execute")
    step = rows.step(1, "S-1")
    assert step is not None and step.phase == "done"
