"""Throughput of many concurrent sessions served by one Worker process.

Run: ``python -m benchmarks.concurrent_sessions`` (``--quick`` for a smoke run). Prints figures,
never asserts on them.

The turn is the one of ``benchmarks.turn_overhead`` (a user message, one read tool call, an answer).
The local engine runs as a child process; this process holds one session Worker (``AsyncWorker`` on
its own event loop thread) and an ``AsyncClient`` on a second loop thread. For each concurrency level
N (default 1, 10 and 100), N sessions are started and left idle (untimed); then every session runs
its turns back to back: ``send_user_message``, then the long poll for the turn's final ``RunModel``
commit, then the next message. Printed per level: turns/s, turn latency p50/p99, the CPU the engine
and this process (Worker and Client) spend per turn, and turns per CPU-second (throughput per core:
flat from N=1 to N=100 means concurrency costs nothing per turn).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Final

import dex
from dex import AsyncClient, ClientOptions, StepExecutionId, WaitForStepCompletionOptions, WorkerTarget

from benchmarks.engine_roundtrip import cpu_seconds, load_average, percentile
from benchmarks.turn_overhead import (
    FLOW_TYPE,
    TOOL_NAME,
    LoopThread,
    Questions,
    build_runner,
    start_session_worker,
)
from dex_agents.engine.durability import Durability
from dex_agents.engine.launch import EngineProcess
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.rpc import SendUserMessageInput
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import AgentSessionStartInput, ToolEffect
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.worker import DEFAULT_MAX_CONCURRENT_TASKS, session_registry

WAIT: Final = WaitForStepCompletionOptions(request_timeout=timedelta(seconds=60))
RUN_TIMEOUT_SECONDS: Final = 600.0


@dataclass(frozen=True)
class Level:
    """One concurrency level's result."""

    sessions: int
    turns: int
    seconds: float
    latencies: list[float]
    engine_cpu: float | None
    local_cpu: float | None

    def lines(self) -> list[str]:
        ms = sorted(latency * 1000 for latency in self.latencies)
        out = [f"{self.sessions} concurrent session(s) x {self.turns // self.sessions} turns ({self.turns} turns)",
               f"  turns/s: {self.turns / self.seconds:.1f} (over {self.seconds:.2f} s)",
               f"  turn latency: p50={percentile(ms, 0.5):.2f} ms p99={percentile(ms, 0.99):.2f} ms "
               f"mean={statistics.fmean(ms):.2f} ms"]
        if self.engine_cpu is not None and self.local_cpu is not None:
            total = self.engine_cpu + self.local_cpu
            out.append(f"  CPU per turn: engine {1000 * self.engine_cpu / self.turns:.2f} ms, "
                       f"worker+client {1000 * self.local_cpu / self.turns:.2f} ms; "
                       f"turns per CPU-second: {self.turns / total:.1f}")
        return out


async def _session_turns(client: AsyncClient, flow: AgentSessionFlow, session_id: str, turns: int,
                         questions: Questions, latencies: list[float]) -> None:
    for turn in range(1, turns + 1):
        started = time.perf_counter()
        accepted = await client.invoke_rpc(flow.send_user_message, session_id,
                                           SendUserMessageInput(text=questions.next()))
        if accepted is not True:
            raise RuntimeError(f"{session_id}: send_user_message answered {accepted!r}")
        await client.wait_for_step_completion(session_id, StepExecutionId(StepType.RUN_MODEL.value, 2 * turn), WAIT)
        latencies.append(time.perf_counter() - started)


