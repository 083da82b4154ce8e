"""The durable overhead of one agent turn: the same turn through the session Flow and called directly.

Run: ``python -m benchmarks.turn_overhead`` (``--quick`` for a smoke run). Prints figures, never
asserts on them.

The turn: a user message -> the model asks for one ``lookup_order`` call -> the tool runs -> the model
answers. The model is ``ScriptedAgentRunner`` (no network, microseconds per call) and the tool an
async function returning a short string, so the runner's own time is close to zero and the figure is
what durability adds: ``lookup_order`` has the policy ``ToolPolicy(effect=ToolEffect.READ)``, so it
runs in ``CallTool`` without approval.

Two ways to run it, turn by turn interleaved in one process run:
    * durable: through the session Flow, as production runs it. The local engine is a child process
      (``EngineProcess``, a process boundary), at each durability level in turn: ``power-loss`` (every
      commit fsync'd, SQLite ``synchronous=FULL``, the default) and ``process-crash`` (no fsync),
      this process holds the session Worker (``session_worker``: an ``AsyncWorker`` on its own event
      loop thread) and a sync ``dex.Client``. A turn is timed from
      ``client.invoke_rpc(flow.send_user_message, ...)`` until the turn is committed.
    * direct: the same runner methods with no durability, in the same order and with the same
      inputs a session would give them (``build_user_message``, ``run_model_step``,
      ``execute_deferred_tool_call``, ``run_model_step`` resumed with the tool's result), on the
      Worker's event loop thread, with a no-op event writer. Timed inside the event loop.

overhead = durable - direct, per turn (the direct turn of the same turn number runs just before the
durable one, with the same message history).

When the turn's durable work is done: when the turn's final ``RunModel`` execution has committed its
result. That one commit writes the ``AgentState`` with one more completed turn, the turn's messages,
the usage, and the move to ``AwaitUserMessage``. The benchmark waits for exactly that with
``client.wait_for_step_completion(session, StepExecutionId("RunModel", 2 * k), ...)``, Dex's long poll
for a Step execution whose ``execute`` committed a decision: turn ``k`` of a session started without
a message runs ``RunModel`` executions ``2k - 1`` (asks for the tool) and ``2k`` (answers). The long
poll is woken by the commit itself, so detection costs one response on the loopback and no polling
interval; an event set by the runner would fire before the commit, and polling
``get_agent_snapshot`` would add its interval and build the whole message history each time.

Between turns (untimed), the session settles as it would before a user's next message: the
benchmark pauses 10 ms, then reads the Flow history (incrementally, from the last event read) until
the next ``AwaitUserMessage``'s ``wait_for`` has returned, so no turn starts while the previous one's
tail still runs. The same history gives the Step executions of each turn (``execute`` completions by
Step type). At the end of each scenario one ``get_agent_snapshot`` per session confirms the
committed ``AgentState``: every turn completed, none failed, four messages per turn.

Scenarios (after a warm-up of both paths):
    (a) sequential turns on ONE session. ``RunModel`` sees every stored message (loading only the
        turn's new ones: the Worker keeps the rest), so a growth with the session shows here; the ratio reported is the overhead around turn 50
        (median of turns 46-55) over the overhead of a first turn (median of scenario (b)'s first
        turns), with the single samples of turns 1 and 50 printed too.
    (b) one turn on each of N fresh sessions (``start_flow`` with no initial message, settle, then
        ``send_user_message``).

Targets printed next to the figures: overhead p50 <= 4 ms at ``power-loss`` and <= 3.5 ms at
``process-crash``; turn-50 / turn-1 overhead ratio <= 1.5x. Other processes on the machine skew every wall-clock
figure, so the load average is printed too, as is the CPU the engine process and this process (the
Worker and the Client) spend per turn, from the send until the session is idle again (this includes
the few history reads of the settle step, not the direct turn).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, TypeVar

import dex
import grpc
from dex import AsyncWorker, Client, ClientOptions, StepExecutionId, WaitForStepCompletionOptions, WorkerTarget
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from benchmarks.engine_roundtrip import cpu_seconds, load_average, percentile
from dex_agents.engine.durability import Durability
from dex_agents.engine.launch import EngineProcess
from dex_agents.pure.machine.keys import idempotency_key, turn_id_for
from dex_agents.pure.values.persistence import RpcName, StepType
from dex_agents.pure.values.rpc import SendUserMessageInput
from dex_agents.pure.values.runner import ToolCallsRequested, ToolPolicy, TurnCompleted
from dex_agents.pure.values.session import (
    AgentMessage,
    AgentSessionStartInput,
    AgentToolCall,
    FrameworkMessage,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import AgentTurnContext, DeferredToolExecution
from dex_agents.shell.worker import DEFAULT_MAX_CONCURRENT_TASKS, session_registry, session_worker
from dex_agents.testing.scripted_runner import ScriptedAgentRunner, ScriptedModelCall, ScriptedToolCall
from dex_agents.testing.step_history import EXECUTE_COMPLETED, WAIT_FOR_COMPLETED, history_entry

T = TypeVar("T")

TOOL_NAME: Final = "lookup_order"
FLOW_TYPE: Final = "TurnOverheadBench"
OVERHEAD_TARGET_MS: Final = {Durability.POWER_LOSS: 4.0, Durability.PROCESS_CRASH: 3.5}
RATIO_TARGET: Final = 1.5
RATIO_TURN: Final = 50
WAIT_TIMEOUT: Final = timedelta(seconds=30)
CALL_TIMEOUT_SECONDS: Final = 60.0
TURNS_PER_SESSION_LIMIT: Final = 10_000
SETTLE_SECONDS: Final = 0.01
"""Pause after a turn before looking whether the session is idle (a user's next message comes later)."""
SETTLE_POLL_SECONDS: Final = 0.002
MESSAGES_PER_TURN: Final = 4
"""The user message, the tool request, the tool result and the answer."""


def question(number: int) -> str:
    """The user message of the ``number``-th scripted question (each has its own tool call ID)."""
    return f"Where is order {number}?"


async def lookup_order(call: DeferredToolExecution) -> str:
    """The read tool: a short string from the call's arguments."""
    order = json.loads(call.tool_call.arguments)["id"]
    return f"order {order} ships today"


def build_runner(questions: int) -> ScriptedAgentRunner:
    """A runner scripted for questions ``0 .. questions - 1``: one tool call, then a text answer."""
    script = {
        question(number): (
            ScriptedModelCall(tool_calls=(ScriptedToolCall(
                tool_call_id=f"lookup-{number}", tool_name=TOOL_NAME, arguments=json.dumps({"id": number})),)),
            ScriptedModelCall(text=f"Order {number} ships today."),
        )
        for number in range(questions)
    }
    return ScriptedAgentRunner(script=script, tools={TOOL_NAME: lookup_order})


# ---- the direct path


class NoEventWriter:
    """An ``AgentEventWriter`` that drops every event (the direct path has no Stream)."""

    def __init__(self, turn_id: str) -> None:
        self._turn_id = turn_id

    @property
    def turn_id(self) -> str | None:
        return self._turn_id

    @property
    def attempt(self) -> int:
        return 1

    def write_text_delta(self, text: str) -> None:
        pass

    def write_reasoning_delta(self, text: str) -> None:
        pass

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None:
        pass

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: ToolCallStatus) -> None:
        pass

    def write_event(self, event_type: str, payload: Mapping[str, object]) -> None:
        pass


