"""Engine core, a large backlog (no server): queuing a task costs the same with 10 or 10,000 tasks
queued (restart with N open runs queues N tasks), releasing a holder's Attribute locks touches only
its own keys, a restart serves at once and recovers its open runs in batches, and the queue keeps
its order: oldest first, a
re-queued task first of all, a withdrawn task never delivered, and an RPC passes Step tasks that no
stream may take."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine import recovery
from dex_agents.engine.dispatch import Dispatcher
from dex_agents.engine.pending import PendingTasks
from dex_agents.engine.tasks import WorkerStream
from dex_agents.engine.engine import Engine
from dex_agents.engine.server import EngineServer
from dex_agents.engine.steps import StepOps
from dex_agents.engine.repository.store import Store

from .test_core_dispatch import dispatcher, sent, task

BACKLOG = 3000


def test_queuing_behind_a_backlog_does_not_walk_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = 0
    usable = Dispatcher._usable

    def counting(stream: WorkerStream, now: float) -> bool:
        nonlocal checks
        checks += 1
        return usable(stream, now)

    monkeypatch.setattr(Dispatcher, "_usable", staticmethod(counting))
    d, _ = dispatcher()
    backing_off = WorkerStream("Q", "w1")
    d.register(backing_off)
    sent(backing_off)
    backing_off.declined_until = time.monotonic() + 3600  # idle but not usable: every task must wait
    for i in range(BACKLOG):
        d.submit(task(f"t{i}"))
    assert sent(backing_off) == []
    assert checks <= 4 * BACKLOG, f"{checks} stream checks for {BACKLOG} submits: each submit walked the queue"


def test_the_queue_keeps_its_order_with_front_submits_and_withdrawals() -> None:
    d, _ = dispatcher()
    first, second, requeued = task("first"), task("second"), task("requeued")
    withdrawn = task("withdrawn")
    for t in (first, withdrawn, second):
        d.submit(t)
    d.submit(requeued, front=True)
    assert d.withdraw(withdrawn) and not d.withdraw(withdrawn)
    stream = WorkerStream("Q", "w1")
    d.register(stream)
    delivered = []
    for _ in range(4):
        frames = [f for f in sent(stream) if f.startswith("task:")]
        delivered += frames
        if stream.task is not None:
            d.finish(stream.task)
    assert delivered == ["task:requeued", "task:first", "task:second"]


def test_an_rpc_passes_step_tasks_only_a_saturated_workers_spare_could_take() -> None:
    queue = PendingTasks()
    steps = [task(f"s{i}") for i in range(3)]
    rpc = task("r", kind="rpc")
    for t in (*steps, rpc):
        queue.push(t)
    assert len(queue) == 4
    assert queue.pop(steps=False) is rpc, "with no stream for Steps only the RPC may go"
    assert queue.pop(steps=False) is None
    assert [queue.pop(steps=True) for _ in range(3)] == steps
    assert len(queue) == 0 and queue.pop(steps=True) is None


class _NoWalk(dict[tuple[int, str], str]):
    """The lock table; walking it (rather than looking keys up) is what a backlog makes slow."""

    def items(self) -> Any:
        raise AssertionError("the whole lock table was walked")

    def __iter__(self) -> Any:
        raise AssertionError("the whole lock table was walked")


def test_releasing_a_holders_locks_does_not_walk_every_held_lock(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db")
    try:
        engine = Engine(store)
        locks = engine.attribute_locks
        locks.owners = _NoWalk()
        with engine.lock:
            for uid in range(1, BACKLOG):
                locks.acquire(uid, ["K"], "step:S-1")
                locks.wait(uid, "S-2")
            locks.acquire(BACKLOG, ["K", "L"], "step:S-1")
            assert locks.release(BACKLOG, "step:S-1") == []
            assert locks.held(BACKLOG, ["K", "L"], "rpc:x") == []
            assert locks.held(1, ["K"], "rpc:x") == ["K"], "another run's lock was freed"
            assert locks.release(1, "step:S-1") == ["S-2"], "the run's waiting Step is handed back"
            assert locks.waiting(2) == ["S-2"], "another run's waiting Step stays"
    finally:
        store.close()


def test_a_restart_serves_at_once_and_recovers_the_backlog_in_batches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = 5
    db_path = tmp_path / "engine.db"
    first = EngineServer(db_path)
    first.start()
    opened = grpc.insecure_channel(first.address)
    try:
        stub = dex_pb2_grpc.FlowServiceStub(opened)
        for i in range(runs):
            stub.StartFlow(pb.StartFlowRequest(flow_id=f"f{i}", flow_type="T", request_id=f"r{i}",
                                               start_step_type="S", step_input=pb.Value(int_value=i)))
    finally:
        opened.close()
        first.stop(grace=0)

    monkeypatch.setattr(recovery, "RECOVERY_BATCH", 2)
    starter = threading.current_thread()
    launched_by_start = 0
    launch = StepOps.launch

    def counting(steps: StepOps, uid: int, seid: str) -> None:
        nonlocal launched_by_start
        if threading.current_thread() is starter:
            launched_by_start += 1
        launch(steps, uid, seid)

    monkeypatch.setattr(StepOps, "launch", counting)
    server = EngineServer(db_path)
    server.start()
    try:
        assert launched_by_start == 2, f"start recovered {launched_by_start} runs before serving, not one batch"
        assert server.recovered.wait(10), "the rest of the backlog was never recovered"
        with server.engine.lock:
            assert len(server.engine.running) == runs, "a recovered run has no queued task"
    finally:
        server.stop(grace=0)
