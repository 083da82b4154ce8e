"""The floor of a turn's Step shape on this machine: the same Steps, waits, RPC and Stream writes as a
one-tool turn, with no session logic, no framework and trivial values, on the local engine and the
SDK's ``AsyncWorker`` with a session Worker's stream options.

Run: ``python -m benchmarks.shape_floor`` (``--turns N``, ``--durability``). Prints figures, never
asserts.

One "turn" here: the Client invokes an RPC that publishes one message -> ``Await`` (its ``wait_for``
waits for it; ``execute`` writes 1 Stream message and an Attribute) -> ``RunA`` (2 Stream messages, an
Attribute, then ``CallT`` and ``Resume(1)`` at once) -> ``CallT`` (2 Stream messages, publishes one
result, dead end) and ``Resume`` (its ``wait_for`` waits for the result) -> ``RunB`` (3 Stream messages,
an Attribute) -> ``Await`` again. That is the Step shape, the commits and the frames of a dex-agents turn
with one read tool (``benchmarks.turn_profile`` counts them), so its latency and CPU are what the
engine, the SDK and gRPC cost for that shape before any session code or framework runs. The turn is
timed from the RPC until ``RunB``'s ``execute`` committed (``wait_for_step_completion``), as the peers'
harness times a dex-agents turn.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Final

from dex import (
    AsyncContext,
    AsyncWorker,
    Attribute,
    BlobCacheConfig,
    Channel,
    Client,
    ClientOptions,
    Context,
    Flow,
    PersistenceSchema,
    PullWorkerOptions,
    Registry,
    RPCResult,
    Step,
    StepDecision,
    StepDurability,
    StepExecutionId,
    StepList,
    StepMovement,
    StepOptions,
    Stream,
    Wait,
    WaitForStepCompletionOptions,
    WorkerOptions,
    WorkerTarget,
    dead_end,
    go_to,
    go_to_many,
    open_blob_cache,
    rpc,
)

from benchmarks.engine_roundtrip import cpu_seconds, percentile
from benchmarks.side_by_side import MachineSample, machine_line
from dex_agents.engine.durability import Durability
from dex_agents.engine.launch import EngineProcess
from dex_agents.shell.worker import IDLE_STREAMS_PER_QUEUE

SYNC: Final = StepOptions(wait_for_durability=StepDurability.SYNC, execute_durability=StepDurability.SYNC)
STATE: Final = Attribute("State", str)
QUEUED: Final = Channel("Queued", str)
RESULTS: Final = Channel("Results", str)
EVENT: Final = '{"attempt":1,"payload":{"text":"Order 42 has shipped."},"step_execution_id":"RunB-1","turn_id":"turn-1","type":"text_delta"}'
STATE_VALUE: Final = '{"status":"running_model","turn_count":1,' + '"x":' + '"' + "y" * 600 + '"}'


class Await(Step[None]):
    def __init__(self, flow: ShapeFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions | None:
        return SYNC

    async def wait_for(self, context: AsyncContext, input: None) -> Wait:  # type: ignore[override]
        return Wait.until(QUEUED.for_one())

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        self.flow.events.write(context, EVENT)
        STATE.set(context, STATE_VALUE)
        return go_to(RunA, None)


class RunA(Step[None]):
    def __init__(self, flow: ShapeFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        for _ in range(2):
            self.flow.events.write(context, EVENT)
        STATE.set(context, STATE_VALUE)
        return go_to_many(StepMovement.of(CallT, None, options=SYNC), StepMovement.of(Resume, 1, options=SYNC))


class CallT(Step[None]):
    def __init__(self, flow: ShapeFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        for _ in range(2):
            self.flow.events.write(context, EVENT)
        RESULTS.publish(context, "done")
        return dead_end()


class Resume(Step[int]):
    def __init__(self, flow: ShapeFlow) -> None:
        self.flow = flow

    async def wait_for(self, context: AsyncContext, input: int) -> Wait:  # type: ignore[override]
        return Wait.until(RESULTS.for_n(input))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:  # type: ignore[override]
        return go_to(RunB, None)


class RunB(Step[None]):
    def __init__(self, flow: ShapeFlow) -> None:
        self.flow = flow

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        for _ in range(3):
            self.flow.events.write(context, EVENT)
        STATE.set(context, STATE_VALUE)
        return go_to(Await, None)


class ShapeFlow(Flow[None]):
    """The Step shape of a one-tool turn, nothing else."""

    def __init__(self) -> None:
        self.events: Stream[str] = Stream("Events", str, 10 * 1024 * 1024)

    def get_flow_type(self) -> str:
        return "ShapeFloor"

    def get_steps(self) -> StepList[None]:
        return StepList.start_step(Await(self)).other_steps(RunA(self), CallT(self), Resume(self), RunB(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(STATE, QUEUED, RESULTS, self.events)

    @rpc
    def send(self, context: Context, input: str) -> RPCResult[bool]:
        QUEUED.publish(context, input)
        return RPCResult(True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="measured turns (default 200, after 20 warm-up)")
    parser.add_argument("--durability", choices=[level.value for level in Durability],
                        default=Durability.POWER_LOSS.value)
    args = parser.parse_args(argv)
    durability = Durability(args.durability)
    flow = ShapeFlow()
    registry = Registry([flow], allow_async_handlers=True)
    with tempfile.TemporaryDirectory(prefix="dex-agents-shape-floor-") as directory:
        engine = EngineProcess.start(Path(directory) / "engine.sqlite3", durability=durability)
        cache = open_blob_cache(BlobCacheConfig(str(Path(directory) / "blobs"), 64 << 20))
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        try:
            async def build() -> AsyncWorker:
                pull = PullWorkerOptions(max_concurrent_tasks=8, idle_streams_per_queue=IDLE_STREAMS_PER_QUEUE)
                return AsyncWorker(registry, cache, WorkerOptions(server_address=engine.address, pull=pull))

            worker = asyncio.run_coroutine_threadsafe(build(), loop).result(30)
            serving = asyncio.run_coroutine_threadsafe(worker.start(), loop)
            asyncio.run_coroutine_threadsafe(worker.wait_pull_registered(30), loop).result(40)
            client = Client(registry, cache, ClientOptions(server_address=engine.address,
                                                           worker_target=WorkerTarget(pull=True)))
            client.start_flow(flow, "shape-1", None)
            wait = WaitForStepCompletionOptions(request_timeout=timedelta(seconds=30))
            turn = 0

            def one_turn() -> float:
                nonlocal turn
                turn += 1
                started = time.perf_counter()
                client.invoke_rpc(flow.send, "shape-1", "hello")
                client.wait_for_step_completion("shape-1", StepExecutionId("RunB", turn), wait)
                elapsed = time.perf_counter() - started
                time.sleep(0.005)
                return elapsed

            for _ in range(20):
                one_turn()
            machine = MachineSample.now()
            engine_cpu, own_cpu = cpu_seconds(engine.pid), cpu_seconds_self()
            samples = [one_turn() for _ in range(args.turns)]
            engine_used = (cpu_seconds(engine.pid) or 0.0) - (engine_cpu or 0.0)
            own_used = cpu_seconds_self() - own_cpu
            line = machine_line(machine, MachineSample.now())
            ms = [sample * 1000 for sample in samples]
            print(f"Step shape of a one-tool turn, no session code (durability {durability.value}); {line}")
            print(f"  turn: n={len(ms)} p50={percentile(ms, 0.5):.2f} ms p90={percentile(ms, 0.9):.2f} ms "
                  f"mean={statistics.fmean(ms):.2f} ms (includes a 5 ms pause's share of nothing: untimed)")
            print(f"  CPU per turn: engine {1000 * engine_used / args.turns:.2f} ms, worker+client "
                  f"{1000 * own_used / args.turns:.2f} ms (the 5 ms pauses between turns cost no CPU)")
            client.close()
            asyncio.run_coroutine_threadsafe(worker.stop(), loop).result(30)
            serving.result(30)
            asyncio.run_coroutine_threadsafe(worker.close(), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            cache.close()
            engine.stop()


def cpu_seconds_self() -> float:
    return time.process_time()


if __name__ == "__main__":
    main()