def _never_cancelled() -> bool:
    return False


async def _no_heartbeat() -> None:
    return None


def _stored(message: FrameworkMessage, sequence: int, turn_id: str) -> AgentMessage:
    return AgentMessage(
        sequence=sequence, turn_id=turn_id, role=message.role, text=message.text, tool_call_id=message.tool_call_id,
        tool_name=message.tool_name, tool_arguments=message.tool_arguments, tool_output=message.tool_output,
        framework_item=message.framework_item,
    )


@dataclass
class DirectSession:
    """One session's message history on the direct path, kept as the Flow would store it."""

    flow_id: str
    messages: list[AgentMessage] = field(default_factory=list)
    turns: int = 0


async def direct_turn(flow: AgentSessionFlow, runner: ScriptedAgentRunner, session: DirectSession, text: str) -> float:
    """Run one turn through the runner with no durability; its duration in seconds (timed in the loop)."""
    started = time.perf_counter()
    turn_id = turn_id_for(session.turns + 1)
    writer = NoEventWriter(turn_id)
    deadline = datetime.now(UTC) + timedelta(minutes=5)
    user = _stored(runner.build_user_message(text), len(session.messages) + 1, turn_id)
    messages = (*session.messages, user)

    def context(run_state: str | None, records: Sequence[AgentToolCall]) -> AgentTurnContext:
        return AgentTurnContext(
            flow_id=session.flow_id, turn_id=turn_id, attempt=1, messages=messages, framework_run_state=run_state,
            tool_calls=tuple(records), events=writer, deadline=deadline,
            resolve_tool_policy=flow.runtime.config.resolve_tool_policy,
            is_cancellation_requested=_never_cancelled, heartbeat=_no_heartbeat,
        )

    asked = await runner.run_model_step(context(None, ()))
    if not isinstance(asked, ToolCallsRequested):
        raise RuntimeError(f"direct turn {turn_id}: the first model call returned {type(asked).__name__}")
    records = []
    for order, call in enumerate(asked.tool_calls, start=1):
        record = AgentToolCall(
            tool_call_id=call.tool_call_id, turn_id=turn_id, tool_name=call.tool_name, arguments=call.arguments,
            effect=call.policy.effect, requires_approval=call.policy.requires_approval, deferral_order=order,
            idempotency_key=idempotency_key(session.flow_id, turn_id, call.tool_call_id),
            status=ToolCallStatus.PENDING, interrupt_id=None, output=None, error=None, rejection_message=None,
        )
        result = await runner.execute_deferred_tool_call(DeferredToolExecution(
            flow_id=session.flow_id, tool_call=record, idempotency_key=record.idempotency_key, attempt=1,
            events=writer, deadline=deadline, is_cancellation_requested=_never_cancelled, heartbeat=_no_heartbeat,
        ))
        records.append(replace(record, status=ToolCallStatus.SUCCEEDED, output=result.output))
    answered = await runner.run_model_step(context(asked.framework_run_state, records))
    if not isinstance(answered, TurnCompleted):
        raise RuntimeError(f"direct turn {turn_id}: the resumed model call returned {type(answered).__name__}")
    stored = [_stored(m, len(messages) + offset, turn_id) for offset, m in enumerate(answered.new_messages, start=1)]
    session.messages = [*messages, *stored]
    session.turns += 1
    return time.perf_counter() - started


