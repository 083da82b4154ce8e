"""Engine core, commit durability: a best-effort Stream append is committed without an fsync of its
own (SQLite ``synchronous=NORMAL`` for that commit) while every other commit keeps the store's level,
except the first output frame of a single-attempt method (it records that the attempt sent output,
which keeps a restarted engine from running it again); the ``process-crash`` level relaxes every
commit; a nested block joins its outer transaction."""

from __future__ import annotations

from pathlib import Path

import pytest
from dex import AsyncContext, RetryPolicy, StartFlowOptions, Step, StepDecision, StepOptions, force_complete

from dex_agents.engine.server import EngineServer
from dex_agents.engine.durability import Durability
from dex_agents.engine.repository.store import Store
from tests.engine.harness import StreamStepFlow, open_harness, unique_name

NORMAL, FULL = 1, 2


def test_a_best_effort_commit_is_not_fsynced_and_the_level_is_restored(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db")
    try:
        assert store.synchronous() == FULL
        with store.transaction(durable=False):
            assert store.synchronous() == NORMAL
        assert store.synchronous() == FULL
        with store.transaction():
            assert store.synchronous() == FULL
    finally:
        store.close()


def test_a_nested_block_joins_the_outer_transactions_durability(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db")
    try:
        with store.transaction():
            with store.transaction(durable=False):
                assert store.synchronous() == FULL, "the outer commit is durable"
        with store.transaction(durable=False):
            with store.transaction():
                assert store.synchronous() == NORMAL
        assert store.synchronous() == FULL
    finally:
        store.close()


def test_a_failed_best_effort_block_rolls_back_and_restores_the_level(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db")
    try:
        try:
            with store.transaction(durable=False) as db:
                db.execute("INSERT INTO timers VALUES (1, 'S-1', 0, 'c', 0, 0)")
                raise RuntimeError("boom")
        except RuntimeError:
            pass
        assert store.synchronous() == FULL
        assert store.db.execute("SELECT COUNT(*) FROM timers").fetchone()[0] == 0
    finally:
        store.close()


def test_the_process_crash_level_relaxes_every_commit(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db", Durability.PROCESS_CRASH)
    try:
        assert store.synchronous() == NORMAL
        with store.transaction():
            assert store.synchronous() == NORMAL
    finally:
        store.close()


class ThreeWrites(Step[str]):
    def __init__(self, flow: StreamStepFlow[str]) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        for n in range(3):
            self.flow.events.write(context, f"{input}-{n}")
        return force_complete("written")


class ThreeWritesOnce(ThreeWrites):
    """``ThreeWrites`` as a single-attempt method (``maximum_attempts`` 1)."""

    def get_step_options(self) -> StepOptions | None:
        return StepOptions(execute_retry=RetryPolicy(maximum_attempts=1))


def _commits(statements: list[str]) -> list[tuple[str, list[str]]]:
    """Group traced SQL into committed transactions: (synchronous level in force, statements)."""
    level, current, out = "FULL", list[str](), list[tuple[str, list[str]]]()
    open_level = level
    for sql in statements:
        if sql.startswith("PRAGMA synchronous="):
            level = sql.removeprefix("PRAGMA synchronous=")
        elif sql == "BEGIN IMMEDIATE":
            current, open_level = [], level
        elif sql == "COMMIT":
            out.append((open_level, current))
        else:
            current.append(sql)
    return out


@pytest.mark.parametrize(("step", "first_level"), [(ThreeWritesOnce, "FULL"), (ThreeWrites, "NORMAL")])
def test_stream_appends_skip_the_fsync_but_a_single_attempt_methods_first_output(
        tmp_path: Path, step: type[ThreeWrites], first_level: str) -> None:
    server = EngineServer(tmp_path / "engine.db")
    server.start()
    try:
        statements: list[str] = []
        flow = StreamStepFlow(unique_name("durability"), step)
        harness = open_harness([flow], address=server.address, cache_dir=tmp_path / "cache", async_worker=True)
        try:
            with server.engine.lock:
                server.engine.store.db.set_trace_callback(statements.append)
            flow_id = unique_name("flow")
            harness.client.start_flow(flow, flow_id, "w", StartFlowOptions())
            harness.result(flow_id)
            with server.engine.lock:
                server.engine.store.db.set_trace_callback(None)
        finally:
            harness.close()
    finally:
        server.stop(grace=0)
    appends = [(level, sql) for level, sql in _commits(statements)
               if any(s.startswith("INSERT INTO streams") for s in sql)]
    assert len(appends) == 3
    assert appends[0][0] == first_level, "only a single-attempt method's first output frame is fsync'd"
    assert [level for level, _ in appends[1:]] == ["NORMAL", "NORMAL"]
    others = [level for level, sql in _commits(statements) if not any(s.startswith("INSERT INTO streams") for s in sql)]
    assert others and set(others) == {"FULL"}, "every other commit keeps the fsync"
