"""Tasks (one invocation of a Step method or an RPC handler on a Worker) and their lifecycle, and
the Worker streams that carry them.

A task's life is an explicit :class:`TaskState`; every change goes through :meth:`Task.move`, which
allows only these transitions (anything else raises :class:`IllegalTaskTransition`)::

    QUEUED    -> DELIVERED (handed to a stream), FINISHED, CANCELED
    DELIVERED -> QUEUED (declined, refused, or its stream lost before any output), FINISHED, CANCELED
    FINISHED, CANCELED: final

FINISHED: the engine decided the outcome (result, failure, loss, timeout). CANCELED: the engine
withdrew it or told its Worker to stop; a result that still arrives is discarded. ``output_seen``
is a fact of the current delivery (a heartbeat or Stream write arrived), not a state.
"""

from __future__ import annotations

import enum
import itertools
import queue
import time
from dataclasses import dataclass
from typing import Literal

from dex.dexpb import dex_pb2 as pb

from . import policy

TaskKind = Literal["wait_for", "execute", "rpc"]
_ids = itertools.count(1)


def new_task_id() -> str:
    """A task id unique within this engine process."""
    return f"t{next(_ids)}-{time.monotonic_ns() % 1_000_000_007}"


class TaskState(enum.Enum):
    """Where a task is in its life (see the module docstring for the transitions)."""

    QUEUED = "queued"
    DELIVERED = "delivered"
    FINISHED = "finished"
    CANCELED = "canceled"


_ALLOWED: dict[TaskState, frozenset[TaskState]] = {
    TaskState.QUEUED: frozenset({TaskState.DELIVERED, TaskState.FINISHED, TaskState.CANCELED}),
    TaskState.DELIVERED: frozenset({TaskState.QUEUED, TaskState.FINISHED, TaskState.CANCELED}),
    TaskState.FINISHED: frozenset(),
    TaskState.CANCELED: frozenset(),
}


class IllegalTaskTransition(RuntimeError):
    """A task was moved along a transition its lifecycle does not allow (an engine bug)."""