# ---- the durable path


@dataclass(frozen=True)
class LoopThread:
    """An event loop serving from its own thread (the AsyncWorker lives on it)."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread

    @classmethod
    def start(cls) -> LoopThread:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="turn-overhead-loop", daemon=True)
        thread.start()
        return cls(loop, thread)

    def run(self, coroutine: Coroutine[object, object, T], timeout: float = CALL_TIMEOUT_SECONDS) -> T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        """Cancel what still runs on the loop, stop it, join the thread and close the loop."""
        async def cancel_rest() -> None:
            current = asyncio.current_task()
            rest = [task for task in asyncio.all_tasks() if task is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.run(cancel_rest(), timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


@dataclass
class DurableSession:
    """One session on the durable path, with a cursor over its Flow history.

    Attributes:
        session_id: The Flow ID.
        turns: Turns sent so far.
        next_event_id: The first history event not read yet.
        parked: ``AwaitUserMessage`` executions whose ``wait_for`` returned (the session waits for a message).
        steps: Per turn, the Step ``execute`` completions by Step type (read while the session settles).
    """

    session_id: str
    turns: int = 0
    next_event_id: int = 0
    parked: int = 0
    steps: list[Counter[str]] = field(default_factory=list)


@dataclass(frozen=True)
class Durable:
    """The session Flow served by a Worker in this process, reached with a sync Client (and the raw
    FlowService stub for the Flow history)."""

    client: Client
    flow: AgentSessionFlow
    history: dex_pb2_grpc.FlowServiceStub

    def start_session(self, session_id: str) -> DurableSession:
        """Start a session with no initial message and wait until it waits for one."""
        self.client.start_flow(self.flow, session_id, AgentSessionStartInput(initial_message=None))
        session = DurableSession(session_id=session_id)
        self.settle(session)
        return session

    def turn(self, session: DurableSession, text: str) -> float:
        """Send ``text`` as the session's next turn and wait until the turn is committed; seconds taken."""
        turn_number = session.turns + 1
        started = time.perf_counter()
        accepted = self.client.invoke_rpc(self.flow.send_user_message, session.session_id, SendUserMessageInput(text=text))
        self.client.wait_for_step_completion(
            session.session_id, StepExecutionId(StepType.RUN_MODEL.value, 2 * turn_number),
            WaitForStepCompletionOptions(request_timeout=WAIT_TIMEOUT),
        )
        elapsed = time.perf_counter() - started
        if accepted is not True:
            raise RuntimeError(f"{session.session_id}: send_user_message answered {accepted!r}")
        session.turns = turn_number
        session.steps.append(Counter())
        return elapsed

    def settle(self, session: DurableSession) -> None:
        """Wait until the session is idle again: ``AwaitUserMessage``'s ``wait_for`` of the next turn
        returned, so the next message finds the session as a user's would (untimed)."""
        time.sleep(SETTLE_SECONDS)
        deadline = time.monotonic() + WAIT_TIMEOUT.total_seconds()
        while True:
            self._read_history(session)
            if session.parked > session.turns:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{session.session_id} did not wait for a message again after turn {session.turns}")
            time.sleep(SETTLE_POLL_SECONDS)

    def _read_history(self, session: DurableSession) -> None:
        while True:
            request = pb.GetHistoryEventsRequest(flow_id=session.session_id, start_internal_event_id=session.next_event_id)
            response = self.history.GetHistoryEvents(request, timeout=CALL_TIMEOUT_SECONDS)
            for event in response.events:
                entry = history_entry(event)
                session.next_event_id = max(session.next_event_id, event.event_id + 1)
                if entry.event_type == WAIT_FOR_COMPLETED and entry.step_type == StepType.AWAIT_USER_MESSAGE.value:
                    session.parked += 1
                elif entry.event_type == EXECUTE_COMPLETED and session.steps:
                    session.steps[-1][entry.step_type] += 1
            if not response.next_page_token:
                return

    def confirm(self, session: DurableSession) -> None:
        """Check the committed AgentState (every turn completed, none failed, four messages each) and
        that every turn ran the same Steps."""
        snapshot = self.client.invoke_rpc(self.flow.get_agent_snapshot, session.session_id)
        state = snapshot.state
        if (state is None or state.completed_turn_count != session.turns or state.failed_turn_count
                or state.message_count != MESSAGES_PER_TURN * session.turns):
            raise RuntimeError(f"{session.session_id}: after {session.turns} turn(s) the session's state is {state}")
        if any(counts != session.steps[0] for counts in session.steps):
            raise RuntimeError(f"{session.session_id}: the turns ran different Steps: {session.steps}")


