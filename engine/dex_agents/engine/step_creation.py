"""Creating Step executions: a new execution row for a movement (its first method pending) and
the Flow timeout handler ``sys:timeout_handler-1``. Inside the caller's transaction, under the
engine lock; the first method is launched by the caller's after-commit effects.

Execution ids are ``<StepType>-<n>``, ``n`` counting per Step type within a run from 1.
"""

from __future__ import annotations

import sqlite3

from dex.dexpb import dex_pb2 as pb

from . import history, policy
from .core import EngineCore
from .repository import steps as stored_steps
from .rows import Effects, FlowRow, StepRow

TIMEOUT_HANDLER = "sys:timeout_handler"
"""The Step type under which the SDK runs ``Flow.handle_timeout``."""


def create_step(
    core: EngineCore,
    db: sqlite3.Connection,
    flow: FlowRow,
    movement: pb.StepMovement,
    from_seid: str,
    effects: Effects,
    recovery: pb.RecoveryErrorInfo | None = None,
    delay_ms: int = 0,
) -> str:
    """Insert a new Step execution for ``movement`` and schedule its first method."""
    core.assert_locked()
    if not movement.step_type or "/" in movement.step_type:
        raise ValueError(f"invalid step type: {movement.step_type!r}")
    n = stored_steps.next_number(db, flow.uid, movement.step_type)
    now = core.now_ms()
    phase: policy.Method = "execute" if movement.step_options.skip_wait_for else "wait_for"
    step = StepRow(uid=flow.uid, seid=f"{movement.step_type}-{n}", step_type=movement.step_type, n=n,
                   seq=stored_steps.next_seq(db, flow.uid), input=movement.step_input, options=movement.step_options,
                   from_seid=from_seid, recovery=recovery, phase=phase,
                   attempt=1, first_attempt_ms=now + delay_ms, waiting=None, results=None, locals=[],
                   heartbeat=None, output_seen=False, not_before_ms=now + delay_ms if delay_ms else 0)
    stored_steps.insert_new(db, step)
    core.rows.step_inserted(step)
    history.method_pending(db, step, phase, flow.config)
    effects.launches.append((flow.uid, step.seid))
    return step.seid


def create_timeout_handler(core: EngineCore, db: sqlite3.Connection, flow: FlowRow, seconds: int,
                           handler: pb.FlowTimeoutHandlerOptions, effects: Effects) -> None:
    """Schedule ``Flow.handle_timeout`` as Step execution ``sys:timeout_handler-1``.

    It waits on one Timer of the Flow timeout (skippable like any Timer), then its ``execute``
    runs without input and its decision applies like any other. It never keeps a
    gracefully completing run open.
    """
    core.assert_locked()
    options = pb.StepOptions(
        execute_timeout_seconds=handler.method_timeout_seconds,
        heartbeat_timeout_seconds=handler.heartbeat_timeout_seconds,
        execute_retry_policy=handler.retry_policy, execute_failure_policy=handler.failure_policy,
        execute_failure_proceed_step_type=handler.failure_proceed_step_type,
        execute_failure_proceed_step_options=handler.failure_proceed_step_options,
        execute_durability_override=handler.durability_override,
        execute_lock_attribute_keys=handler.lock_attribute_keys,
        execute_load_attribute_map_instances=handler.load_attribute_map_instances,
        execute_load_channel_names=handler.load_channel_names,
        execute_load_channel_map_instances=handler.load_channel_map_instances,
        skip_wait_for=True,
    )
    waiting = pb.WaitingCondition(waiting_condition_type=pb.WAITING_CONDITION_TYPE_ALL_COMPLETED,
                                  timer_conditions=[pb.TimerCondition(duration_seconds=seconds)])
    fire_ms = flow.start_ms + seconds * 1000
    stored_steps.insert_timeout_handler(db, flow.uid, f"{TIMEOUT_HANDLER}-1", TIMEOUT_HANDLER,
                                        stored_steps.next_seq(db, flow.uid), options, flow.start_ms, waiting, fire_ms)
    effects.timers.append((fire_ms / 1000, flow.uid, f"{TIMEOUT_HANDLER}-1", 0))

