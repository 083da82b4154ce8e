"""Recovery on start: bring every committed open run back to life from the database.

- Flow timeouts are re-armed.
- A Step method that was in flight is re-dispatched with the same attempt when its attempt sent no
  output frame (heartbeat or Stream write); otherwise that attempt counts as failed and retries
  (or routes) by policy, as for a lost worker.
- Waiting Steps get their pending Timers re-armed (overdue ones fire at once) and their Waits
  re-evaluated against the Channels.

Runs are recovered in batches of ``RECOVERY_BATCH``, oldest first: the first batch before the
engine serves, the rest on the scheduler thread, each batch under the engine lock, so the engine
is ready in a moment however large its backlog and serves calls between batches. Every step of
recovery is idempotent against what calls did meanwhile (a launch skips a running or closed
Step, a Timer fires once), so a run touched before its batch comes is recovered all the same.
"""

from __future__ import annotations

import threading
from collections import deque

from dex.dexpb import dex_pb2 as pb

from .engine import Engine
from .repository import runs
from .repository import steps as stored_steps
from .rows import Effects
from .tasks import Task


RECOVERY_BATCH = 200
"""Open runs recovered per batch (one batch holds the engine lock for roughly 0.1 s)."""


def recover(engine: Engine) -> threading.Event:
    """Recover the first batch of open runs now and schedule the rest (engine lock held); the
    returned event is set once every open run is recovered."""
    engine.assert_locked()
    db = engine.store.db
    running = deque(runs.running_uids(db))
    done = threading.Event()

    def next_batch() -> None:
        if engine.stopped:
            return
        for _ in range(min(RECOVERY_BATCH, len(running))):
            _recover_run(engine, running.popleft())
        if running:
            engine.scheduler.call_later(engine.timing.recovery_batch_gap, next_batch)
        else:
            done.set()

    next_batch()
    return done


def _recover_run(engine: Engine, uid: int) -> None:
    db = engine.store.db
    flow = engine.flow(uid)
    if flow is not None and flow.running:
        if flow.timeout_ms:
            start = runs.start_request(db, uid)
            engine.flows.arm_timeout(uid, flow.timeout_ms, start.flow_timeout_policy)
        effects = Effects()
        for step in engine.active_steps(uid):
            if (uid, step.seid) in engine.running:
                continue  # launched by a call since the restart
            if step.phase == "waiting":
                for idx, fire_ms in stored_steps.pending_timers(db, uid, step.seid):
                    effects.timers.append((max(fire_ms / 1000, engine.clock.time()), uid, step.seid, idx))
                effects.wait_checks.add(uid)
            elif step.output_seen:
                lost = Task(task_id="recovered", kind=step.phase if step.phase == "wait_for" else "execute",
                            flow_type=flow.flow_type, message=pb.PollWorkerTask(), uid=uid, seid=step.seid,
                            attempt=step.attempt)
                engine.steps.on_failure(lost, "engine restarted while the attempt was running", "dex.EngineRestart", 0)
            else:
                effects.launches.append((uid, step.seid))
        engine.apply(effects)
