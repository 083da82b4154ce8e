"""Where a turn's work goes, and whether it grows with the session: counts, bytes and CPU per turn.

Run: ``python -m benchmarks.turn_profile`` (``--turns N``; ``--cpu`` adds a cProfile of the Worker and
Client; ``--strace`` counts the engine child's syscalls; ``--py-spy PATH`` samples both processes with
a ``py-spy`` binary instead, e.g. one installed with ``pip install py-spy`` in a virtualenv of its own).
Prints figures, never asserts.

The workload is the peers' (``benchmarks/peers``): the user asks "Where is order 42?", Pydantic AI's
``FunctionModel`` (streaming) asks for ``lookup_order`` (a ``read`` tool), the tool runs, the model
answers. One session takes ``--turns`` turns (``send_user_message``, then the wait until the turn's
last ``RunModel`` committed, as ``peers/dex_agents_pai.py`` times it).

What it measures, per turn, for the first five turns and the last five:
    * counts (engine in this process, instrumented): the frames each way between engine and Worker
      (tasks to the Worker; heartbeats, Stream writes and results from it) and their bytes, the
      engine's commits (fsync'd ones apart: at ``power-loss`` every durable commit is one fsync of the
      WAL), the values the session codecs decoded (and how many the decode memo answered), the
      Pydantic AI messages the adapter rebuilt from stored items, and the Client's RPCs;
    * ``--cpu``: the engine in a child process (as in production) and a cProfile of this process's
      threads (the Worker's event loop and the Client) over the same turns, grouped by package, and
      the CPU seconds of each process per turn;
    * ``--strace``: the engine child under ``strace -f -c`` (fsync/fdatasync and futex calls per turn).

Figures move with the machine's load: the load average and CPU steal are printed with them.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

from benchmarks.side_by_side import MachineSample, machine_line

if TYPE_CHECKING:
    from dex_agents.engine import EngineProcess
    from dex_agents.testing import AgentTestEnvironment

PROMPT: Final = "Where is order 42?"
TOOL_RESULT: Final = "order 42: shipped, in transit via Berlin hub, ETA 2 days"
FINAL_ANSWER: Final = "Order 42 has shipped and is in transit via the Berlin hub; it should arrive in about 2 days."
FLOW_TYPE: Final = "TurnProfile"
WAIT: Final = timedelta(seconds=60)
WARM_UP_TURNS: Final = 5


# ---- the workload (the peers' agent: pai_workload.py, with a streaming FunctionModel)


def build_flow() -> Any:
    """The peers' agent as a session Flow (lookup_order classified ``read``)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    from dex_agents import ToolEffect, ToolPolicy
    from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(isinstance(part, ToolReturnPart) for part in last.parts):
            return ModelResponse(parts=[TextPart(FINAL_ANSWER)])
        count = sum(isinstance(message, ModelResponse) for message in messages)
        return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": 42}, tool_call_id=f"call_{count}")])

    async def streamed(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        part = scripted(messages, info).parts[0]
        if isinstance(part, TextPart):
            yield part.content
        else:
            assert isinstance(part, ToolCallPart)
            yield {0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                    tool_call_id=part.tool_call_id)}

    def lookup_order(order_id: int) -> str:
        """Look up the shipping status of an order."""
        return TOOL_RESULT

    agent = Agent(FunctionModel(scripted, stream_function=streamed, model_name="scripted"), tools=[lookup_order])
    return create_pydantic_ai_session_flow(
        agent, FLOW_TYPE, tool_policies={"lookup_order": ToolPolicy(effect=ToolEffect.READ)})


# ---- counters


@dataclass
class Counts:
    """Cumulative counters; ``snapshot`` copies them so a turn's share is a difference."""

    values: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, key: str, amount: int = 1) -> None:
        with self.lock:
            self.values[key] += amount

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.values)


COUNTS: Final = Counts()


