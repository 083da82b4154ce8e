"""The Flow served by worker child processes in the worker-SIGKILL tests.

``Victim`` (holding the ``Holder`` lock) logs ``<attempt> <pid>`` to ``attempts.log`` in the gate
directory, optionally sends one output frame (a heartbeat), then touches ``reached-<pid>`` and
blocks until the file ``release`` exists; it then writes its pid into ``Holder``. The test kills
the child while it blocks, then starts another child.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from datetime import timedelta
from pathlib import Path

from dex import (
    Attribute,
    Context,
    PersistenceSchema,
    RetryPolicy,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepOptions,
    StepOutput,
    graceful_complete,
    heartbeat,
    rpc,
)

from tests.engine.harness import GATE_SECONDS, NamedFlow

ATTEMPTS_LOG = "attempts.log"
holder = Attribute("Holder", str)
RELEASE = "release"


def reached_marker(gate_dir: Path, pid: int) -> Path:
    """The file a child touches once its handler is blocked at the gate."""
    return gate_dir / f"reached-{pid}"


def logged_attempts(gate_dir: Path) -> list[tuple[int, int]]:
    """``(attempt, pid)`` pairs in the order the handlers started."""
    path = gate_dir / ATTEMPTS_LOG
    if not path.exists():
        return []
    pairs = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [(int(attempt), int(pid)) for attempt, pid in pairs]


class Victim(Step[str]):
    """Input ``silent``: no frame before the gate. Input ``frame``: one heartbeat frame first."""

    def __init__(self, flow: KillFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3),
                           execute_lock_attributes=(holder.lock(),))

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        gate_dir = self.flow.gate_dir
        with (gate_dir / ATTEMPTS_LOG).open("a") as log:
            log.write(f"{context.attempt} {os.getpid()}\n")
        if input == "frame":
            yield heartbeat()
        reached_marker(gate_dir, os.getpid()).touch()
        deadline = time.monotonic() + GATE_SECONDS
        while not (gate_dir / RELEASE).exists():
            if context.is_cancellation_requested() or time.monotonic() > deadline:
                raise RuntimeError("gate never opened")
            time.sleep(0.02)
        holder.set(context, f"pid {os.getpid()}")
        return graceful_complete(context.attempt)


class KillFlow(NamedFlow[str]):
    def __init__(self, flow_type: str, gate_dir: Path) -> None:
        super().__init__(flow_type)
        self.gate_dir = gate_dir

    def get_steps(self) -> StepList[str]:
        return StepList.start_step(Victim(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(holder)

    @rpc(lock_attributes=(holder.lock(),))
    def locked_read(self, context: Context) -> RPCResult[str]:
        return self.read_holder(context)

    @rpc
    def read_holder(self, context: Context) -> RPCResult[str]:
        value: str | None = holder.get(context)
        return RPCResult("" if value is None else value)
