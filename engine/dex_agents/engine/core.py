"""The engine core: the state every operation shares (one lock, the store, the clock and timing,
the scheduler, the dispatcher, the tasks in flight, Attribute locks and long-poll waiters) and the
after-commit effects. It imports no operation module: the effects that act on Steps (launch, drop a
task, re-check Waits, fire a Timer) and on Flows (arm a Flow timeout) are performed by the operations
the top module (``engine``) gives it once (:meth:`EngineCore.wire`).

Concurrency model: callers from outside enter through :meth:`EngineCore.locked`; every state change
runs under ``EngineCore.lock`` inside one SQLite transaction, and memory changes only after its commit;
after the commit, :meth:`EngineCore.apply` performs the effects (dispatch the next tasks, cancel
running ones, arm Timers) while still holding the lock, so a Step's successor is handed to an
idle worker stream directly after its decision is durable. A long poll waits on its own
``long_polls.LongPoll`` (a condition over the same lock) registered under the key of what it waits
for (a run's close, a run's state, one Stream of one Flow) in :attr:`EngineCore.long_polls`; a commit
wakes only the waiters of the runs it touched, and a client's cancel wakes its waiter at once.

Locks (Attribute locks shared by Steps and RPCs) live in memory (``attribute_locks``): a Step method
acquires all its keys before it is dispatched and holds them until its result commits; a Step whose
keys are held waits (FIFO) until they free. An RPC that finds a key held fails at once
(``RpcLockConflictError``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from dex.dexpb import dex_pb2 as pb

from .attribute_locks import AttributeLocks
from .blobs import Blobs
from .dispatch import Dispatcher
from .errors import flow_not_found, invalid
from .lock_discipline import assert_engine_lock_held
from .long_polls import LongPolls
from .rows import Effects, FlowRow, StepRow
from .repository import runs
from .repository.row_cache import RowCache
from .scheduler import Scheduler
from .repository.store import Store
from .tasks import Task
from .timing import Clock, EngineTiming, SystemClock


class StepEffects(Protocol):
    """What the after-commit effects ask of the Step operations (``steps.StepOps``)."""

    def launch(self, uid: int, seid: str) -> None:
        """Dispatch the Step's current method."""

    def drop_task(self, uid: int, seid: str) -> None:
        """Stop the task of a canceled or closed Step execution."""

    def check_waits(self, uid: int) -> None:
        """Re-evaluate the run's waiting Steps."""

    def complete_waits(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Complete, in the open transaction, the run's Waits its publishes satisfied."""

    def fire_timer(self, uid: int, seid: str, idx: int) -> None:
        """A Timer's time came."""


class FlowEffects(Protocol):
    """What the after-commit effects ask of the Flow operations (``flows.FlowOps``)."""

    def arm_timeout(self, uid: int, timeout_ms: int, timeout_policy: int) -> None:
        """Close the run when its Flow timeout passes."""


class RunEffects(Protocol):
    """What the after-commit effects ask of the continue-as-new operations (``continue_as_new``)."""

    def continue_if_due(self, uid: int, events: int) -> None:
        """Roll the run over if its history (``events`` long) exceeds its threshold."""


class EngineCore:
    """Shared state of one engine process. The operations that perform its after-commit effects
    are given to it once, by :meth:`wire` (the top module ``engine`` does it); the core imports none."""

    def __init__(self, store: Store, *, timing: EngineTiming | None = None, clock: Clock | None = None) -> None:
        self.store = store
        self.rows = RowCache(lambda: store.db)
        """The hot ``flows``/``steps`` rows; every UPDATE of those tables goes through it."""
        store.on_rollback(self.rows.clear)
        self.timing = timing if timing is not None else EngineTiming()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.lock = threading.RLock()
        self.stopped = False
        self.long_polls = LongPolls(self.lock, self.assert_locked, lambda: self.stopped)
        """The long polls waiting on this engine's commits (see ``long_polls``)."""
        self.scheduler = Scheduler(self.lock, self.clock)
        self.blobs = Blobs()
        """The large values delivered tasks reference, for ``LoadBlobs`` (``blobs``)."""
        self.dispatcher = Dispatcher(self.scheduler.call_later, self.timing, self.clock, guard=self.assert_locked,
                                     blobs=self.blobs)
        self.running: dict[tuple[int, str], Task] = {}
        self.tasks: dict[str, Task] = {}
        self.attribute_locks = AttributeLocks(guard=self.assert_locked)
        """Attribute locks of Steps and RPCs (see ``attribute_locks``)."""
        self._steps: StepEffects | None = None
        self._flows: FlowEffects | None = None
        self._runs: RunEffects | None = None

    def wire(self, steps: StepEffects, flows: FlowEffects, runs: RunEffects | None = None) -> None:
        """Give the after-commit effects their performers, once (the top module ``engine`` does,
        right after building the operations); without ``runs`` no run continues as new by itself."""
        if self._steps is not None or self._flows is not None:
            raise RuntimeError("the engine core is wired already")
        self._steps, self._flows, self._runs = steps, flows, runs

    def _performers(self) -> tuple[StepEffects, FlowEffects]:
        if self._steps is None or self._flows is None:
            raise RuntimeError("the engine core is not wired (see EngineCore.wire)")
        return self._steps, self._flows

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The one way in for callers from outside the engine's operations (the gRPC handlers, a
        Worker stream's reader, the server's start and stop, InvokeRPC's waits): the block runs
        holding the engine lock. Operations and effects assert the lock (:meth:`assert_locked`);
        they never take it."""
        with self.lock:
            yield

    def assert_locked(self) -> None:
        """Raise ``EngineLockNotHeld`` unless the calling thread holds :attr:`lock`."""
        assert_engine_lock_held(self.lock)

    def now_ms(self) -> int:
        """The engine clock's wall time in milliseconds."""
        return int(self.clock.time() * 1000)

    # ---- rows
    def flow(self, uid: int) -> FlowRow | None:
        """The run with internal id ``uid``."""
        return self.rows.flow(uid)

    def current_flow(self, flow_id: str, run_id: str = "") -> FlowRow | None:
        """The latest run of ``flow_id`` (or the named run)."""
        if not run_id:
            return self.rows.latest_flow(flow_id)
        uid = runs.uid_of_run(self.store.db, flow_id, run_id)
        return self.rows.flow(uid) if uid is not None else None

    def require_flow(self, flow_id: str, run_id: str = "") -> FlowRow:
        """The latest run of ``flow_id`` (or the named run); ``flow_id`` missing is INVALID_ARGUMENT,
        no such run NOT_FOUND (``ServiceError``)."""
        if not flow_id:
            raise invalid("flow_id is required")
        flow = self.current_flow(flow_id, run_id)
        if flow is None:
            raise flow_not_found(flow_id)
        return flow

    def step(self, uid: int, seid: str) -> StepRow | None:
        """One Step execution."""
        return self.rows.step(uid, seid)

    def active_steps(self, uid: int) -> list[StepRow]:
        """The run's Step executions that have not finished, oldest first."""
        return [step for seid in runs.active_seids(self.store.db, uid) if (step := self.rows.step(uid, seid)) is not None]

    def flow_result(self, uid: int) -> pb.FlowResult:
        """The run's FlowResult (status, outputs, error)."""
        self.assert_locked()
        row = runs.result_columns(self.store.db, uid)
        result = pb.FlowResult()
        if row is None:
            return result
        status, error_type, error_message, results = row
        if results:
            result.ParseFromString(results)
        result.flow_status = status  # type: ignore[assignment]
        result.error_type = error_type  # type: ignore[assignment]
        result.error_message = error_message
        return result

    # ---- tasks and locks
    def track(self, task: Task) -> None:
        """Remember a task until it finishes."""
        self.assert_locked()
        self.tasks[task.task_id] = task
        if task.kind != "rpc":
            self.running[(task.uid, task.seid)] = task

    def untrack(self, task: Task) -> None:
        """Forget a finished or canceled task."""
        self.assert_locked()
        self.tasks.pop(task.task_id, None)
        if task.kind != "rpc" and self.running.get((task.uid, task.seid)) is task:
            del self.running[(task.uid, task.seid)]

    @property
    def locks(self) -> dict[tuple[int, str], str]:
        """The held Attribute lock keys: (run, key) -> holder (read-only, for tests and diagnostics)."""
        return self.attribute_locks.owners

    def release(self, uid: int, holder: str) -> None:
        """Free every key ``holder`` holds and launch the run's Steps that waited for a key."""
        self.assert_locked()
        waiters = self.attribute_locks.release(uid, holder)
        if waiters:
            steps, _ = self._performers()
            for seid in waiters:
                steps.launch(uid, seid)

    def _timer_callback(self, uid: int, seid: str, idx: int) -> Callable[[], None]:
        steps, _ = self._performers()
        return lambda: steps.fire_timer(uid, seid, idx)

    def complete_waits(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Complete the run's Waits a publish satisfied inside the transaction that publishes (lock
        held), so the publish and the Waits it satisfies commit together: one commit, not two."""
        self.assert_locked()
        steps, _ = self._performers()
        steps.complete_waits(db, uid, effects)

    # ---- effects
    def apply(self, effects: Effects) -> None:
        """Perform the after-commit effects of a transaction (lock held)."""
        self.assert_locked()
        steps, flows = self._performers()
        for uid, seid in effects.cancels:
            steps.drop_task(uid, seid)
        for fire_at, uid, seid, idx in effects.timers:
            self.scheduler.call_at(fire_at, self._timer_callback(uid, seid, idx))
        for uid, timeout_ms, timeout_policy in effects.flow_timeouts:
            flows.arm_timeout(uid, timeout_ms, timeout_policy)
        for uid, seid in effects.launches:
            steps.launch(uid, seid)
        for uid in effects.wait_checks:
            steps.check_waits(uid)
        for uid in effects.closed:
            self.attribute_locks.forget_run(uid)
        polls = self.long_polls
        if polls.waiting:
            touched = (effects.touched | effects.wait_checks | effects.closed | {uid for uid, _ in effects.launches}
                       | {uid for uid, _ in effects.cancels} | {uid for _, uid, _, _ in effects.timers})
            for uid in touched:
                polls.notify(("state", uid))
            for written in effects.written:
                polls.notify(("attribute", written))
            if effects.closed:
                for key in polls.keys():
                    kind, what = key
                    if (kind == "closed" and what in effects.closed) or (
                            kind == "attribute" and isinstance(what, tuple) and what[0] in effects.closed):
                        polls.notify(key)
        if self.store.recorded and self._runs is not None:
            for uid, events in self.store.take_recorded().items():
                self._runs.continue_if_due(uid, events)