def _caller_operation() -> str:
    """The engine operation that opened a transaction (the first frame outside the store and core)."""
    frame: FrameType | None = sys._getframe(3)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("dex_agents.engine.") and not module.endswith((".store", ".core", "contextlib")):
            return f"{module.rsplit('.', 1)[-1]}.{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def install_engine_counters() -> None:
    """Count the engine's frames each way (with bytes) and its commits (durable apart)."""
    from dex.dexpb import dex_pb2 as pb

    from dex_agents.engine.repository import store as store_module
    from dex_agents.engine import worker_service

    service_class: Any = worker_service.WorkerTaskService
    original_request = service_class._on_request
    original_serve = service_class._serve

    def on_request(self: Any, stream: Any, request: pb.PollWorkerTaskRequest) -> None:
        kind = request.WhichOneof("frame") or "?"
        if kind == "task_frame":
            frame = request.task_frame
            output = frame.WhichOneof("output") or "?"
            if output in ("wait_for", "execute"):
                inner = getattr(frame, output).WhichOneof("output") or "?"
                kind = f"{output}.{inner}"
            else:
                kind = output
        COUNTS.add(f"frames from Worker: {kind}")
        COUNTS.add("bytes from Worker", request.ByteSize())
        original_request(self, stream, request)

    def serve(self: Any, requests: Any, context: Any) -> Iterator[pb.PollWorkerTaskResponse]:
        for response in original_serve(self, requests, context):
            fields = [descriptor.name for descriptor, _ in response.ListFields()]
            kind = fields[0] if fields else "?"
            if kind == "task":
                inner = [descriptor.name for descriptor, _ in response.task.ListFields()
                         if descriptor.name in ("wait_for", "execute", "rpc")]
                kind = f"task.{inner[0] if inner else '?'}"
            COUNTS.add(f"frames to Worker: {kind}")
            COUNTS.add("bytes to Worker", response.ByteSize())
            yield response

    service_class._on_request = on_request
    service_class._serve = serve

    store_class: Any = store_module.Store
    original_transaction = store_class.transaction

    @contextlib.contextmanager
    def transaction(self: Any, *, durable: bool = True) -> Iterator[Any]:
        outer = self._depth == 0
        operation = _caller_operation() if outer else ""
        with original_transaction(self, durable=durable) as db:
            yield db
        if outer:
            COUNTS.add("commits (fsync'd)" if durable else "commits (not fsync'd)")
            COUNTS.add(f"commit: {operation}{'' if durable else ' (no fsync)'}")

    store_class.transaction = transaction


def install_worker_counters() -> None:
    """Count decoded session values (and the decode memo's answers) and rebuilt framework messages."""
    from dex_agents.adapters.pydantic_ai import messages as pai_messages
    from dex_agents.adapters.pydantic_ai.binding import PydanticAIBinding
    from dex_agents.shell import codecs

    codec_class: Any = codecs.WireTextCodec
    original_decode = codec_class.decode

    def decode(self: Any, value: Any) -> Any:
        COUNTS.add("values decoded")
        COUNTS.add("characters decoded", len(value.data) if isinstance(value.data, str) else 0)
        if value.data in self._memo.values:
            COUNTS.add("values decoded from the memo")
        return original_decode(self, value)

    codec_class.decode = decode
    original_load = pai_messages.load_messages

    def load_messages(data: Any) -> Any:
        loaded = original_load(data)
        COUNTS.add("framework messages rebuilt", len(loaded))
        return loaded

    binding_class: Any = PydanticAIBinding  # history items and run states are both parsed by these
    binding_class.parse_item = binding_class.load_messages = staticmethod(load_messages)


# ---- the session driver


