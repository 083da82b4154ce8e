"""Engine core, a task's lifecycle is an explicit state: QUEUED -> DELIVERED -> FINISHED or
CANCELED, back to QUEUED only from DELIVERED (declined, refused, stream lost), and every other move
raises; the dispatcher moves tasks through it (no server)."""

from __future__ import annotations

import pytest

from dex_agents.engine.tasks import IllegalTaskTransition, Task, TaskState, WorkerStream
from tests.engine.test_core_dispatch import dispatcher, sent, task


def state_of(t: Task) -> TaskState:
    """The task's state, read afresh (a plain attribute read would stay narrowed for mypy)."""
    return t.state


def test_a_task_goes_queued_delivered_finished() -> None:
    d, _ = dispatcher()
    stream = WorkerStream("Q", "w1")
    d.register(stream)
    t = task("a")
    assert state_of(t) is TaskState.QUEUED
    d.submit(t)
    assert (t.state, t.stream) == (TaskState.DELIVERED, stream)
    d.finish(t)
    t.finish()
    assert (t.state, t.done) == (TaskState.FINISHED, True)
    t.finish()
    assert state_of(t) is TaskState.FINISHED, "finishing twice is a no-op"


def test_a_declined_task_is_queued_again_and_redelivered() -> None:
    d, _ = dispatcher()
    first, other = WorkerStream("Q", "w1"), WorkerStream("Q", "w2")
    d.register(first)
    t = task("a")
    d.submit(t)
    d.register(other)
    sent(other)
    d.reject(first, "a")
    assert (t.state, t.stream) == (TaskState.DELIVERED, other), "requeued and handed to the other Worker"


def test_a_canceled_task_stays_canceled_and_is_never_delivered_again() -> None:
    d, _ = dispatcher()
    stream = WorkerStream("Q", "w1")
    d.register(stream)
    t = task("a")
    d.submit(t)
    d.cancel(t)
    assert t.state is TaskState.CANCELED
    assert sent(stream) == ["registered", "task:a", "cancel_task"]
    t.finish()
    assert t.state is TaskState.CANCELED, "a canceled task's outcome does not make it finished"
    d.cancel(t)
    assert sent(stream) == [], "a final task is not canceled twice"
    with pytest.raises(IllegalTaskTransition, match="CANCELED -> QUEUED"):
        d.requeue(t)
    with pytest.raises(IllegalTaskTransition):
        d.submit(t)


@pytest.mark.parametrize(("start", "to"), [
    (TaskState.QUEUED, TaskState.QUEUED),
    (TaskState.FINISHED, TaskState.DELIVERED),
    (TaskState.FINISHED, TaskState.QUEUED),
    (TaskState.FINISHED, TaskState.CANCELED),
    (TaskState.CANCELED, TaskState.FINISHED),
    (TaskState.CANCELED, TaskState.DELIVERED),
])
def test_illegal_transitions_raise(start: TaskState, to: TaskState) -> None:
    t = task("a")
    t.state = start
    with pytest.raises(IllegalTaskTransition, match=f"{start.name} -> {to.name}"):
        t.move(to)
    assert t.state is start
