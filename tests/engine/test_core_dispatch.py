"""Engine core, task dispatch (no server): the first stream of a Worker's queue is acknowledged at
once and spares are held until a task needs them; a task goes to an idle stream directly; a
declined task is requeued and that stream backs off; a stream that breaks hands back its task."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import grpc
from dex.dexpb import dex_pb2 as pb

from dex_agents.engine import policy
from dex_agents.engine.dispatch import Dispatcher
from dex_agents.engine.request_checks import _DecodedFrames
from dex_agents.engine.tasks import Task, WorkerStream
from dex_agents.engine.timing import ManualClock
from dex_agents.engine.worker_service import WorkerTaskService

Scheduled = list[tuple[float, Callable[[], None]]]


def dispatcher() -> tuple[Dispatcher, Scheduled]:
    scheduled: Scheduled = []
    # A manual clock: under load the real one can pass a decline's back-off before the test looks.
    return Dispatcher(lambda delay, callback: scheduled.append((delay, callback)), clock=ManualClock()), scheduled


def task(task_id: str, kind: str = "execute") -> Task:
    return Task(task_id=task_id, kind=kind, flow_type="Q", message=pb.PollWorkerTask(task_id=task_id),  # type: ignore[arg-type]
                uid=1, seid="S-1", attempt=1)


def sent(stream: WorkerStream) -> list[str]:
    frames: list[str] = []
    while not stream.outbox.empty():
        frame = stream.outbox.get_nowait()
        assert frame is not None
        kind = frame.WhichOneof("frame")
        frames.append(f"task:{frame.task.task_id}" if kind == "task" else str(kind))
    return frames


def test_first_stream_is_acknowledged_and_spares_are_held_until_needed() -> None:
    d, _ = dispatcher()
    first, spare = WorkerStream("Q", "w1"), WorkerStream("Q", "w1")
    d.register(first)
    d.register(spare)
    assert (sent(first), sent(spare)) == (["registered"], []), "the spare waits unacknowledged"
    d.submit(task("a"))
    d.submit(task("b"))
    assert sent(first) == ["task:a"]
    assert sent(spare) == ["registered", "task:b"], "acknowledged together with the task that needs it"


def test_another_worker_gets_its_own_acknowledged_stream() -> None:
    d, _ = dispatcher()
    one, other = WorkerStream("Q", "w1"), WorkerStream("Q", "w2")
    d.register(one)
    d.register(other)
    assert (sent(one), sent(other)) == (["registered"], ["registered"])


def test_a_declined_task_is_requeued_and_the_stream_backs_off() -> None:
    d, scheduled = dispatcher()
    stream = WorkerStream("Q", "w1")
    d.register(stream)
    t = task("a")
    d.submit(t)
    assert sent(stream) == ["registered", "task:a"]
    d.reject(stream, "a")
    assert t.stream is None and sent(stream) == [], "not offered again at once"
    assert scheduled, "a retry is scheduled"
    stream.declined_until = 0.0
    for _, callback in scheduled:
        callback()
    assert sent(stream) == ["task:a"]


def test_a_finished_task_frees_its_stream_for_the_next() -> None:
    d, _ = dispatcher()
    stream = WorkerStream("Q", "w1")
    d.register(stream)
    first, second = task("a"), task("b")
    d.submit(first)
    d.submit(second)
    assert sent(stream) == ["registered", "task:a"]
    d.finish(first)
    assert sent(stream) == ["task:b"]


def test_a_broken_stream_returns_its_task_and_cancel_reaches_the_worker() -> None:
    d, _ = dispatcher()
    stream, spare = WorkerStream("Q", "w1"), WorkerStream("Q", "w1")
    d.register(stream)
    d.register(spare)
    running = task("a")
    d.submit(running)
    assert d.stream_closed(stream) is running and running.stream is None
    assert sent(spare) == ["registered"], "the held spare takes over as the registered stream"
    d.requeue(running)
    d.cancel(running)
    assert sent(spare) == ["task:a", "cancel_task"]
    assert d.withdraw(task("never-queued")) is False


def test_an_unknown_step_refusal_frees_the_stream_and_skips_that_worker() -> None:
    d, _ = dispatcher()
    old, new = WorkerStream("Q", "old"), WorkerStream("Q", "new")
    d.register(old)
    unknown, known = task("unknown"), task("known")
    d.submit(unknown)
    d.submit(known)
    assert sent(old) == ["registered", "task:unknown"]
    started = d.refuse(old, "unknown")
    assert started is not None and started[0] is unknown, "the first refusal is reported (the dispatch wait starts)"
    assert sent(old) == ["task:known"], "the refusing stream serves the next task at once"
    d.finish(known)
    assert sent(old) == [], "never offered again to the Worker that refused it"
    d.register(new)
    assert sent(new) == ["registered", "task:unknown"], "another Worker gets it"
    assert d.refuse(new, "unknown") is None, "only the first refusal is reported"


def test_a_lost_attempt_is_redelivered_a_bounded_number_of_times() -> None:
    t = task("a")
    t.delivered_at = time.monotonic()
    answers = [t.may_redeliver(60.0, now=t.delivered_at) for _ in range(policy.MAX_REDELIVERIES + 2)]
    assert answers == [True] * policy.MAX_REDELIVERIES + [False, False]


def test_a_stream_its_worker_closed_cleanly_hands_back_its_task_without_counting_a_loss() -> None:
    """A Worker retiring an idle stream half-closes it; a task sent just then was never started, so
    its re-delivery is not a loss (100 busy sessions used to fail RPCs as "worker stream broke")."""
    t = task("a", kind="rpc")
    t.delivered_at = time.monotonic()
    answers = [t.may_redeliver(60.0, now=t.delivered_at, clean_close=True)
               for _ in range(policy.MAX_REDELIVERIES + 2)]
    assert answers == [True] * (policy.MAX_REDELIVERIES + 2)
    assert t.redeliveries == 0
    assert t.may_redeliver(60.0, now=t.delivered_at), "a broken stream still counts"
    assert t.redeliveries == 1


def test_a_task_that_sent_output_is_never_handed_back_even_after_a_clean_close() -> None:
    t = task("a")
    t.delivered_at = time.monotonic()
    t.output_seen = True
    assert not t.may_redeliver(60.0, now=t.delivered_at, clean_close=True)


class _RecordingService(WorkerTaskService):
    """Records how each stream ended instead of acting on it."""

    def __init__(self) -> None:
        lock = threading.RLock()
        self.engine = SimpleNamespace(locked=lambda: lock, stopped=False)  # type: ignore[assignment]
        self.closed: list[bool] = []

    def _on_closed(self, stream: WorkerStream, clean_close: bool) -> None:
        self.closed.append(clean_close)


def _broken() -> Iterator[pb.PollWorkerTaskRequest]:
    yield from ()
    raise _StreamBroke()


class _StreamBroke(grpc.RpcError):
    pass


def test_the_reader_tells_a_half_close_from_a_broken_stream() -> None:
    service = _RecordingService()
    service._read(iter(()), WorkerStream("Q", "w1"))
    service._read(_broken(), WorkerStream("Q", "w1"))
    undecodable = _DecodedFrames(iter([b"\xff\xff\xff"]), pb.PollWorkerTaskRequest.FromString)
    service._read(undecodable, WorkerStream("Q", "w1"))
    assert service.closed == [True, False, False], "a malformed frame breaks the stream; it does not end it cleanly"


def test_a_decline_from_a_stream_that_then_retires_does_not_mark_its_worker_saturated() -> None:
    """The SDK declines a task on a stream it is retiring, then half-closes that stream: that was
    no lack of capacity, so the Worker's held spare still takes the task (it is not kept for RPCs)."""
    d, _ = dispatcher()
    busy, retiring, spare = WorkerStream("Q", "w1"), WorkerStream("Q", "w1"), WorkerStream("Q", "w1")
    d.register(busy)
    d.submit(task("running"))
    d.register(retiring)  # held, then acknowledged for the next task
    d.submit(task("next"))
    assert sent(retiring) == ["registered", "task:next"]
    d.register(spare)  # held
    d.reject(retiring, "next")
    assert sent(spare) == [], "a decline while another task runs looks like full capacity at first"
    d.stream_closed(retiring, clean=True)
    assert sent(spare) == ["registered", "task:next"], "the retiring stream's decline no longer counts"


def test_a_decline_from_a_stream_that_then_breaks_keeps_its_worker_saturated() -> None:
    d, _ = dispatcher()
    busy, full, spare = WorkerStream("Q", "w1"), WorkerStream("Q", "w1"), WorkerStream("Q", "w1")
    d.register(busy)
    d.submit(task("running"))
    d.register(full)
    d.submit(task("next"))
    d.register(spare)
    d.reject(full, "next")
    d.stream_closed(full, clean=False)
    assert sent(spare) == [], "only a Worker's own half-close shows the stream was retiring"
