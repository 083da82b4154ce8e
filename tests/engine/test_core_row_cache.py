"""The engine's in-memory copies of ``flows`` and ``steps`` rows never differ from SQLite's."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine.repository.row_cache import RowCache, StepValue
from dex_agents.engine.rows import FLOW_COLUMNS, STEP_COLUMNS, FlowRow, StepRow, flow_from_row, step_from_row
from dex_agents.engine.repository.store import Store
from tests.engine.faults import FailingCommit

ENGINE_SOURCES = Path(__file__).resolve().parents[2] / "engine" / "dex_agents" / "engine"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "engine.sqlite3")
    yield opened
    opened.close()


def _insert_run(store: Store, flow_id: str, phase: str = "execute") -> int:
    with store.transaction() as db:
        cursor = db.execute(
            "INSERT INTO flows (flow_id, run_id, flow_type, status, start_ms, request_id, config, start_request) "
            "VALUES (?, ?, 'F', 1, 0, '', x'', x'')", (flow_id, f"{flow_id}-run"))
        uid = int(cursor.lastrowid or 0)
        db.execute(
            "INSERT INTO steps (uid, seid, step_type, n, seq, input, options, from_seid, phase, attempt, "
            "first_attempt_ms) VALUES (?, 'S-1', 'S', 1, 1, x'', x'', '', ?, 1, 0)", (uid, phase))
        db.execute(
            "INSERT INTO steps (uid, seid, step_type, n, seq, input, options, from_seid, phase, attempt, "
            "first_attempt_ms) VALUES (?, 'S-2', 'S', 2, 2, x'', x'', '', 'done', 1, 0)", (uid,))
    return uid


def _stored_flow(store: Store, uid: int) -> FlowRow:
    return flow_from_row(store.db.execute(f"SELECT {FLOW_COLUMNS} FROM flows WHERE uid=?", (uid,)).fetchone())


def _stored_step(store: Store, uid: int, seid: str) -> StepRow:
    return step_from_row(store.db.execute(f"SELECT {STEP_COLUMNS} FROM steps WHERE uid=? AND seid=?",
                                          (uid, seid)).fetchone())


def _cache(store: Store, limit: int = 100) -> RowCache:
    cache = RowCache(lambda: store.db, limit)
    store.on_rollback(cache.clear)
    return cache


def test_an_update_is_seen_at_once_inside_and_after_its_transaction(store: Store) -> None:
    uid = _insert_run(store, "a")
    cache = _cache(store)
    assert cache.flow(uid) == _stored_flow(store, uid)
    assert cache.step(uid, "S-1") == _stored_step(store, uid, "S-1")
    with store.transaction() as db:
        cache.update_flow(db, uid, closing=1)
        cache.update_step(db, uid, "S-1", attempt=2, not_before_ms=7)
        inside_flow, inside_step = cache.flow(uid), cache.step(uid, "S-1")
    assert inside_flow is not None and inside_flow.closing
    assert inside_step is not None and (inside_step.attempt, inside_step.not_before_ms) == (2, 7)
    assert cache.flow(uid) == _stored_flow(store, uid)
    assert cache.step(uid, "S-1") == _stored_step(store, uid, "S-1")


STEP_CHANGES: list[dict[str, StepValue]] = [
    {"phase": "waiting", "waiting": pb.WaitingCondition(timer_conditions=[pb.TimerCondition(duration_seconds=3)])},
    {"phase": "execute", "attempt": 1, "first_attempt_ms": 5, "results": pb.ConditionResults(wait_for_failed=True),
     "heartbeat": None, "output_seen": False, "not_before_ms": 0},
    {"recovery": pb.RecoveryErrorInfo(detail="boom", error_type="E")},
    {"locals": [pb.KV(key="k", value=pb.Value(string_value="v"))]},
    {"output_seen": True, "heartbeat": pb.Value(string_value="progress")},
    {"output_seen": True, "heartbeat": pb.Value()},
    {"phase": "done"},
]


@pytest.mark.parametrize("changes", STEP_CHANGES)
def test_a_changed_step_row_in_the_cache_equals_the_stored_row(store: Store, changes: dict[str, StepValue]) -> None:
    uid = _insert_run(store, "a", "wait_for" if changes.get("phase") in ("waiting", "execute") else "execute")
    cache = _cache(store)
    assert cache.step(uid, "S-1") is not None
    with store.transaction() as db:
        cache.update_step(db, uid, "S-1", **changes)
    assert cache.step(uid, "S-1") == _stored_step(store, uid, "S-1")


def test_a_rolled_back_transaction_leaves_no_trace_in_the_cache(store: Store) -> None:
    uid = _insert_run(store, "a")
    cache = _cache(store)
    before_flow, before_step = cache.flow(uid), cache.step(uid, "S-1")
    with pytest.raises(RuntimeError), store.transaction() as db:
        cache.update_flow(db, uid, status=3)
        cache.update_step(db, uid, "S-1", phase="failed")
        assert cache.step(uid, "S-2") is not None  # read (and cached) inside the doomed transaction
        assert cache.flow(uid) is not None
        raise RuntimeError("abort")
    assert cache.flow(uid) == before_flow == _stored_flow(store, uid)
    assert cache.step(uid, "S-1") == before_step == _stored_step(store, uid, "S-1")


def test_canceling_a_run_changes_only_its_active_steps(store: Store) -> None:
    uid = _insert_run(store, "a")
    cache = _cache(store)
    done = cache.step(uid, "S-2")
    cache.step(uid, "S-1")
    with store.transaction() as db:
        cache.cancel_active_steps(db, uid)
    canceled = cache.step(uid, "S-1")
    assert canceled is not None and canceled == _stored_step(store, uid, "S-1") and canceled.phase == "canceled"
    assert cache.step(uid, "S-2") is done


def test_the_latest_run_follows_a_new_run_of_the_same_id(store: Store) -> None:
    first = _insert_run(store, "same")
    cache = _cache(store)
    latest = cache.latest_flow("same")
    assert latest is not None and latest.uid == first
    second = _insert_run(store, "same")
    cache.run_inserted("same")
    latest = cache.latest_flow("same")
    assert latest is not None and latest.uid == second
    assert cache.latest_flow("missing") is None and cache.flow(999) is None and cache.step(first, "S-9") is None


def test_the_cache_is_bounded(store: Store) -> None:
    uids = [_insert_run(store, f"run-{index}") for index in range(5)]
    cache = _cache(store, limit=2)
    for uid in uids:
        assert cache.flow(uid) == _stored_flow(store, uid)
    assert len(cache._flows) == 2  # noqa: SLF001 - the bound is the point of this test
    assert cache.flow(uids[0]) == _stored_flow(store, uids[0])


def test_no_engine_module_writes_flows_or_steps_around_the_cache() -> None:
    for source in ENGINE_SOURCES.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        if source.name != "row_cache.py":
            assert not re.search(r"UPDATE\s+(flows|steps)\b", text), f"{source.name} updates a cached table directly"
            assert not re.search(r"DELETE\s+FROM\s+(flows|steps)\b", text), f"{source.name} deletes cached rows"
        if re.search(r"INSERT\s+INTO\s+flows\b", text):
            assert text.count("run_inserted(") >= len(re.findall(r"INSERT\s+INTO\s+flows\b", text)), \
                f"{source.name} inserts a run without telling the cache"


def test_differences_names_a_row_changed_behind_the_caches_back(store: Store) -> None:
    uid = _insert_run(store, "a")
    cache = _cache(store)
    assert cache.flow(uid) is not None and cache.step(uid, "S-1") is not None and cache.latest_flow("a") is not None
    assert cache.differences() == []
    with store.transaction() as db:
        db.execute("UPDATE steps SET attempt=9 WHERE uid=?", (uid,))
        db.execute("UPDATE flows SET closing=1 WHERE uid=?", (uid,))
    _insert_run(store, "a")
    assert sorted(cache.differences()) == sorted([f"flow {uid}", f"step {uid}/S-1", "latest run of a"])


def test_a_failed_commit_rolls_back_and_the_cache_forgets_what_it_wrote(store: Store) -> None:
    uid = _insert_run(store, "a")
    cache = _cache(store)
    before = cache.step(uid, "S-1")
    failing = FailingCommit.install(store)
    real = failing.db
    try:
        with pytest.raises(sqlite3.OperationalError), store.transaction() as db:
            cache.update_step(db, uid, "S-1", phase="done")
    finally:
        failing.remove(store)
    assert not real.in_transaction, "the failed transaction was rolled back"
    assert _stored_step(store, uid, "S-1") == before
    assert cache.step(uid, "S-1") == before
    with store.transaction() as db:  # the store takes new transactions
        cache.update_step(db, uid, "S-1", phase="failed")
    assert cache.step(uid, "S-1") == _stored_step(store, uid, "S-1")