async def _run_level(client: AsyncClient, flow: AgentSessionFlow, prefix: str, sessions: int, turns: int,
                     questions: Questions, engine_pid: int) -> Level:
    ids = [f"{prefix}-{index}" for index in range(sessions)]
    for session_id in ids:
        await client.start_flow(flow, session_id, AgentSessionStartInput(initial_message=None))
    latencies: list[float] = []
    engine_before, local_before = cpu_seconds(engine_pid), cpu_seconds(os.getpid())
    started = time.perf_counter()
    await asyncio.gather(*(_session_turns(client, flow, session_id, turns, questions, latencies) for session_id in ids))
    seconds = time.perf_counter() - started
    engine_after, local_after = cpu_seconds(engine_pid), cpu_seconds(os.getpid())
    engine_cpu = None if engine_before is None or engine_after is None else engine_after - engine_before
    local_cpu = None if local_before is None or local_after is None else local_after - local_before
    return Level(sessions, sessions * turns, seconds, latencies, engine_cpu, local_cpu)


@dataclass(frozen=True)
class Settings:
    levels: tuple[int, ...]
    turns: int
    slots: int


def parse(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0] or None)
    parser.add_argument("--levels", default=None, help="comma-separated session counts (default 1,10,100)")
    parser.add_argument("--turns", type=int, default=None, help="turns per session at each level (default 5)")
    parser.add_argument("--slots", type=int, default=DEFAULT_MAX_CONCURRENT_TASKS,
                        help=f"the Worker's task slots (default {DEFAULT_MAX_CONCURRENT_TASKS})")
    parser.add_argument("--quick", action="store_true", help="a few iterations only (a smoke run)")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    try:
        levels = tuple(int(part) for part in (args.levels or ("1,3" if quick else "1,10,100")).split(","))
    except ValueError:
        parser.error("--levels must be comma-separated integers")
    turns: int = args.turns if args.turns is not None else (2 if quick else 5)
    slots: int = args.slots
    if not levels or min(levels) < 1 or turns < 1 or slots < 2:
        parser.error("--levels must be positive, --turns at least 1 and --slots at least 2")
    return Settings(levels, turns, slots)


def main(argv: Sequence[str] | None = None) -> None:
    """Start an engine child, one session Worker and an AsyncClient; run every level; print figures."""
    settings = parse(argv)
    warmup = 2
    questions = Questions(warmup + settings.turns * sum(settings.levels))
    runner = build_runner(questions.limit)
    flow = create_agent_session_flow(runner, FLOW_TYPE, tool_policies={TOOL_NAME: ToolPolicy(effect=ToolEffect.READ)})
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dex-agents-concurrency-bench-")))
        engine = EngineProcess.start(root / "engine.sqlite3", port=0)
        stack.callback(engine.stop)
        cache = dex.open_blob_cache(dex.BlobCacheConfig(str(root / "blobs"), 64 << 20))
        stack.callback(cache.close)
        worker_loop = LoopThread.start()
        stack.callback(worker_loop.close)
        start_session_worker(worker_loop, stack, flow, cache, engine.address, max_concurrent_tasks=settings.slots)
        client_loop = LoopThread.start()
        stack.callback(client_loop.close)

        async def build_client() -> AsyncClient:
            return AsyncClient(session_registry([flow]), cache,
                               ClientOptions(server_address=engine.address, worker_target=WorkerTarget(pull=True)))

        client = client_loop.run(build_client())
        stack.callback(lambda: client_loop.run(client.close()))

        print("dex-agents concurrent sessions: each session runs its turns back to back "
              "(message -> read tool -> answer)")
        print(f"Python {platform.python_version()}; CPUs: {os.cpu_count()}; load average at start: {load_average()}")
        print(f"durability: {Durability.POWER_LOSS.description}; engine in a child process; one session Worker "
              f"(AsyncWorker, pull, {settings.slots} task slots) and an AsyncClient in this process")
        client_loop.run(_run_level(client, flow, "warmup", 1, warmup, questions, engine.pid), RUN_TIMEOUT_SECONDS)
        for sessions in settings.levels:
            level = client_loop.run(_run_level(client, flow, f"level-{sessions}", sessions, settings.turns,
                                               questions, engine.pid), RUN_TIMEOUT_SECONDS)
            for line in level.lines():
                print(line)
        print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
