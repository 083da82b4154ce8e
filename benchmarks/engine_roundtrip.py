"""Round-trip speed of the local engine: Step chains on concurrent Flows, and an RPC loop.

Run: ``python -m benchmarks.engine_roundtrip`` (or by path). Prints figures, never asserts.

Setup, as production: the engine is a child process (``EngineProcess``, a process boundary); this
process runs one pull ``Worker`` with 8 concurrent tasks and the ``Client``. Every Step and the
Flow run with SYNC durability, so each transition is committed and fsync'd before the next Step is
dispatched.

Figures:
    * step-to-step latency: between the starts of consecutive ``execute`` calls of one Flow's
      chain, measured in the worker (the worker's report, the engine's commit, and dispatch).
    * transitions per second: all Steps executed over the wall time from the first Step start to
      the last, with 1 and with 8 concurrent Flows.
    * RPC latency: client-side ``invoke_rpc`` round trip, for a query-only RPC and for an RPC that
      writes an Attribute (committed before it answers).
    * CPU per transition / per RPC of the engine process and of this process (Linux), which tells
      the engine's share from the SDK Worker's; and the load average, since other processes on
      the machine skew every wall-clock figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import dex
from dex import (
    Attribute,
    Client,
    ClientOptions,
    Context,
    Flow,
    FlowConfig,
    PersistenceSchema,
    PullWorkerOptions,
    Registry,
    RPCResult,
    StartFlowOptions,
    Step,
    StepDecision,
    StepDurability,
    StepList,
    StepOptions,
    Worker,
    WorkerOptions,
    WorkerTarget,
    dead_end,
    force_complete,
    go_to,
    rpc,
)

from dex_agents.engine.durability import Durability
from dex_agents.engine.launch import EngineProcess

SYNC_STEP: Final = StepOptions(
    wait_for_durability=StepDurability.SYNC, execute_durability=StepDurability.SYNC
)
SYNC_FLOW: Final = StartFlowOptions(
    config_override=FlowConfig(
        step_durability=StepDurability.SYNC, worker_target=WorkerTarget(pull=True)
    )
)


@dataclass
class StepClock:
    """Execute start times per Flow, recorded by the worker's handler threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    starts: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def mark(self, flow_id: str) -> None:
        now = time.perf_counter()
        with self.lock:
            self.starts[flow_id].append(now)

    def reset(self) -> None:
        with self.lock:
            self.starts.clear()


CLOCK: Final = StepClock()


class Hop(Step[int]):
    """One trivial Step; its input is how many hops remain in the chain."""

    def get_step_options(self) -> StepOptions | None:
        return SYNC_STEP

    def execute(self, context: Context, input: int) -> StepDecision:
        CLOCK.mark(context.flow_id)
        if input <= 1:
            return force_complete()
        return go_to(Hop, input - 1)


class ChainFlow(Flow[int]):
    """A chain of ``Hop`` Steps, started with the chain length."""

    def get_flow_type(self) -> str:
        return "BenchChain"

    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Hop())


COUNTER: Final = Attribute("Counter", int)


class Park(Step[None]):
    """Ends its branch at once, leaving the Flow open for RPCs."""

    def get_step_options(self) -> StepOptions | None:
        return SYNC_STEP

    def execute(self, context: Context, input: None) -> StepDecision:
        return dead_end()


class RpcFlow(Flow[None]):
    """An open Flow serving a query-only RPC and a writing RPC."""

    def get_flow_type(self) -> str:
        return "BenchRpc"

    def get_steps(self) -> StepList[None]:
        return StepList.start_step(Park())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(COUNTER)

    @rpc
    def read(self, context: Context) -> RPCResult[int]:
        return RPCResult(COUNTER.get(context))

    @rpc
    def bump(self, context: Context, input: int) -> RPCResult[int]:
        value = COUNTER.get(context) + input
        COUNTER.set(context, value)
        return RPCResult(value)


def cpu_seconds(pid: int) -> float | None:
    """User+system CPU seconds of a process so far (Linux /proc), or None where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuMeter:
    """CPU used by the engine process and by this process (Worker + Client) over a phase."""

    engine_pid: int | None

    def sample(self) -> tuple[float | None, float | None]:
        engine = cpu_seconds(self.engine_pid) if self.engine_pid is not None else None
        return engine, cpu_seconds(os.getpid())

    def report(self, before: tuple[float | None, float | None], units: int, unit: str) -> str:
        after = self.sample()
        parts = []
        for name, start, end in (("engine", before[0], after[0]), ("worker+client", before[1], after[1])):
            if start is not None and end is not None and units > 0:
                parts.append(f"{name} {1000 * (end - start) / units:.2f} ms")
        return f"CPU per {unit}: " + (", ".join(parts) if parts else "unavailable")


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of ``samples`` (non-empty)."""
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered)) - 1))
    return ordered[rank]


def describe(name: str, samples_s: Sequence[float]) -> str:
    """One line: count, p50, p99, max, in milliseconds."""
    if not samples_s:
        return f"{name}: no samples"
    ms = [s * 1000 for s in samples_s]
    return (
        f"{name}: n={len(ms)} p50={percentile(ms, 0.5):.2f} ms p99={percentile(ms, 0.99):.2f} ms "
        f"mean={statistics.fmean(ms):.2f} ms max={max(ms):.2f} ms"
    )