@dataclass
class Session:
    """One long session driven turn by turn through a sync Client; ``fresh``: each turn is the first of
    a new session instead (``start_flow`` with the prompt as the initial message)."""

    client: Any
    flow: Any
    session_id: str
    fresh: bool = False
    turns: int = 0
    sessions: int = 0

    def start(self) -> None:
        from dex_agents import AgentSessionStartInput

        if self.fresh:
            return
        self.client.start_flow(self.flow, self.session_id, AgentSessionStartInput(initial_message=None))
        time.sleep(0.1)

    def turn(self) -> float:
        from dex import StepExecutionId, WaitForStepCompletionOptions

        from dex_agents import AgentSessionStartInput, SendUserMessageInput

        if self.fresh:
            self.sessions += 1
            self.turns = 1
            session_id = f"{self.session_id}-{self.sessions}"
            started = time.perf_counter()
            self.client.start_flow(self.flow, session_id, AgentSessionStartInput(initial_message=PROMPT))
            self.client.wait_for_step_completion(session_id, StepExecutionId("RunModel", 2),
                                                 WaitForStepCompletionOptions(request_timeout=WAIT))
            elapsed = time.perf_counter() - started
            time.sleep(0.02)
            return elapsed
        self.turns += 1
        started = time.perf_counter()
        COUNTS.add("client RPCs")
        accepted = self.client.invoke_rpc(self.flow.send_user_message, self.session_id, SendUserMessageInput(text=PROMPT))
        self.client.wait_for_step_completion(self.session_id, StepExecutionId("RunModel", 2 * self.turns),
                                             WaitForStepCompletionOptions(request_timeout=WAIT))
        elapsed = time.perf_counter() - started
        if accepted is not True:
            raise RuntimeError(f"send_user_message answered {accepted!r}")
        time.sleep(0.02)  # untimed: the session parks in AwaitUserMessage, as between a user's turns
        return elapsed

    def check(self) -> None:
        COUNTS.add("client RPCs")
        session_id = f"{self.session_id}-{self.sessions}" if self.fresh else self.session_id
        snapshot = self.client.invoke_rpc(self.flow.get_agent_snapshot, session_id)
        state = snapshot.state
        if state is None or state.completed_turn_count != self.turns or state.failed_turn_count:
            raise RuntimeError(f"after {self.turns} turns the session's state is {state}")
        last = [message for message in snapshot.messages if message.role.value == "assistant"][-1]
        if last.text != FINAL_ANSWER:
            raise RuntimeError(f"the last answer is {last.text!r}")


def per_turn(deltas: Sequence[Counter[str]]) -> dict[str, float]:
    keys = sorted({key for delta in deltas for key in delta})
    return {key: sum(delta[key] for delta in deltas) / len(deltas) for key in keys}


def print_counts(early: Sequence[Counter[str]], late: Sequence[Counter[str]], late_from: int) -> None:
    first, last = per_turn(early), per_turn(late)
    width = max((len(key) for key in {*first, *last}), default=10)
    print(f"  {'per turn':<{width}}  turns 1-{len(early):<3}  turns {late_from}-{late_from + len(late) - 1}")
    for key in sorted({*first, *last}):
        print(f"  {key:<{width}}  {first.get(key, 0):>10.1f}  {last.get(key, 0):>10.1f}")


def run_counts(turns: int, fresh: bool) -> None:
    """The engine in this process, instrumented; one session of ``turns`` turns."""
    from dex_agents.engine import start_engine
    from dex_agents.testing import AgentTestEnvironment

    install_engine_counters()
    install_worker_counters()
    flow = build_flow()
    with start_engine() as engine, AgentTestEnvironment.start(server_address=engine.address, flows=[flow]) as env:
        session = Session(env.client, flow, "profile-counts", fresh=fresh)
        session.start()
        deltas: list[Counter[str]] = []
        for _ in range(turns):
            before = COUNTS.snapshot()
            session.turn()
            after = COUNTS.snapshot()
            after.subtract(before)
            deltas.append(+after)
        session.check()
    window = min(5, turns)
    what = f"{turns} fresh sessions, one turn each" if fresh else f"one session of {turns} turns"
    print(f"counts per turn (engine in this process, durability power-loss), {what}:")
    print_counts(deltas[:window], deltas[-window:], turns - window + 1)


def _package_of(filename: str) -> str:
    for marker, name in (("/dex_agents/engine/", "dex_agents.engine"), ("/dex_agents/pure/", "dex_agents.pure"),
                         ("/dex_agents/adapters/", "dex_agents.adapters"), ("/dex_agents/", "dex_agents.shell+"),
                         ("/site-packages/dex/", "dex (SDK)"), ("/site-packages/grpc", "grpc"),
                         ("/site-packages/pydantic_ai/", "pydantic_ai"), ("/site-packages/pydantic", "pydantic"),
                         ("/site-packages/pyrsistent", "pyrsistent"), ("/site-packages/returns", "returns"),
                         ("/site-packages/google/protobuf", "protobuf"), ("/lib/python3", "stdlib")):
        if marker in filename:
            return name
    return "other" if filename != "~" else "builtins"