@dataclass
class Samples:
    """Per-turn durable and direct durations (seconds) in turn order, CPU per turn, Steps per turn."""

    durable: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)
    engine_cpu: float | None = 0.0
    local_cpu: float | None = 0.0
    steps: Counter[str] = field(default_factory=Counter)

    @property
    def overhead(self) -> list[float]:
        return [d - r for d, r in zip(self.durable, self.direct, strict=True)]

    def add_cpu(self, before: CpuSample, after: CpuSample) -> None:
        self.engine_cpu = _cpu_sum(self.engine_cpu, before[0], after[0])
        self.local_cpu = _cpu_sum(self.local_cpu, before[1], after[1])


CpuSample = tuple[float | None, float | None]


def _cpu_sum(total: float | None, start: float | None, end: float | None) -> float | None:
    return None if total is None or start is None or end is None else total + end - start


@dataclass
class Questions:
    """Hands out the scripted questions in order (each turn gets its own question and tool call ID)."""

    limit: int
    used: int = 0

    def next(self) -> str:
        if self.used >= self.limit:
            raise RuntimeError(f"only {self.limit} questions are scripted")
        self.used += 1
        return question(self.used - 1)


@dataclass(frozen=True)
class Bench:
    """Everything a scenario needs: both paths, the loop, the questions and the CPU meters."""

    durable: Durable
    runner: ScriptedAgentRunner
    loop: LoopThread
    questions: Questions
    engine_pid: int

    def paired_turn(self, session: DurableSession, direct: DirectSession, samples: Samples) -> None:
        """One direct turn, then the same turn (same number, same history length) through the Flow, then
        the wait until the session is idle. CPU is counted from the send until the session is idle."""
        text = self.questions.next()
        samples.direct.append(self.loop.run(direct_turn(self.durable.flow, self.runner, direct, text)))
        before = self.cpu()
        samples.durable.append(self.durable.turn(session, text))
        self.durable.settle(session)
        samples.add_cpu(before, self.cpu())

    def sequential(self, session_id: str, turns: int) -> Samples:
        """Scenario (a): ``turns`` turns on one new session."""
        samples = Samples()
        session = self.durable.start_session(session_id)
        direct = DirectSession(flow_id=session_id)
        for _ in range(turns):
            self.paired_turn(session, direct, samples)
        self.durable.confirm(session)
        samples.steps = session.steps[0]
        return samples

    def fresh(self, prefix: str, sessions: int) -> Samples:
        """Scenario (b): one turn on each of ``sessions`` new sessions."""
        samples = Samples()
        for index in range(sessions):
            session = self.durable.start_session(f"{prefix}-{index}")
            self.paired_turn(session, DirectSession(flow_id=session.session_id), samples)
            self.durable.confirm(session)
            if samples.steps and samples.steps != session.steps[0]:
                raise RuntimeError(f"{session.session_id} ran other Steps than the first session: {session.steps[0]}")
            samples.steps = session.steps[0]
        return samples

    def cpu(self) -> CpuSample:
        return cpu_seconds(self.engine_pid), cpu_seconds(os.getpid())


