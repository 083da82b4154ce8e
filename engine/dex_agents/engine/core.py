"""The engine core: the state every operation shares (one lock, the store, the clock and timing,
the scheduler, the dispatcher, the tasks in flight, Attribute locks and long-poll waiters) and the
one loop that performs the after-commit effects. It imports no operation module: the effects that
act on Steps (launch, drop a task, re-check Waits, fire a Timer), on Flows (arm a Flow timeout) and
on runs (continue as new) are performed by the components the top module (``engine``) gives it once
(:meth:`EngineCore.wire`).

Concurrency model: callers from outside enter through :meth:`EngineCore.locked`; every state change
runs under ``EngineCore.lock`` inside one SQLite transaction, and memory changes only after its commit.
An operation never performs its after-commit effects: it hands them over as data
(:meth:`EngineCore.after_commit`), and the loop (:meth:`EngineCore.perform_pending`) performs them
when the ``locked()`` block ends and after every scheduler callback, still holding the lock, so a
Step's successor is handed to an idle worker stream directly after its decision is durable. A
performer's own follow-ups (a launch that fails at once, a Timer that completes a Wait) are handed
over the same way and performed before the rest of the effects that caused them (depth first, the
order of a nested call). Nothing but the loop performs an effect, and the loop refuses to be
re-entered (``EffectsLoopReentered``). A long poll waits on its own
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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from dex.dexpb import dex_pb2 as pb

from .attribute_locks import AttributeLocks
from .blobs import Blobs
from .dispatch import Dispatcher
from .errors import flow_not_found, invalid
from .lock_discipline import assert_engine_lock_held
from .long_polls import LongPolls
from .performers import EffectsLoopReentered, FlowEffects, RunEffects, StepEffects, WaitEffects
from .rows import Effects, FlowRow, StepRow
from .repository import runs
from .repository.row_cache import RowCache
from .scheduler import Scheduler
from .repository.store import Store
from .tasks import Task
from .timing import Clock, EngineTiming, SystemClock


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
        self.scheduler = Scheduler(self.lock, self.clock, after=self._after_callback)
        self.blobs = Blobs()
        """The large values delivered tasks reference, for ``LoadBlobs`` (``blobs``)."""
        self.dispatcher = Dispatcher(self.scheduler.call_later, self.timing, self.clock, guard=self.assert_locked,
                                     blobs=self.blobs)
        self.running: dict[tuple[int, str], Task] = {}
        self.tasks: dict[str, Task] = {}
        self.attribute_locks = AttributeLocks(guard=self.assert_locked)
        """Attribute locks of Steps and RPCs (see ``attribute_locks``)."""
        self._steps: StepEffects | None = None
        self._waits: WaitEffects | None = None
        self._flows: FlowEffects | None = None
        self._runs: RunEffects | None = None
        self._queued: list[Iterator[None]] = []
        """Work handed to the loop and not started yet, oldest first (see :meth:`perform_pending`)."""
        self._stack: list[Iterator[None]] = []
        """The work the loop has started, innermost last (empty between runs of the loop)."""
        self._performing = False

    def wire(self, steps: StepEffects, waits: WaitEffects, flows: FlowEffects, runs: RunEffects | None = None) -> None:
        """Give the effects loop its performers, once (the top module ``engine`` does, right after
        building the components); without ``runs`` no run continues as new by itself."""
        if self._steps is not None or self._flows is not None:
            raise RuntimeError("the engine core is wired already")
        self._steps, self._waits, self._flows, self._runs = steps, waits, flows, runs

    def _performers(self) -> tuple[StepEffects, WaitEffects, FlowEffects]:
        if self._steps is None or self._waits is None or self._flows is None:
            raise RuntimeError("the engine core is not wired (see EngineCore.wire)")
        return self._steps, self._waits, self._flows

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The one way in for callers from outside the engine's operations (the gRPC handlers, a
        Worker stream's reader, the server's start and stop, InvokeRPC's waits): the block runs
        holding the engine lock. Operations and effects assert the lock (:meth:`assert_locked`);
        they never take it."""
        with self.lock:
            try:
                yield
            finally:
                if self._queued and not self._performing:
                    self.perform_pending()

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
        """Free every key ``holder`` holds; the run's Steps that waited for a key are handed to the
        loop to launch (in their waiting order)."""
        self.assert_locked()
        waiters = self.attribute_locks.release(uid, holder)
        if waiters:
            self._queued.append(self._launch_each(uid, waiters))

    def _timer_callback(self, uid: int, seid: str, idx: int) -> Callable[[], None]:
        _, waits, _ = self._performers()
        return lambda: waits.fire_timer(uid, seid, idx)

    def complete_waits(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Complete the run's Waits a publish satisfied inside the transaction that publishes (lock
        held), so the publish and the Waits it satisfies commit together: one commit, not two."""
        self.assert_locked()
        _, waits, _ = self._performers()
        waits.complete_waits(db, uid, effects)

    # ---- effects: handed over as data, performed by the one loop
    def after_commit(self, effects: Effects) -> None:
        """Hand the loop a committed transaction's effects (lock held). Nothing is performed here:
        the loop does it when the ``locked()`` block or the scheduler callback ends, or, when this is
        a performer's follow-up, right after that performer (before the rest of its own batch)."""
        self._queued.append(self._perform(effects))

    def later(self, job: Callable[[], None]) -> None:
        """Hand the loop a job to run in turn (one recovered run, one overdue task): the follow-ups of
        each job are performed before the next job runs, as when the jobs ran one after the other."""
        self._queued.append(self._run_job(job))

    def _after_callback(self) -> None:
        if self._queued and not self._performing:
            self.perform_pending()

    def perform_pending(self) -> None:
        """The effects loop: perform what was handed over, depth first (lock held). Called only when
        a ``locked()`` block ends and after each scheduler callback; an operation or a performer
        that calls it raises ``EffectsLoopReentered``. An exception from a performer drops the
        rest of the work, as it would leave a chain of nested calls, and propagates."""
        self.assert_locked()
        if self._performing:
            raise EffectsLoopReentered("the effects loop was re-entered: hand effects over with after_commit")
        queued, stack = self._queued, self._stack
        self._performing = True
        try:
            while True:
                if queued:
                    stack.extend(reversed(queued))
                    queued.clear()
                if not stack:
                    return
                for _ in stack[-1]:  # each step of the work on top yields; new work goes first
                    if queued:
                        break
                else:
                    stack.pop()
        except BaseException:
            queued.clear()
            stack.clear()
            raise
        finally:
            self._performing = False

    @staticmethod
    def _run_job(job: Callable[[], None]) -> Iterator[None]:
        job()
        yield

    def _launch_each(self, uid: int, seids: Iterable[str]) -> Iterator[None]:
        steps, _, _ = self._performers()
        for seid in seids:
            steps.launch(uid, seid)
            yield

    def _perform(self, effects: Effects) -> Iterator[None]:
        """Perform one transaction's after-commit effects, yielding after each performer call (the
        loop then performs that call's follow-ups first)."""
        steps, waits, flows = self._performers()
        for uid, seid in effects.cancels:
            steps.drop_task(uid, seid)
            yield
        for fire_at, uid, seid, idx in effects.timers:
            self.scheduler.call_at(fire_at, self._timer_callback(uid, seid, idx))
        for uid, timeout_ms, timeout_policy in effects.flow_timeouts:
            flows.arm_timeout(uid, timeout_ms, timeout_policy)
        for uid, seid in effects.launches:
            steps.launch(uid, seid)
            yield
        for uid in effects.wait_checks:
            waits.check_waits(uid)
            yield
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
                yield
