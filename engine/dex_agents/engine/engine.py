"""The engine core: one lock, the store, the dispatcher, the scheduler, and the glue between them.

Concurrency model: every state change runs under ``Engine.lock`` inside one SQLite transaction;
after the commit, :meth:`Engine.apply` performs the effects (dispatch the next tasks, cancel
running ones, arm Timers) while still holding the lock, so a Step's successor is handed to an
idle worker stream directly after its decision is durable. Long polls wait on ``Engine.changed``
(conditions over the same lock, one per kind of change), notified only when someone waits.

Locks (Attribute locks shared by Steps and RPCs) live in memory: a Step method acquires all its
keys before it is dispatched and holds them until its result commits; a Step whose keys are held
waits (FIFO) until they free. An RPC that finds a key held fails at once (``RpcLockConflictError``).

Module map: ``server`` (EngineServer, gRPC wiring), ``service`` (FlowService adapter),
``worker_service`` (PollWorkerTask adapter), ``dispatch`` (worker streams and task hand-off),
``steps`` / ``outcomes`` (Step lifecycle, results, retries, Waits), ``waits`` (pure Wait
evaluation), ``flows`` (start, decisions, close, stop), ``rpcs``, ``streams``, ``queries`` (describe,
long polls, search, history), ``history``, ``state`` (Attributes, Channels), ``store`` (schema),
``rows``, ``policy`` (retry and timeout defaults), ``scheduler``, ``recovery``, ``errors``,
``request_checks`` (request decoding and bounds, before any handler).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

from . import policy
from .dispatch import Dispatcher, Task
from .rows import ACTIVE_PHASES, FLOW_COLUMNS, STEP_COLUMNS, Effects, FlowRow, StepRow, flow_from_row, step_from_row
from .scheduler import Scheduler
from .store import Store


WaitKind = Literal["closed", "state", "stream"]
"""Long-poll wake-ups: a run closed; any committed state change; a Stream append."""


def now_ms() -> int:
    """Wall-clock Unix time in milliseconds."""
    return time.time_ns() // 1_000_000


class Engine:
    """Shared state of one engine process; the operation modules hang off it."""

    def __init__(self, store: Store, *, dispatch_wait: float = policy.DISPATCH_WAIT) -> None:
        from .flows import FlowOps
        from .rpcs import RpcOps
        from .steps import StepOps
        from .streams import StreamOps

        self.store = store
        self.lock = threading.RLock()
        self.changed = {kind: threading.Condition(self.lock) for kind in ("closed", "state", "stream")}
        self._waiting = {kind: 0 for kind in self.changed}
        self.scheduler = Scheduler(self.lock)
        self.dispatcher = Dispatcher(self.scheduler.call_later, dispatch_wait)
        self.running: dict[tuple[int, str], Task] = {}
        self.tasks: dict[str, Task] = {}
        self.locks: dict[tuple[int, str], str] = {}
        self.lock_waiters: list[tuple[int, str]] = []
        self.steps = StepOps(self)
        self.flows = FlowOps(self)
        self.rpcs = RpcOps(self)
        self.streams = StreamOps(self)
        self.stopped = False

    # ---- rows
    def flow(self, uid: int) -> FlowRow | None:
        """The run with internal id ``uid``."""
        row = self.store.db.execute(f"SELECT {FLOW_COLUMNS} FROM flows WHERE uid=?", (uid,)).fetchone()
        return flow_from_row(row) if row else None

    def current_flow(self, flow_id: str, run_id: str = "") -> FlowRow | None:
        """The latest run of ``flow_id`` (or the named run)."""
        if run_id:
            row = self.store.db.execute(
                f"SELECT {FLOW_COLUMNS} FROM flows WHERE flow_id=? AND run_id=?", (flow_id, run_id)
            ).fetchone()
        else:
            row = self.store.db.execute(
                f"SELECT {FLOW_COLUMNS} FROM flows WHERE flow_id=? ORDER BY uid DESC LIMIT 1", (flow_id,)
            ).fetchone()
        return flow_from_row(row) if row else None

    def step(self, uid: int, seid: str) -> StepRow | None:
        """One Step execution."""
        row = self.store.db.execute(f"SELECT {STEP_COLUMNS} FROM steps WHERE uid=? AND seid=?", (uid, seid)).fetchone()
        return step_from_row(row) if row else None

    def active_steps(self, uid: int) -> list[StepRow]:
        """The run's Step executions that have not finished, oldest first."""
        rows = self.store.db.execute(
            f"SELECT {STEP_COLUMNS} FROM steps WHERE uid=? AND phase IN (?, ?, ?) ORDER BY seq",
            (uid, *ACTIVE_PHASES),
        ).fetchall()
        return [step_from_row(row) for row in rows]

    # ---- tasks and locks
    def track(self, task: Task) -> None:
        """Remember a task until it finishes."""
        self.tasks[task.task_id] = task
        if task.kind != "rpc":
            self.running[(task.uid, task.seid)] = task

    def untrack(self, task: Task) -> None:
        """Forget a finished or canceled task."""
        self.tasks.pop(task.task_id, None)
        if task.kind != "rpc" and self.running.get((task.uid, task.seid)) is task:
            del self.running[(task.uid, task.seid)]

    def held(self, uid: int, keys: list[str], holder: str) -> list[str]:
        """The keys of ``keys`` held by someone other than ``holder``."""
        return [key for key in keys if self.locks.get((uid, key), holder) != holder]

    def acquire(self, uid: int, keys: list[str], holder: str) -> None:
        """Take the keys (the caller checked they are free)."""
        for key in keys:
            self.locks[(uid, key)] = holder

    def release(self, uid: int, holder: str) -> None:
        """Free every key ``holder`` holds and give waiting Steps their turn."""
        freed = [k for k, h in self.locks.items() if k[0] == uid and h == holder]
        for key in freed:
            del self.locks[key]
        if freed and self.lock_waiters:
            waiters = [w for w in self.lock_waiters if w[0] == uid]
            self.lock_waiters = [w for w in self.lock_waiters if w[0] != uid]
            for waiter_uid, seid in waiters:
                self.steps.launch(waiter_uid, seid)

    def _timer_callback(self, uid: int, seid: str, idx: int) -> Callable[[], None]:
        return lambda: self.steps.fire_timer(uid, seid, idx)

    # ---- effects
    def apply(self, effects: Effects) -> None:
        """Perform the after-commit effects of a transaction (lock held)."""
        for uid, seid in effects.cancels:
            self.steps.drop_task(uid, seid)
        for fire_at, uid, seid, idx in effects.timers:
            self.scheduler.call_at(fire_at, self._timer_callback(uid, seid, idx))
        for uid, seid in effects.launches:
            self.steps.launch(uid, seid)
        for uid in effects.wait_checks:
            self.steps.check_waits(uid)
        for uid in effects.closed:
            self.lock_waiters = [w for w in self.lock_waiters if w[0] != uid]
        self.notify("state")
        if effects.closed:
            self.notify("closed")

    def notify(self, kind: WaitKind) -> None:
        """Wake long polls of ``kind`` (cheap when nobody waits)."""
        if self._waiting[kind]:
            self.changed[kind].notify_all()

    def notify_all(self) -> None:
        """Wake every long poll (used on shutdown)."""
        for condition in self.changed.values():
            condition.notify_all()

    def wait_change(self, kind: WaitKind, timeout: float) -> None:
        """Wait (lock held) until a change of ``kind`` is committed or ``timeout`` passes."""
        self._waiting[kind] += 1
        try:
            self.changed[kind].wait(timeout)
        finally:
            self._waiting[kind] -= 1