# ---- reporting


def ms_line(name: str, samples_s: Sequence[float], note: str = "") -> str:
    if not samples_s:
        return f"{name}: no samples"
    ms = [s * 1000 for s in samples_s]
    line = (f"{name:<9} n={len(ms)} p50={percentile(ms, 0.5):7.2f} ms  p99={percentile(ms, 0.99):7.2f} ms  "
            f"mean={statistics.fmean(ms):7.2f} ms")
    return f"{line}   {note}" if note else line


def cpu_line(samples: Samples) -> str:
    turns = len(samples.durable)
    parts = [f"{name} {1000 * total / turns:.2f} ms"
             for name, total in (("engine", samples.engine_cpu), ("worker+client", samples.local_cpu))
             if total is not None and turns > 0]
    return ("CPU per turn, from the send until the session is idle: " + (", ".join(parts) if parts else "unavailable"))


def steps_line(samples: Samples) -> str:
    total = sum(samples.steps.values())
    by_type = ", ".join(f"{step_type} {count}" for step_type, count in sorted(samples.steps.items()))
    return f"Step executions per turn: {total} ({by_type}) + 1 RPC ({RpcName.SEND_USER_MESSAGE.value})"


def report(title: str, samples: Samples, durability: Durability) -> None:
    print(title)
    print("  " + ms_line("durable:", samples.durable))
    print("  " + ms_line("direct:", samples.direct))
    note = f"target: overhead p50 <= {OVERHEAD_TARGET_MS[durability]:g} ms at {durability.value} durability"
    print("  " + ms_line("overhead:", samples.overhead, note))
    print("  " + cpu_line(samples))
    print("  " + steps_line(samples))


def ratio_lines(sequential: Samples, first_turns: Samples) -> list[str]:
    """The overhead around turn 50 (or the last turn) of (a) against the first turns of (b)."""
    overhead_a, overhead_b = sequential.overhead, first_turns.overhead
    if not overhead_a or not overhead_b:
        return ["overhead ratio: no samples"]
    late = min(RATIO_TURN, len(overhead_a))
    low, high = max(0, late - 5), min(len(overhead_a), late + 5)
    window = overhead_a[low:high]
    late_ms, first_ms = statistics.median(window) * 1000, statistics.median(overhead_b) * 1000
    ratio = f"{late_ms / first_ms:.2f}x" if first_ms > 0 else "n/a"
    return [
        f"overhead of turn 1 (single sample of (a)): {overhead_a[0] * 1000:.2f} ms; "
        f"of turn {late}: {overhead_a[late - 1] * 1000:.2f} ms",
        f"overhead ratio turn {late} / turn 1: {ratio} (median of turns {low + 1}-{high} of (a), {late_ms:.2f} ms, "
        f"over the median first turn of (b), {first_ms:.2f} ms)   target: <= {RATIO_TARGET:g}x",
    ]


# ---- setup


@dataclass(frozen=True)
class Settings:
    turns: int
    sessions: int
    warmup_turns: int
    warmup_sessions: int
    durabilities: tuple[Durability, ...]


