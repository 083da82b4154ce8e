"""Task dispatch to pull Workers: worker streams, per-queue pending tasks, hand-off.

A pull Worker opens one ``PollWorkerTask`` stream per queue (its app worker id and each Flow type)
and runs at most one task per stream. The engine keeps, per queue, the idle registered streams
(oldest first) and the tasks waiting for one; a task is handed to an idle stream the moment either
appears, with no polling. Spare streams are held unacknowledged until a task needs them (the
Worker counts them as idle spares, so it does not open and close a stream per task).

A stream that rejects a task (no capacity, or retiring) is skipped for a short back-off (or until its
Worker finishes a task), so a busy Worker never spins the dispatcher. A Worker that declined a Step
task recently is "saturated": no spare of it is acknowledged for Step tasks, and a stream it frees
is offered after a short settle (the SDK frees the slot just after sending the result), which avoids
a decline per task at full capacity.

All methods run under the engine lock (checked: the engine passes its lock assertion as ``guard``).
"""

from __future__ import annotations

from collections.abc import Callable

from dex.dexpb import dex_pb2 as pb

from .blobs import Blobs
from .pending import PendingTasks
from .tasks import IllegalTaskTransition, Task, TaskKind, TaskState, WorkerStream
from .timing import Clock, EngineTiming, SystemClock

_WAITING = pb.PollWorkerTask()
"""The message of every waiting Step task, whose frame is kept serialized (see ``Task.frame``)."""


