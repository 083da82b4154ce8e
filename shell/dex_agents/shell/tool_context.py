"""``current_tool_call()``: the deferred call a tool function runs for, read inside the tool.

A framework calls a tool function with its arguments only; a write that records what it did under the
call's idempotency key (so that a ``ToolPolicy(reconcile=...)`` can look it up after a crash left its
outcome unknown) reads the key here. The tool Step sets it around ``runner.execute_deferred_tool_call``
(a context variable: asyncio tasks the runner starts, and ``asyncio.to_thread``, inherit it).

Invariant: outside a tool Step's run, ``current_tool_call()`` is ``None``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from dex_agents.shell.runner import DeferredToolExecution

_CURRENT: Final = ContextVar[DeferredToolExecution | None]("dex_agents_tool_call", default=None)


def current_tool_call() -> DeferredToolExecution | None:
    """The call the running tool runs for (its ``idempotency_key``, ``tool_call``, ``attempt``, ...), or
    ``None`` outside a tool Step."""
    return _CURRENT.get()


@contextmanager
def running_tool_call(execution: DeferredToolExecution) -> Iterator[None]:
    """Make ``execution`` the ``current_tool_call()`` while the block runs."""
    token = _CURRENT.set(execution)
    try:
        yield
    finally:
        _CURRENT.reset(token)


__all__ = ["current_tool_call", "running_tool_call"]
