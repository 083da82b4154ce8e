"""The tasks of one dispatch queue waiting for a Worker stream, in order, with O(1) push, pop and
discard (no walk over the queue however many tasks wait)."""

from __future__ import annotations

import itertools
from collections import deque

from .tasks import Task

_order = itertools.count(1)


class PendingTasks:
    """The tasks of one queue waiting for a stream, in order; Step and RPC tasks are kept apart so
    an RPC can pass Step tasks that no stream may take, without a walk over them.

    Invariant: a task is queued iff ``task.queue_order`` is not None, and then exactly one live
    entry ``(task.queue_order, task)`` exists; other entries of the task are stale and skipped.
    Push, pop and discard are O(1) amortized.
    """

    def __init__(self) -> None:
        self._steps: deque[tuple[int, Task]] = deque()
        self._rpcs: deque[tuple[int, Task]] = deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, task: Task, *, front: bool = False) -> None:
        """Queue ``task`` last (or first, ahead of every queued task)."""
        if task.queue_order is not None:
            return
        entries = self._rpcs if task.kind == "rpc" else self._steps
        order = -next(_order) if front else next(_order)
        task.queue_order = order
        if front:
            entries.appendleft((order, task))
        else:
            entries.append((order, task))
        self._size += 1

    def discard(self, task: Task) -> bool:
        """Unqueue ``task``; False when it was not queued (its entry turns stale)."""
        if task.queue_order is None:
            return False
        task.queue_order = None
        self._size -= 1
        return True

    @staticmethod
    def _head(entries: deque[tuple[int, Task]]) -> tuple[int, Task] | None:
        while entries and entries[0][1].queue_order != entries[0][0]:
            entries.popleft()
        return entries[0] if entries else None

    def pop(self, *, steps: bool) -> Task | None:
        """Unqueue the oldest task (only RPC tasks unless ``steps``), or None."""
        rpc = self._head(self._rpcs)
        step = self._head(self._steps) if steps else None
        if step is not None and (rpc is None or step[0] < rpc[0]):
            self._steps.popleft()
            chosen = step[1]
        elif rpc is not None:
            self._rpcs.popleft()
            chosen = rpc[1]
        else:
            return None
        self.discard(chosen)
        return chosen