def run_chains(
    client: Client, flow: ChainFlow, flows: int, hops: int, tag: str, meter: CpuMeter
) -> None:
    """Run ``flows`` concurrent chains of ``hops`` Steps and print their figures."""
    CLOCK.reset()
    cpu_before = meter.sample()
    ids = [f"{tag}-{index}" for index in range(flows)]
    for flow_id in ids:
        client.start_flow(flow, flow_id, hops, SYNC_FLOW)
    for flow_id in ids:
        result = client.wait_for_flow(flow_id)
        if result.status is not dex.FlowStatus.COMPLETED:
            print(f"  flow {flow_id} ended {result.status}: {result}")
    with CLOCK.lock:
        starts = {flow_id: list(times) for flow_id, times in CLOCK.starts.items()}
    gaps = [b - a for times in starts.values() for a, b in zip(times, times[1:], strict=False)]
    every = [t for times in starts.values() for t in times]
    span = max(every) - min(every) if len(every) > 1 else 0.0
    print(f"{flows} concurrent Flow(s) x {hops} Steps ({len(every)} Steps executed)")
    print("  " + describe("step-to-step", gaps))
    rate = (len(every) - 1) / span if span > 0 else 0.0
    print(f"  transitions/s: {rate:.0f} (over {span:.2f} s)")
    print("  " + meter.report(cpu_before, len(every), "transition"))


def run_rpcs(client: Client, flow: RpcFlow, calls: int, meter: CpuMeter) -> None:
    """Invoke a query-only and a writing RPC ``calls`` times each and print their latency."""
    client.start_flow(flow, "rpc-0", None, SYNC_FLOW)
    cpu_before = meter.sample()
    read = time_calls(calls, lambda: client.invoke_rpc(flow.read, "rpc-0"))
    bump = time_calls(calls, lambda: client.invoke_rpc(flow.bump, "rpc-0", 1))
    cpu_report = meter.report(cpu_before, 2 * (calls + 20), "RPC")
    total = client.invoke_rpc(flow.read, "rpc-0")
    print(f"RPC loop ({calls} calls each; counter now {total})")
    print("  " + describe("query-only RPC", read))
    print("  " + describe("writing RPC (SYNC commit)", bump))
    print("  " + cpu_report)


def time_calls(calls: int, call: Callable[[], object]) -> list[float]:
    """Latency of ``calls`` sequential calls after 20 warm-up calls."""
    for _ in range(20):
        call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def load_average() -> str:
    """The 1/5/15-minute load averages (other processes skew every figure above)."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unavailable"


def main(argv: Sequence[str] | None = None) -> None:
    """Start an engine child, a pull Worker and a Client; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hops", type=int, default=300, help="Steps per chain (default 300)")
    parser.add_argument("--rpcs", type=int, default=500, help="RPC calls per kind (default 500)")
    parser.add_argument("--address", default=None, help="use a running engine instead of a child")
    parser.add_argument("--durability", choices=[level.value for level in Durability], default=Durability.POWER_LOSS.value,
                        help="the engine child's durability level (default power-loss: fsync per commit)")
    args = parser.parse_args(argv)
    durability = Durability(args.durability)
    chain, rpc_flow = ChainFlow(), RpcFlow()
    registry = Registry([chain, rpc_flow])
    with tempfile.TemporaryDirectory(prefix="dex-agents-bench-") as directory:
        root = Path(directory)
        engine = None if args.address else EngineProcess.start(root / "engine.sqlite3", durability=durability)
        address: str = args.address or (engine.address if engine else "")
        cache = dex.open_blob_cache(dex.BlobCacheConfig(str(root / "blobs"), 64 << 20))
        worker = Worker(
            registry,
            cache,
            WorkerOptions(server_address=address, pull=PullWorkerOptions(max_concurrent_tasks=8)),
        )
        thread = threading.Thread(target=worker.start, name="bench-worker", daemon=True)
        thread.start()
        client = Client(
            registry, cache, ClientOptions(server_address=address, worker_target=worker.worker_target)
        )
        try:
            worker.wait_pull_registered(timeout=30)
            meter = CpuMeter(engine.pid if engine is not None else None)
            level = "as the running engine was started" if args.address else durability.description
            print(f"engine {address}; pull Worker max_concurrent_tasks=8; SYNC Steps; durability: {level}")
            print(f"load average at start: {load_average()}; CPUs: {os.cpu_count()}")
            run_chains(client, chain, 1, 30, "warmup", meter)
            run_chains(client, chain, 1, args.hops, "single", meter)
            run_chains(client, chain, 8, args.hops, "eight", meter)
            run_rpcs(client, rpc_flow, args.rpcs, meter)
            print(f"load average at end: {load_average()}")
        finally:
            client.close()
            worker.stop()
            thread.join(timeout=30)
            worker.close()
            cache.close()
            if engine is not None:
                engine.stop()


if __name__ == "__main__":
    main()