@dataclass(eq=False, kw_only=True, slots=True)
class Task:
    """One invocation of a Step method or an RPC handler on a Worker.

    Invariants: ``state`` changes only through :meth:`move`; ``stream`` is set while a Worker
    stream holds the task (from delivery until its final frame, its decline or refusal, or the
    stream's end; a canceled task keeps its stream until the Worker answers).
    """

    task_id: str
    kind: TaskKind
    flow_type: str
    message: pb.PollWorkerTask
    uid: int
    seid: str
    attempt: int
    state: TaskState = TaskState.QUEUED
    stream: WorkerStream | None = None
    delivered_at: float = 0.0
    output_seen: bool = False
    timeout: float = 0.0
    local_phase: bool = False
    """An ASYNC attempt in Dex's local phase: no method or heartbeat deadline until ``local_deadline``;
    still running then, it falls back in place to a regular attempt (the same invocation goes on
    under ``fallback_timeout`` and ``fallback_heartbeat_timeout``, see ``StepOps.fall_back``)."""
    local_seconds: float = 0.0
    local_deadline: float = 0.0
    fallback_timeout: float = 0.0
    fallback_heartbeat_timeout: float | None = None
    own_heartbeat_timeout: bool = False
    """The Step declares a heartbeat timeout of its own (see ``cancel_at_once``)."""
    declines: int = 0
    queue_order: int | None = None
    """Set while the task waits in its queue (see ``PendingTasks``)."""
    deadline: float = 0.0
    heartbeat_timeout: float | None = None
    heartbeat_deadline: float = 0.0
    redeliveries: int = 0
    refused_by: frozenset[str] = frozenset()
    """App worker ids that declined the task as an unknown Step type; it is not offered to them again."""
    unavailable_since: float | None = None
    """Monotonic time of the first refusal (unknown Step type) or decline by an idle Worker since the
    task was last accepted or declined for capacity: a dispatch wait later the attempt fails with
    NO_WORKER_AVAILABLE unless a Worker took it (see ``Dispatcher.reject``)."""
    cancel_unsent: bool = False
    """CANCELED while delivered, its Worker not yet told: the Worker gets ``cancel_task`` with the
    task's next heartbeat or Stream write (Dex delivers a cancellation with a heartbeat)."""
    frame: bytes | None = None
    """The task's frame, serialized, while the task waits in its queue (``message`` is then an
    empty stand-in, parsed back at delivery): a waiting task keeps the snapshot of the state taken
    when its method was scheduled, as Dex does, at the cost of its bytes, without the parsed
    message's overhead."""

    @property
    def cancel_at_once(self) -> bool:
        """Its Worker is told of a cancellation at once: an attempt in Dex's local phase, or one of a
        Step with a heartbeat timeout of its own; any other only with its next heartbeat or Stream
        write (so an attempt that fell back in place is told as a regular one)."""
        return self.local_phase or self.own_heartbeat_timeout

    @property
    def done(self) -> bool:
        """Whether the task is FINISHED or CANCELED (final)."""
        return self.state is TaskState.FINISHED or self.state is TaskState.CANCELED

    def move(self, to: TaskState) -> None:
        """Change the state along an allowed transition.

        Raises:
            IllegalTaskTransition: the lifecycle does not allow ``state -> to``.
        """
        if to not in _ALLOWED[self.state]:
            raise IllegalTaskTransition(f"task {self.task_id} ({self.kind} of {self.seid or 'an rpc'}): "
                                        f"{self.state.name} -> {to.name} is not allowed")
        self.state = to

    def finish(self) -> None:
        """The outcome is decided: FINISHED, unless the task is already final (a canceled task stays
        CANCELED; finishing twice is a no-op, since an outcome path may finish before it fails)."""
        if not self.done:
            self.move(TaskState.FINISHED)

    def may_redeliver(self, dispatch_wait: float, *, now: float, clean_close: bool = False) -> bool:
        """Whether the task, its stream lost, goes to another stream with the same attempt.

        It must have sent no output frame. A stream its Worker half-closed (``clean_close``: the SDK
        retires only an idle stream, and drops a task that arrives after that) never started the
        task, so it goes back at once and uncounted. A broken stream's task goes back only within
        ``dispatch_wait`` seconds of its delivery (``now`` and ``delivered_at`` are monotonic) and
        fewer than ``policy.MAX_REDELIVERIES`` times (each yes counts one)."""
        if self.output_seen:
            return False
        if clean_close:
            return True
        if now - self.delivered_at > dispatch_wait or self.redeliveries >= policy.MAX_REDELIVERIES:
            return False
        self.redeliveries += 1
        return True


class WorkerStream:
    """One registered ``PollWorkerTask`` stream; its responses go out through ``outbox``."""

    def __init__(self, queue_name: str, app_worker_id: str) -> None:
        self.queue_name = queue_name
        self.app_worker_id = app_worker_id
        self.outbox: queue.SimpleQueue[pb.PollWorkerTaskResponse | None] = queue.SimpleQueue()
        self.task: Task | None = None
        self.closed = False
        self.registered = False
        self.declined_until = 0.0
        self.saturated_at: float | None = None
        """When this stream's decline marked its Worker saturated (withdrawn if it then retires)."""
        self.idle_decline: tuple[Task, float] | None = None
        """The task this stream last declined while its Worker ran nothing, with the start of that
        task's NO_WORKER_AVAILABLE count (withdrawn if the stream then retires)."""

    def send(self, response: pb.PollWorkerTaskResponse) -> None:
        """Queue one response frame for the stream's writer."""
        if not self.closed:
            self.outbox.put(response)

    def close(self) -> None:
        """End the response side of the stream."""
        self.closed = True
        self.outbox.put(None)