def print_profile(profile: cProfile.Profile, turns: int, top: int) -> None:
    stats = pstats.Stats(profile)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_package: Counter[str] = Counter()
    for (filename, _line, _name), (_cc, _nc, tottime, _cum, _callers) in raw.items():
        by_package[_package_of(filename)] += tottime
    total = sum(by_package.values())
    print(f"  own time per turn by package (this process's profiled threads; {1000 * total / turns:.2f} ms in all):")
    for package, seconds in by_package.most_common():
        print(f"    {package:<22} {1000 * seconds / turns:7.2f} ms")
    print(f"  top {top} functions by own time per turn:")
    ranked = sorted(raw.items(), key=lambda item: item[1][2], reverse=True)[:top]
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in ranked:
        short = "/".join(filename.split("/")[-2:])
        print(f"    {1000 * tottime / turns:6.3f} ms  {calls / turns:7.1f} calls  cum {1000 * cumtime / turns:6.2f} ms  "
              f"{short}:{line} {name}")


@contextlib.contextmanager
def _warm_session(name: str, fresh: bool) -> Iterator[tuple[Path, EngineProcess, AgentTestEnvironment, Session]]:
    """An engine child (power-loss) in a temporary state directory, a test environment on it, and a
    session ``name`` that ran ``WARM_UP_TURNS`` turns; the engine is stopped and the directory removed
    on exit."""
    from dex_agents.engine import EngineProcess
    from dex_agents.testing import AgentTestEnvironment

    flow = build_flow()
    state = Path(tempfile.mkdtemp(prefix="dex-agents-turn-profile-"))
    engine = EngineProcess.start(state / "engine.sqlite3")
    try:
        with AgentTestEnvironment.start(server_address=engine.address, flows=[flow]) as env:
            session = Session(env.client, flow, name, fresh=fresh)
            session.start()
            for _ in range(WARM_UP_TURNS):
                session.turn()
            yield state, engine, env, session
    finally:
        engine.stop()
        shutil.rmtree(state, ignore_errors=True)