def parse(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0] or None)
    parser.add_argument("--turns", type=int, default=None, help="sequential turns on one session (default 60)")
    parser.add_argument("--sessions", type=int, default=None, help="fresh sessions, one turn each (default 40)")
    parser.add_argument("--durability", choices=[*(level.value for level in Durability), "both"], default="both",
                        help="the engine's durability level (default both: power-loss, then process-crash)")
    parser.add_argument("--quick", action="store_true", help="a few iterations only (a smoke run)")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    turns: int = args.turns if args.turns is not None else (3 if quick else 60)
    sessions: int = args.sessions if args.sessions is not None else (3 if quick else 40)
    if not 1 <= turns <= TURNS_PER_SESSION_LIMIT or sessions < 1:
        parser.error(f"--turns must be 1..{TURNS_PER_SESSION_LIMIT} and --sessions at least 1")
    durabilities = tuple(Durability) if args.durability == "both" else (Durability(args.durability),)
    return Settings(turns=turns, sessions=sessions, warmup_turns=2 if quick else 10, warmup_sessions=1 if quick else 5,
                    durabilities=durabilities)


def start_session_worker(loop: LoopThread, stack: contextlib.ExitStack, flow: AgentSessionFlow, cache: dex.BlobCache,
                         address: str, *, max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS) -> AsyncWorker:
    """The session Worker, built on the loop's thread (its grpc.aio channel binds to that loop),
    registered before this returns and stopped by ``stack``."""
    registry = session_registry([flow])

    async def build() -> AsyncWorker:
        return session_worker(registry, cache, address, max_concurrent_tasks=max_concurrent_tasks)

    worker = loop.run(build())
    serving = asyncio.run_coroutine_threadsafe(worker.start(), loop.loop)

    def shut_down() -> None:
        try:
            loop.run(worker.stop())
            with contextlib.suppress(Exception):
                serving.result(timeout=CALL_TIMEOUT_SECONDS)
        finally:
            loop.run(worker.close())

    stack.callback(shut_down)
    loop.run(worker.wait_pull_registered(CALL_TIMEOUT_SECONDS))
    return worker


def run_at(settings: Settings, durability: Durability) -> None:
    """Start an engine child at ``durability``, a session Worker and a Client; run both scenarios; print."""
    questions = (settings.warmup_turns + settings.warmup_sessions + settings.turns + settings.sessions)
    runner = build_runner(questions)
    flow = create_agent_session_flow(runner, FLOW_TYPE, tool_policies={TOOL_NAME: ToolPolicy(effect=ToolEffect.READ)})
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dex-agents-turn-bench-")))
        engine = EngineProcess.start(root / "engine.sqlite3", port=0, durability=durability)
        stack.callback(engine.stop)
        cache = dex.open_blob_cache(dex.BlobCacheConfig(str(root / "blobs"), 64 << 20))
        stack.callback(cache.close)
        loop = LoopThread.start()
        stack.callback(loop.close)
        worker = start_session_worker(loop, stack, flow, cache, engine.address)
        client = Client(session_registry([flow]), cache,
                        ClientOptions(server_address=engine.address, worker_target=WorkerTarget(pull=True)))
        stack.callback(client.close)
        channel = grpc.insecure_channel(engine.address)
        stack.callback(channel.close)
        history = dex_pb2_grpc.FlowServiceStub(channel)
        bench = Bench(Durable(client, flow, history), runner, loop, Questions(questions), engine.pid)

        print(f"durability: {durability.description}; engine in a child process; session Worker "
              f"({type(worker).__name__}, pull, {DEFAULT_MAX_CONCURRENT_TASKS} task slots) and Client in this process")
        bench.sequential("warmup-turns", settings.warmup_turns)
        bench.fresh("warmup-fresh", settings.warmup_sessions)

        sequential = bench.sequential("turns", settings.turns)
        report(f"(a) {settings.turns} sequential turns on one session", sequential, durability)
        first_turns = bench.fresh("fresh", settings.sessions)
        report(f"(b) one turn on each of {settings.sessions} fresh sessions", first_turns, durability)
        for line in ratio_lines(sequential, first_turns):
            print(line)


def main(argv: Sequence[str] | None = None) -> None:
    """Run both scenarios at each requested durability level, each against its own engine child."""
    settings = parse(argv)
    print("dex-agents turn overhead: user message -> model asks for lookup_order (read) -> tool runs -> "
          "model answers")
    print(f"Python {platform.python_version()}; CPUs: {os.cpu_count()}; load average at start: {load_average()}")
    for durability in settings.durabilities:
        run_at(settings, durability)
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
