"""Engine core, recovery on start: an attempt in flight when the engine went away is re-delivered
with the same attempt number when it had sent no output frame, and otherwise counts as failed and
is retried with the next attempt number and its last heartbeat checkpoint. Runs in-process
``EngineServer`` instances on one database and port; the Worker reconnects by itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Generator
from contextlib import closing
from datetime import timedelta
from pathlib import Path

from dex import (
    Context,
    FlowStatus,
    RetryPolicy,
    Step,
    StepDecision,
    StepOptions,
    StepOutput,
    graceful_complete,
    heartbeat,
)

from dex_agents.engine.server import EngineServer
from dex_agents.engine.timing import EngineTiming
from tests.engine.harness import NamedFlow, SingleStepFlow, open_harness
from tests.engine.probes import POLICY_SECOND, eventually


class Tool(Step[str]):
    """Attempt 1 blocks (after a checkpoint heartbeat when the input says so); later ones finish."""

    def __init__(self, flow: NamedFlow[str]) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_retry=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3))

    def execute(self, context: Context, input: str) -> Generator[StepOutput, None, StepDecision]:
        checkpoint = context.get_last_heartbeat_value(int) if context.has_last_heartbeat_value() else None
        self.flow.probe.record("attempt", (context.attempt, checkpoint))
        if len(self.flow.probe.values("attempt")) == 1:
            if input == "heartbeat-first":
                yield heartbeat(7)
            self.flow.probe.record("blocked")
            self.flow.gate.block(context.is_cancellation_requested)
        return graceful_complete(context.attempt)


def attempt_output_recorded(db_path: Path) -> bool:
    """Whether the engine's database says the running attempt of ``Tool-1`` has sent output."""
    with closing(sqlite3.connect(db_path)) as db:
        row = db.execute("SELECT output_seen FROM steps WHERE seid = 'Tool-1'").fetchone()
    return row is not None and bool(row[0])


def run(tmp_path: Path, mode: str) -> tuple[list[object], int]:
    first = EngineServer(tmp_path / "engine.db")
    first.start()
    port = first.port
    flow = SingleStepFlow(f"Recovery-{mode}", Tool)
    harness = open_harness([flow], address=first.address, cache_dir=tmp_path / "cache")
    second: EngineServer | None = None
    try:
        harness.client.start_flow(flow, "f", mode)
        flow.probe.wait("blocked")
        if mode == "heartbeat-first":
            # The Worker resumes once its heartbeat is written locally, not once the engine has it:
            # stop the engine only after it recorded the attempt's output, which is the case tested.
            eventually(lambda: attempt_output_recorded(tmp_path / "engine.db"),
                       what="the engine records the attempt's heartbeat")
        first.stop(grace=0)
        second = EngineServer(tmp_path / "engine.db", port=port, timing=EngineTiming(policy_second=POLICY_SECOND))
        second.start()
        result = harness.client.wait_for_flow("f", timeout=timedelta(seconds=30))
        assert result.status is FlowStatus.COMPLETED
        return flow.probe.values("attempt"), result.single_output(int)
    finally:
        flow.gate.open()
        harness.close()
        if second is not None:
            second.stop()


def test_an_attempt_without_output_is_redelivered_with_the_same_number(tmp_path: Path) -> None:
    attempts, output = run(tmp_path, "silent")
    assert attempts == [(1, None), (1, None)] and output == 1


def test_an_attempt_that_heartbeat_counts_as_failed_and_retries_with_its_checkpoint(tmp_path: Path) -> None:
    attempts, output = run(tmp_path, "heartbeat-first")
    assert attempts == [(1, None), (2, 7)] and output == 2