def run_cpu(turns: int, top: int, use_strace: bool, fresh: bool) -> None:
    """The engine in a child process; cProfile of this process's threads over ``turns`` turns."""
    from benchmarks.engine_roundtrip import cpu_seconds

    tracer: subprocess.Popen[bytes] | None = None
    with _warm_session("profile-cpu", fresh) as (state, engine, env, session):
        try:
            if use_strace:
                trace = state / "strace.txt"
                tracer = subprocess.Popen(["strace", "-f", "-c", "-o", str(trace), "-p", str(engine.pid)],
                                          stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            profile = cProfile.Profile()
            loop = env._loop
            assert loop is not None
            profiles = [profile, cProfile.Profile()]
            loop.call(_enable(profiles[1]), timeout=10)
            machine = MachineSample.now()
            engine_cpu, own_cpu = cpu_seconds(engine.pid), time.process_time()
            elapsed: list[float] = []
            profile.enable()
            for _ in range(turns):
                elapsed.append(session.turn())
            profile.disable()
            engine_used = (cpu_seconds(engine.pid) or 0.0) - (engine_cpu or 0.0)
            own_used = time.process_time() - own_cpu
            line = machine_line(machine, MachineSample.now())
            loop.call(_disable(profiles[1]), timeout=10)
            if tracer is not None:
                tracer.send_signal(2)
                tracer.wait(timeout=30)
            session.check()
        finally:
            if tracer is not None and tracer.poll() is None:
                tracer.kill()
        elapsed.sort()
        print(f"CPU profile over turns {WARM_UP_TURNS + 1}-{WARM_UP_TURNS + turns} of one session (engine child, power-loss); {line}")
        print(f"  turn p50 {1000 * elapsed[len(elapsed) // 2]:.2f} ms; CPU per turn: engine {1000 * engine_used / turns:.2f} ms,"
              f" this process (Worker + Client, profiled) {1000 * own_used / turns:.2f} ms")
        print("  Client thread:")
        print_profile(profiles[0], turns, top)
        print("  Worker event loop thread:")
        print_profile(profiles[1], turns, top)
        if use_strace:
            print(f"  engine child syscalls over the turns (strace -f -c; divide by {turns}):")
            print("\n".join("    " + row for row in (state / "strace.txt").read_text().splitlines()[:25]))


def run_sampled(turns: int, top: int, py_spy: str, fresh: bool) -> None:
    """The engine in a child process; ``py-spy`` samples both processes (on-CPU stacks) over ``turns``
    turns: own time by package and the top functions, per process."""
    samplers: list[subprocess.Popen[bytes]] = []
    with _warm_session("profile-sampled", fresh) as (state, engine, _env, session):
        try:
            outputs = {"engine": state / "engine.txt", "worker+client": state / "local.txt"}
            for pid, output in ((engine.pid, outputs["engine"]), (os.getpid(), outputs["worker+client"])):
                samplers.append(subprocess.Popen(
                    [py_spy, "record", "--pid", str(pid), "--rate", "500", "--format", "raw", "--nonblocking",
                     "--gil", "--full-filenames", "--output", str(output)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(1.5)
            machine = MachineSample.now()
            for _ in range(turns):
                session.turn()
            line = machine_line(machine, MachineSample.now())
            for sampler in samplers:
                sampler.send_signal(2)
            for sampler in samplers:
                sampler.wait(timeout=60)
        finally:
            for sampler in samplers:
                if sampler.poll() is None:
                    sampler.kill()
        what = "fresh sessions" if fresh else "one session"
        print(f"py-spy samples (500 Hz, the thread holding the GIL only) over {turns} turns of {what}; {line}")
        for name, output in outputs.items():
            print_collapsed(name, output, turns, top)


def print_collapsed(name: str, output: Path, turns: int, top: int) -> None:
    """Own samples by package and by function from py-spy's collapsed stacks (each line: frames, count)."""
    by_package: Counter[str] = Counter()
    by_function: Counter[str] = Counter()
    total = 0
    for row in output.read_text().splitlines():
        stack, _, count_text = row.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        leaf = stack.rsplit(";", 1)[-1]
        total += count
        function, _, where = leaf.partition(" (")
        path = where.rsplit(":", 1)[0]
        by_package[_package_of(path)] += count
        by_function[f"{function} ({'/'.join(path.split('/')[-2:])})"] += count
    milliseconds = 2.0 / turns  # 500 Hz: each sample stands for 2 ms of CPU
    print(f"  {name}: {total * milliseconds:.2f} ms per turn with the GIL held; own time by package:")
    for package, count in by_package.most_common(14):
        print(f"    {package:<22} {count * milliseconds:7.2f} ms")
    print(f"  {name}: top {top} functions by own time per turn:")
    for function, count in by_function.most_common(top):
        print(f"    {count * milliseconds:6.3f} ms  {function}")


async def _enable(profile: cProfile.Profile) -> None:
    profile.enable()


async def _disable(profile: cProfile.Profile) -> None:
    profile.disable()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns of the session (default 50)")
    parser.add_argument("--cpu", action="store_true", help="also profile CPU with the engine in a child process")
    parser.add_argument("--strace", action="store_true", help="with --cpu: count the engine child's syscalls")
    parser.add_argument("--top", type=int, default=25, help="functions listed per thread (default 25)")
    parser.add_argument("--fresh", action="store_true", help="each turn is the first turn of a new session")
    parser.add_argument("--py-spy", default=None, metavar="PATH",
                        help="sample both processes with this py-spy binary instead of counting")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs; load at start "
          f"{' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    if args.py_spy:
        run_sampled(args.turns, args.top, args.py_spy, args.fresh)
        return
    run_counts(args.turns, args.fresh)
    if args.cpu:
        run_cpu(args.turns, args.top, args.strace, args.fresh)


if __name__ == "__main__":
    main()
