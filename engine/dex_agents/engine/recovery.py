"""Recovery on start: bring every committed open run back to life from the database.

- Flow timeouts are re-armed.
- A Step method that was in flight is re-dispatched with the same attempt when its attempt sent no
  output frame (heartbeat or Stream write); otherwise that attempt counts as failed and retries
  (or routes) by policy, as for a lost worker.
- Waiting Steps get their pending Timers re-armed (overdue ones fire at once) and their Waits
  re-evaluated against the Channels.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from dex.dexpb import dex_pb2 as pb

from .dispatch import Task
from .rows import Effects

if TYPE_CHECKING:
    from .engine import Engine


def recover(engine: Engine) -> None:
    """Re-arm timers and re-dispatch tasks of every open run (engine lock held)."""
    db = engine.store.db
    running = [int(uid) for (uid,) in db.execute("SELECT uid FROM flows WHERE status=?", (pb.FLOW_STATUS_RUNNING,))]
    for uid in running:
        flow = engine.flow(uid)
        if flow is None:
            continue
        if flow.timeout_ms:
            (blob,) = db.execute("SELECT start_request FROM flows WHERE uid=?", (uid,)).fetchone()
            start = pb.StartFlowRequest()
            start.ParseFromString(blob)
            engine.flows.arm_timeout(uid, flow.timeout_ms, start.flow_timeout_policy)
        effects = Effects()
        for step in engine.active_steps(uid):
            if step.phase == "waiting":
                for idx, fire_ms in db.execute(
                    "SELECT idx, fire_ms FROM timers WHERE uid=? AND seid=? AND status=?",
                    (uid, step.seid, pb.INTERNAL_TIMER_STATUS_PENDING),
                ):
                    effects.timers.append((max(fire_ms / 1000, time.time()), uid, step.seid, int(idx)))
                effects.wait_checks.add(uid)
            elif step.output_seen:
                lost = Task(task_id="recovered", kind=step.phase if step.phase == "wait_for" else "execute",
                            flow_type=flow.flow_type, message=pb.PollWorkerTask(), uid=uid, seid=step.seid,
                            attempt=step.attempt)
                engine.steps.on_failure(lost, "engine restarted while the attempt was running", "dex.EngineRestart", 0)
            else:
                effects.launches.append((uid, step.seid))
        engine.apply(effects)
