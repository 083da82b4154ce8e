"""Step executions: method launch (locks, request, dispatch), progress and timeouts (creation is in
:mod:`step_creation`).

A Step execution row moves ``wait_for`` -> ``waiting`` -> ``execute`` -> ``done`` (or ``failed``
/ ``canceled``); ``skip_wait_for`` starts it at ``execute``. A method in ``wait_for``/``execute``
has at most one in-flight task (``EngineCore.running``); the attempt number lives in the row, so a
re-delivered task carries the same attempt and a retry the next one. Results, failures and Waits
are handled in :mod:`outcomes`.
"""

from __future__ import annotations

import logging

from dex.dexpb import dex_pb2 as pb

from . import history, policy
from .repository import state
from .core import EngineCore
from .errors import ServiceError
from .flows import FlowOps
from .outcomes import Outcomes
from .rows import FlowRow, StepRow
from .step_creation import TIMEOUT_HANDLER
from .streams import StreamOps
from .tasks import Task, new_task_id

_LOGGER = logging.getLogger(__name__)


class StepOps(Outcomes):
    """Step lifecycle operations; every method runs under the engine lock."""

    def __init__(self, engine: EngineCore, flows: FlowOps, streams: StreamOps) -> None:
        super().__init__(engine, flows)
        self.streams = streams

    def launch(self, uid: int, seid: str) -> None:
        """Dispatch the Step's current method unless it is running, delayed, or lock-blocked."""
        self.engine.assert_locked()
        engine = self.engine
        if engine.stopped or (uid, seid) in engine.running:
            return
        step = engine.step(uid, seid)
        flow = engine.flow(uid)
        if step is None or flow is None or not flow.running or step.phase not in ("wait_for", "execute"):
            return
        now = engine.clock.time()
        if step.not_before_ms > now * 1000:
            engine.scheduler.call_at(step.not_before_ms / 1000, lambda: self.launch(uid, seid))
            return
        keys = list(step.options.wait_for_lock_attribute_keys if step.phase == "wait_for"
                    else step.options.execute_lock_attribute_keys)
        holder = f"step:{seid}"
        if keys and engine.attribute_locks.held(uid, keys, holder):
            engine.attribute_locks.wait(uid, seid)
            return
        method: policy.Method = "wait_for" if step.phase == "wait_for" else "execute"
        message = pb.PollWorkerTask(task_id=new_task_id())
        self._fill_request(message, flow, step)
        task = Task(task_id=message.task_id, kind=method, flow_type=flow.flow_type, message=message,
                    uid=uid, seid=seid, attempt=step.attempt)
        second = engine.timing.policy_second  # the policy counts in seconds of this length
        elapsed = (now - step.first_attempt_ms / 1000) / second
        if (history.durability(flow.config, step.options, method) == pb.STEP_DURABILITY_ASYNC
                and step.attempt <= policy.ASYNC_LOCAL_ATTEMPTS and elapsed < policy.ASYNC_LOCAL_SECONDS):
            task.local_phase = True
            task.local_seconds = max(policy.ASYNC_LOCAL_SECONDS - elapsed, 1.0) * second
            task.fallback_timeout = policy.method_timeout(step.options, method) * second
            task.fallback_heartbeat_timeout = policy.heartbeat_timeout(step.options) * second
        else:
            task.timeout = policy.method_timeout(step.options, method) * second
            task.heartbeat_timeout = policy.heartbeat_timeout(step.options) * second
        task.own_heartbeat_timeout = step.options.heartbeat_timeout_seconds > 0
        too_large = policy.oversized_task(message)
        if too_large is not None:  # fails before it takes a lock or a slot
            self.on_failure(task, too_large, "dex.TaskTooLarge", 0)
            return
        if keys:
            engine.attribute_locks.acquire(uid, keys, holder)
        engine.track(task)
        engine.dispatcher.submit(task)

    def _fill_request(self, message: pb.PollWorkerTask, flow: FlowRow, step: StepRow) -> None:
        """The method's request: this attempt's context and the state snapshot, the first attempt's
        when this is a retry of it in this engine process (Dex: "retries of one logical method call
        reuse its first snapshot"), else a new one."""
        db = self.engine.store.db
        options = step.options
        snapshot = self.snapshots.get((step.uid, step.seid)) if step.attempt > 1 else None
        context = pb.Context(
            flow_id=flow.flow_id, run_id=flow.run_id, flow_started_timestamp=flow.start_ms // 1000,
            step_execution_id=step.seid, first_attempt_timestamp=step.first_attempt_ms // 1000,
            attempt=step.attempt, from_step_execution_id=step.from_seid, run_attempt=1,
        )
        if step.recovery is not None:
            context.recovery_error.CopyFrom(step.recovery)
        if step.heartbeat is not None:
            context.last_heartbeat_value.CopyFrom(step.heartbeat)
        if snapshot is not None and snapshot[0] == step.phase:
            request = message.wait_for if step.phase == "wait_for" else message.execute
            request.ParseFromString(snapshot[1])
            request.context.CopyFrom(context)
            return
        if step.phase == "wait_for":
            maps, names, channel_maps = (options.wait_for_load_attribute_map_instances,
                                         options.wait_for_load_channel_names, options.wait_for_load_channel_map_instances)
            request = message.wait_for
        else:
            maps, names, channel_maps = (options.execute_load_attribute_map_instances,
                                         options.execute_load_channel_names, options.execute_load_channel_map_instances)
            execute = message.execute
            execute.step_exe_locals.extend(step.locals)
            if step.results is not None:
                execute.condition_results.CopyFrom(step.results)
            request = execute
        request.context.CopyFrom(context)
        request.flow_type = flow.flow_type
        request.step_type = step.step_type
        if step.step_type != TIMEOUT_HANDLER:
            request.step_input.CopyFrom(step.input)
        request.attributes.extend(state.load_attributes(db, flow.uid, maps))
        for name, info in state.channel_infos(db, flow.uid).items():
            request.channel_infos[name].CopyFrom(info)
        for name, values in state.loaded_messages(db, flow.uid, names, channel_maps).items():
            request.loaded_channel_messages[name].CopyFrom(values)
        request.loaded_attribute_map_instances.extend(maps)
        request.loaded_channel_names.extend(names)
        request.loaded_channel_map_instances.extend(channel_maps)

    # ---- progress frames
    def on_progress(self, task: Task, heartbeat: pb.StepMethodHeartbeat | None, write: pb.StepStreamWrite | None) -> None:
        """A heartbeat or Stream write of a running Step method (any output frame is a heartbeat);
        the task's memory changes only after the frame's commit."""
        self.engine.assert_locked()
        engine = self.engine
        first = not task.output_seen
        flow = engine.flow(task.uid)
        if flow is None:
            return
        if heartbeat is not None and task.local_phase:
            if first:  # the local phase keeps no checkpoint
                with engine.store.transaction() as db:
                    engine.rows.update_step(db, task.uid, task.seid, output_seen=True)
        elif heartbeat is not None:
            with engine.store.transaction() as db:
                engine.rows.update_step(db, task.uid, task.seid, output_seen=True,
                                        heartbeat=heartbeat.value if heartbeat.HasField("value") else None)
        if write is not None:
            # A Stream append is best effort: no fsync of its own. The first output frame of an attempt
            # also records that the attempt sent output (a restarted engine fails it instead of
            # re-delivering it): fsync'd only for a single-attempt method, whose re-delivery would run
            # it twice; a method that may retry loses, at an OS crash, only that mark (its attempt runs
            # again under the same number, at most once more per crash).
            durable = first and self._single_attempt(task)
            with engine.store.transaction(durable=durable) as db:
                if first:
                    engine.rows.update_step(db, task.uid, task.seid, output_seen=True)
                try:
                    self.streams.write(flow.flow_type, write.stream_name, flow.flow_id,
                                       write.stream_capacity_bytes, write.value, f"#{task.seid}")
                except ServiceError:
                    _LOGGER.warning("dropped an invalid Stream write from %s", task.seid)
        task.output_seen = True
        if task.heartbeat_timeout is not None:
            task.heartbeat_deadline = engine.clock.time() + task.heartbeat_timeout

    def _single_attempt(self, task: Task) -> bool:
        step = self.engine.step(task.uid, task.seid)
        return step is None or task.kind == "rpc" or policy.single_attempt(step.options, task.kind)

    def check_deadlines(self) -> None:
        """Fail Step attempts past their method or heartbeat deadline (run every quarter second, over
        the delivered tasks only); one attempt whose failure cannot be applied is logged and never
        keeps the others from timing out (it is tried again at the next check)."""
        self.engine.assert_locked()
        now = self.engine.clock.time()
        for task in self.engine.dispatcher.delivered():
            if task.kind == "rpc" or self.engine.tasks.get(task.task_id) is not task:
                continue
            if task.local_phase and now >= task.local_deadline:
                self.fall_back(task, now)
            try:
                if task.deadline and now >= task.deadline:
                    self.method_timeout(task)
                elif task.heartbeat_timeout is not None and now >= task.heartbeat_deadline:
                    seconds = task.heartbeat_timeout / self.engine.timing.policy_second
                    self.on_failure(task, f"heartbeat timeout: no heartbeat within {seconds:.0f}s",
                                    "dex.HeartbeatTimeout", 0, cancel=True)
            except Exception:
                _LOGGER.exception("timing out %s failed", task.seid)

    @staticmethod
    def fall_back(task: Task, now: float) -> None:
        """A local-phase attempt still running at the phase's end becomes a regular attempt in place,
        as in Dex: the invocation is neither failed nor started again; from now on its method and
        heartbeat timeouts apply (it is told of a cancellation as any regular attempt)."""
        task.local_phase = False
        task.timeout = task.fallback_timeout
        task.deadline = now + task.fallback_timeout
        task.heartbeat_timeout = task.fallback_heartbeat_timeout
        if task.heartbeat_timeout is not None:
            task.heartbeat_deadline = now + task.heartbeat_timeout

    def worker_lost(self, task: Task, *, clean_close: bool = False) -> None:
        """The task's stream ended: re-deliver the same attempt or fail it (see ``Task.may_redeliver``)."""
        self.engine.assert_locked()
        if task.done:
            return
        if task.may_redeliver(self.engine.timing.dispatch_wait, now=self.engine.clock.monotonic(),
                              clean_close=clean_close):
            self.engine.dispatcher.requeue(task)
            return
        detail = "worker stream broke while the task was running"
        if task.redeliveries >= policy.MAX_REDELIVERIES and not task.output_seen:
            detail = f"worker stream broke on each of {task.redeliveries + 1} deliveries of the task"
        self.on_failure(task, detail, "dex.WorkerLost", 0)

    def no_worker_available(self, task: Task, since: float) -> None:
        """Scheduled a dispatch wait after a Worker first refused the task (an unknown Step type) or
        an idle Worker first declined it: unless a Worker took it meanwhile (or the refusals were
        withdrawn), fail the attempt with NO_WORKER_AVAILABLE (it retries by policy)."""
        self.engine.assert_locked()
        if (task.done or task.stream is not None or self.engine.tasks.get(task.task_id) is not task
                or task.unavailable_since != since):
            return
        step_type = task.seid.rsplit("-", 1)[0]
        self.on_failure(task, f"{policy.NO_WORKER_AVAILABLE}: no Worker of flow type {task.flow_type} accepted "
                        f"step type {step_type} within the dispatch wait "
                        f"({self.engine.timing.dispatch_wait:g} s)", policy.NO_WORKER_AVAILABLE, 0, cancel=True)

    def drop_task(self, uid: int, seid: str) -> None:
        """Stop the task of a Step execution that was canceled or closed (after that commit).

        As in Dex, a regular attempt learns of it only when it records a heartbeat (or writes to a
        Stream), completes or fails: a handler that never heartbeats runs to its end and its result
        is discarded. An ASYNC local-phase attempt, or one of a Step with a heartbeat timeout of its
        own, is told at once (``Task.cancel_at_once``)."""
        self.engine.assert_locked()
        task = self.engine.running.get((uid, seid))
        self.engine.attribute_locks.stop_waiting(uid, seid)
        self.snapshots.pop((uid, seid), None)
        if task is None:
            return
        self.engine.dispatcher.cancel(task, tell_worker=task.cancel_at_once)
        self.engine.untrack(task)
        self.engine.release(uid, f"step:{seid}")