class Dispatcher:
    """Matches tasks with idle streams per queue (the queue is the Flow type)."""

    def __init__(self, schedule_retry: Callable[[float, Callable[[], None]], None],
                 timing: EngineTiming | None = None, clock: Clock | None = None,
                 guard: Callable[[], None] = lambda: None, blobs: Blobs | None = None) -> None:
        """``guard`` is called on entry of every public method: the engine passes its lock check.
        ``blobs`` keeps the large values a delivered task references (``blobs.Blobs``)."""
        self._guard = guard
        self._blobs = blobs if blobs is not None else Blobs()
        self.timing = timing if timing is not None else EngineTiming()
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._idle: dict[str, list[WorkerStream]] = {}
        self._held: dict[str, list[WorkerStream]] = {}
        self._saturated: dict[str, float] = {}
        """app worker id -> when it last declined a Step task (it runs at its Step capacity)."""
        self._pending: dict[str, PendingTasks] = {}
        self._schedule = schedule_retry
        self.streams: set[WorkerStream] = set()
        self._delivered: dict[str, Task] = {}
        """Tasks handed to a stream, until the next :meth:`delivered` finds them no longer DELIVERED."""

    def delivered(self) -> list[Task]:
        """The DELIVERED tasks (handed to a Worker, outcome not decided): what deadline checks
        walk, so their cost follows the tasks in flight, never the queued backlog."""
        self._guard()
        gone = [task_id for task_id, task in self._delivered.items() if task.state is not TaskState.DELIVERED]
        for task_id in gone:
            del self._delivered[task_id]
        return list(self._delivered.values())

    def register(self, stream: WorkerStream) -> None:
        """A new stream asked to register.

        The first stream of a (queue, Worker) is acknowledged at once. Further ones are held
        unacknowledged until a task needs them: the Worker counts a held stream as its idle spare
        but never retires it, which spares it a stream open and close per task.
        """
        self._guard()
        self.streams.add(stream)
        if any(s.registered and not s.closed and s.queue_name == stream.queue_name
               and s.app_worker_id == stream.app_worker_id for s in self.streams):
            self._held.setdefault(stream.queue_name, []).append(stream)
        else:
            self._acknowledge(stream)
        self._offer(stream.queue_name)

    def _acknowledge(self, stream: WorkerStream) -> None:
        stream.registered = True
        stream.send(pb.PollWorkerTaskResponse(
            registered=pb.PollWorkerTaskRegistered(supports_unknown_name_rejection=True)))
        self._idle.setdefault(stream.queue_name, []).append(stream)

    def submit(self, task: Task, *, front: bool = False) -> None:
        """Queue a QUEUED task (O(1)); it is delivered at once when an idle stream of its queue exists."""
        self._guard()
        if task.state is not TaskState.QUEUED:
            raise IllegalTaskTransition(f"task {task.task_id} submitted while {task.state.name}")
        pending = self._pending.get(task.flow_type)
        if pending is None:
            pending = self._pending[task.flow_type] = PendingTasks()
        pending.push(task, front=front)
        self._offer(task.flow_type)
        if task.queue_order is not None and task.frame is None and task.kind != "rpc":
            task.frame = task.message.SerializeToString()  # it waits: parsed back at delivery
            task.message = _WAITING

    def withdraw(self, task: Task) -> bool:
        """Remove a not yet delivered task (O(1)); False when it is not pending."""
        self._guard()
        pending = self._pending.get(task.flow_type)
        return pending is not None and pending.discard(task)

    def requeue(self, task: Task) -> None:
        """Put a DELIVERED task back at the front of its queue (declined, or its stream lost)."""
        self._guard()
        task.move(TaskState.QUEUED)
        self.submit(task, front=True)

    def finish(self, task: Task) -> None:
        """The task's final frame arrived (or it was abandoned): free its stream for the next task.
        The task's state is its outcome's business (see ``Task.finish``)."""
        self._guard()
        stream = task.stream
        task.stream = None
        if stream is None or stream.task is not task:
            return
        stream.task = None
        now = self._clock.monotonic()
        worker = stream.app_worker_id
        # A saturated Worker frees the slot only after its handler bookkeeping: offer a moment later
        # so the next task is not declined for capacity; otherwise hand the stream over at once.
        settle = self.timing.settle_delay if self._is_saturated(worker, now) else 0.0
        for other in self.streams:
            if other.app_worker_id == worker:
                other.declined_until = now + settle
        if not stream.closed:
            self._idle.setdefault(stream.queue_name, []).append(stream)
        queues = {s.queue_name for s in self.streams if s.app_worker_id == worker}
        if settle:
            self._schedule(settle, lambda: self._offer_all(queues))
        else:
            self._offer_all(queues)

    def offer_pending(self) -> None:
        """Offer every queued task again (a safety net run periodically; normally a no-op)."""
        self._guard()
        self._offer_all({name for name, pending in self._pending.items() if pending})

    def _offer_all(self, queues: set[str]) -> None:
        for queue_name in queues:
            self._offer(queue_name)

    def reject(self, stream: WorkerStream, task_id: str) -> tuple[Task, float] | None:
        """The Worker declined the task on ``stream``: requeue it, back off that stream.

        A Step task declined while its Worker runs others is declined for capacity: it waits (and
        any earlier NO_WORKER_AVAILABLE count is dropped). Declined by a Worker running nothing, it
        is one no Worker may take: returns ``(task, since)`` when that starts the count (the caller
        arms the dispatch wait, see ``Task.unavailable_since``)."""
        self._guard()
        task = stream.task
        if task is None or task.task_id != task_id:
            return None
        stream.task = None
        task.stream = None
        started: tuple[Task, float] | None = None
        if not stream.closed:
            now = self._clock.monotonic()
            backoff = min(self.timing.decline_backoff * 2 ** min(task.declines, 64), self.timing.decline_backoff_max)
            task.declines += 1
            stream.declined_until = now + backoff
            self._idle.setdefault(stream.queue_name, []).append(stream)
            self._schedule(backoff, lambda: self._offer(stream.queue_name))
            busy = any(s.task is not None and s.app_worker_id == stream.app_worker_id for s in self.streams)
            if task.kind != "rpc" and busy:
                # Declined while running others: at its Step capacity, unless the stream turns out to
                # be retiring (see ``stream_closed``).
                self._saturated[stream.app_worker_id] = now
                stream.saturated_at = now
                queue_name = stream.queue_name
                self._schedule(self.timing.saturated_window + 0.001, lambda: self._offer(queue_name))
                task.unavailable_since = None
            elif task.kind != "rpc":
                if task.unavailable_since is None:
                    task.unavailable_since = now
                    started = (task, now)
                stream.idle_decline = (task, task.unavailable_since)
        if not task.done:
            self.requeue(task)
        return started

    def refuse(self, stream: WorkerStream, task_id: str) -> tuple[Task, float] | None:
        """The Worker does not know the task's Step type: its stream is free again at once (it
        serves the other Step types), and the task goes to the back of the queue, never offered to
        that Worker again. Returns ``(task, since)`` when this starts the NO_WORKER_AVAILABLE count
        (the caller arms the dispatch wait)."""
        self._guard()
        task = stream.task
        if task is None or task.task_id != task_id:
            return None
        stream.task = None
        task.stream = None
        task.refused_by = task.refused_by | {stream.app_worker_id}
        started: tuple[Task, float] | None = None
        if task.unavailable_since is None:
            task.unavailable_since = self._clock.monotonic()
            started = (task, task.unavailable_since)
        if not stream.closed:
            self._idle.setdefault(stream.queue_name, []).append(stream)
        if not task.done:
            task.move(TaskState.QUEUED)
            self.submit(task)
        else:
            self._offer(stream.queue_name)
        return started

    def stream_closed(self, stream: WorkerStream, *, clean: bool = False) -> Task | None:
        """The stream ended (``clean``: its Worker half-closed it); returns the task it was running,
        if any (still DELIVERED unless final: the caller re-queues or fails it).

        A Worker retires an idle stream by declining what it was just sent and half-closing it: a
        saturation mark that stream's decline set is withdrawn (it was no lack of capacity)."""
        self._guard()
        stream.closed = True
        worker = stream.app_worker_id
        retired = clean and stream.saturated_at is not None and self._saturated.get(worker) == stream.saturated_at
        if retired:
            del self._saturated[worker]
        if clean and stream.idle_decline is not None:  # a retiring stream's decline was no refusal
            declined, since = stream.idle_decline
            if declined.unavailable_since == since:
                declined.unavailable_since = None
        self.streams.discard(stream)
        for pool in (self._idle.get(stream.queue_name), self._held.get(stream.queue_name)):
            if pool is not None and stream in pool:
                pool.remove(stream)
        held = self._held.get(stream.queue_name)
        if stream.registered and held and not any(
                s.registered and s.queue_name == stream.queue_name and s.app_worker_id == stream.app_worker_id
                for s in self.streams):
            spare = next((s for s in held if s.app_worker_id == stream.app_worker_id), None)
            if spare is not None:
                held.remove(spare)
                self._acknowledge(spare)
                self._offer(stream.queue_name)
        task = stream.task
        stream.task = None
        if task is not None:
            task.stream = None
        if retired:
            self._offer_all({s.queue_name for s in self.streams if s.app_worker_id == worker})
        return task

    def cancel(self, task: Task, *, tell_worker: bool = True) -> None:
        """Stop a task that is not final: CANCELED, withdrawn if pending, else its Worker is told
        now (``tell_worker``) or with the task's next progress frame (see :meth:`progress`)."""
        self._guard()
        if task.done:
            return
        task.move(TaskState.CANCELED)
        if self.withdraw(task):
            return
        if task.stream is not None and tell_worker:
            self._send_cancel(task)
        elif task.stream is not None:
            task.cancel_unsent = True

    def progress(self, task: Task) -> None:
        """A progress frame (heartbeat or Stream write) of ``task`` arrived: it counts as accepted,
        and a cancellation not yet sent goes out with the answer to it."""
        self._guard()
        task.unavailable_since = None
        if task.cancel_unsent and task.stream is not None:
            self._send_cancel(task)

    @staticmethod
    def _send_cancel(task: Task) -> None:
        task.cancel_unsent = False
        if task.stream is not None:
            task.stream.send(pb.PollWorkerTaskResponse(cancel_task=pb.PollWorkerTaskCancelTask(task_id=task.task_id)))

    @staticmethod
    def _usable(stream: WorkerStream, now: float) -> bool:
        return not stream.closed and stream.declined_until <= now

    def _stream_for(self, queue_name: str, kind: TaskKind, now: float,
                    refused_by: set[str] | frozenset[str] = frozenset()) -> WorkerStream | None:
        """An idle usable stream, else a held one (for a Step task only of an unsaturated Worker), of
        a Worker not in ``refused_by``."""
        chosen = next((s for s in self._idle.get(queue_name, ())
                       if self._usable(s, now) and s.app_worker_id not in refused_by), None)
        if chosen is None:
            chosen = next((s for s in self._held.get(queue_name, ()) if self._usable(s, now) and (
                s.app_worker_id not in refused_by) and (
                kind == "rpc" or not self._is_saturated(s.app_worker_id, now))), None)
        return chosen

    def _is_saturated(self, app_worker_id: str, now: float) -> bool:
        """Whether the Worker declined a Step task within the saturation window."""
        declined_at = self._saturated.get(app_worker_id)
        return declined_at is not None and now - declined_at < self.timing.saturated_window

    def _offer(self, queue_name: str) -> None:
        """Hand queued tasks to usable streams, oldest first; costs O(tasks handed over + streams)
        plus the tasks passed over because only Workers that refused them are free, never a walk
        over the whole queue."""
        pending = self._pending.get(queue_name)
        if not pending:
            return
        now = self._clock.monotonic()
        passed: list[Task] = []
        while pending:
            step_stream = self._stream_for(queue_name, "execute", now)
            stream = step_stream or self._stream_for(queue_name, "rpc", now)
            if stream is None:
                break
            task = pending.pop(steps=step_stream is not None)
            if task is None:
                break
            if task.refused_by and stream.app_worker_id in task.refused_by:
                chosen = self._stream_for(queue_name, task.kind, now, task.refused_by)
                if chosen is None:
                    passed.append(task)  # only Workers that do not know its Step type are free
                    continue
                stream = chosen
            self._deliver(task, stream, now)
        for task in reversed(passed):
            pending.push(task, front=True)

    def _deliver(self, task: Task, chosen: WorkerStream, now: float) -> None:
        held = self._held.setdefault(chosen.queue_name, [])
        if chosen in held:
            held.remove(chosen)
            self._acknowledge(chosen)
        self._idle[chosen.queue_name].remove(chosen)
        task.move(TaskState.DELIVERED)
        if task.frame is not None:
            task.message = pb.PollWorkerTask.FromString(task.frame)
            task.frame = None
        chosen.task = task
        task.stream = chosen
        task.delivered_at = now
        self._delivered[task.task_id] = task
        if task.local_phase:
            task.local_deadline = self._clock.time() + task.local_seconds
        if task.timeout:
            wall = self._clock.time()
            task.deadline = wall + task.timeout
            task.message.deadline.FromNanoseconds(int(task.deadline * 1e9))
            if task.heartbeat_timeout is not None:
                task.heartbeat_deadline = wall + task.heartbeat_timeout
        chosen.send(pb.PollWorkerTaskResponse(task=self._blobs.outgoing(task.message)))
