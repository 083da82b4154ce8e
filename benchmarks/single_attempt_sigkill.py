"""A single-attempt tool that SIGKILLs its own Worker as its very first instruction, over many sessions:
how often does the tool run a second time? (Issue 25's "Done when"; the README shows the result.)

Run: ``python -m benchmarks.single_attempt_sigkill`` (``--sessions 200 --lanes 4``; ``--quick`` for a
smoke run; ``--no-confirm`` runs the Worker children without the start confirmation of
``shell.start_confirmation``, as before issue 25, to show the window it closes). Prints figures, never
asserts on them.

The local engine runs as a child process (fsync per commit). Each lane has a Flow type of its own and
one Worker child at a time (``dex-agents worker``, as production runs it). A round: start a session
whose model asks at once for ``self_kill`` (``non_idempotent_write``, no approval: ``CallSingleAttemptTool``);
the scripted runner logs the run (a line appended to a file shared across processes) and calls the
tool, whose first instruction is ``os.kill(os.getpid(), SIGKILL)``. The round reaps the dead Worker,
starts the next one, and waits until the session's turn ended. A tool that ran again (Dex
re-delivered the attempt) shows as a second log line for the call's idempotency key, and kills the
new Worker too (the round then starts another). Expected with the confirmation: every call recorded
``outcome_unknown``, 0 second runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from dex_agents.client import SessionClient
from dex_agents.engine import start_engine
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolCallStatus, ToolEffect
from dex_agents.serving import WorkerProcess, WorkerStartError
from dex_agents.shell import DeferredToolExecution
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.testing import InvocationLog, ScriptedAgentRunner, ScriptedModelCall, ScriptedToolCall

STATE_ENV: Final = "DEX_AGENTS_SIGKILL_STATE"
FLOW_TYPE_ENV: Final = "DEX_AGENTS_SIGKILL_FLOW_TYPE"
NO_CONFIRM_ENV: Final = "DEX_AGENTS_SIGKILL_NO_CONFIRM"
MESSAGE: Final = "Refund order 42 and crash"
CALL_ID: Final = "call-self-kill"
LOG_NAME: Final = "tool-runs"
ROUND_TIMEOUT: Final = 120.0
REPOSITORY: Final = Path(__file__).resolve().parent.parent


async def _self_kill(_call: DeferredToolExecution) -> str:
    os.kill(os.getpid(), signal.SIGKILL)  # the tool's very first instruction
    raise AssertionError("unreachable: the process was sent SIGKILL")


def worker_flow() -> AgentSessionFlow:
    """The Flow a Worker child serves (``--agent benchmarks.single_attempt_sigkill:worker_flow``)."""
    state = Path(os.environ[STATE_ENV])
    if os.environ.get(NO_CONFIRM_ENV) == "1":
        from dex_agents.shell import requests

        async def trust(*_arguments: object, **_options: object) -> None:
            return None

        setattr(requests, "confirm_start", trust)  # noqa: B010  # as before issue 25: written, not confirmed
    script = {MESSAGE: (ScriptedModelCall(tool_calls=(ScriptedToolCall(tool_call_id=CALL_ID, tool_name="self_kill",
                                                                       arguments="{}"),)),
                        ScriptedModelCall(text="The refund may or may not have happened."))}
    runner = ScriptedAgentRunner(script=script, tools={"self_kill": _self_kill}, gate_directory=state,
                                 invocation_log=InvocationLog(state, LOG_NAME))
    return create_agent_session_flow(runner, os.environ[FLOW_TYPE_ENV], tool_policies={
        "self_kill": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)})


@dataclass(slots=True)
class Results:
    sessions: int = 0
    second_runs: int = 0
    outcome_unknown: int = 0
    other_status: list[str] = field(default_factory=list)
    round_seconds: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _start_worker(address: str, state: Path, flow_type: str, no_confirm: bool) -> WorkerProcess:
    """A ready Worker child; one that a re-run tool killed before it was ready is replaced."""
    # TMPDIR: a killed Worker cannot remove its scratch directory; it goes under the run's own directory
    environment = {STATE_ENV: str(state), FLOW_TYPE_ENV: flow_type, NO_CONFIRM_ENV: "1" if no_confirm else "0",
                   "TMPDIR": str(state)}
    for _ in range(5):
        try:
            return WorkerProcess.start(["-m", "dex_agents.cli", "worker", "--agent",
                                        "benchmarks.single_attempt_sigkill:worker_flow", "--server", address],
                                       log_path=state / f"{flow_type}.worker.log", environment=environment,
                                       working_directory=REPOSITORY)
        except WorkerStartError as error:
            if "status -9" not in str(error):
                raise
    raise RuntimeError("five Worker children in a row were killed before they were ready")


def _wait_for_exit(worker: WorkerProcess) -> None:
    give_up = time.monotonic() + ROUND_TIMEOUT
    while worker.returncode is None:
        if time.monotonic() > give_up:
            raise TimeoutError(f"the Worker {worker.pid} did not die within {ROUND_TIMEOUT:g} s")
        time.sleep(0.005)


def _lane(address: str, state: Path, rounds: int, no_confirm: bool, results: Results) -> None:
    flow_type = f"SelfKill-{uuid.uuid4().hex[:8]}"
    log = InvocationLog(state, LOG_NAME)
    worker = _start_worker(address, state, flow_type, no_confirm)
    try:
        with SessionClient.connect(address, flow_type, timeout=ROUND_TIMEOUT, poll_interval=0.01) as sessions:
            for _ in range(rounds):
                began = time.monotonic()
                session_id = f"sigkill-{uuid.uuid4().hex[:12]}"
                key = f"self_kill:{session_id}/turn-1/{CALL_ID}"
                sessions.start(session_id, MESSAGE)
                while True:  # each tool run kills the Worker serving it; start the next until the turn ends
                    _wait_for_exit(worker)
                    worker.kill()
                    worker = _start_worker(address, state, flow_type, no_confirm)
                    give_up = time.monotonic() + ROUND_TIMEOUT
                    while True:
                        state_now = sessions.state(session_id)
                        ended = state_now is not None and state_now.completed_turn_count + state_now.failed_turn_count >= 1
                        if ended or worker.returncode is not None or time.monotonic() > give_up:
                            break
                        time.sleep(0.01)
                    if ended:
                        break
                    if time.monotonic() > give_up:
                        raise TimeoutError(f"{session_id}: the turn did not end within {ROUND_TIMEOUT:g} s")
                runs = log.count(key)
                statuses = [str(item.event.payload.get("status")) for item in sessions.events(session_id).events
                            if item.event.type == "tool_call_finished"]
                with results.lock:
                    results.sessions += 1
                    results.second_runs += max(0, runs - 1)
                    if statuses == [ToolCallStatus.OUTCOME_UNKNOWN.value]:
                        results.outcome_unknown += 1
                    else:
                        results.other_status.append(f"{session_id}: {statuses}, {runs} run(s)")
                    results.round_seconds.append(time.monotonic() - began)
    finally:
        worker.kill()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--no-confirm", action="store_true", help="Worker children without the start confirmation")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 sessions on 2 lanes")
    arguments = parser.parse_args(argv)
    sessions, lanes = (4, 2) if arguments.quick else (arguments.sessions, arguments.lanes)
    results = Results()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dex-sigkill-") as directory, start_engine(in_process=False) as engine:
        state = Path(directory)
        per_lane = [sessions // lanes + (1 if lane < sessions % lanes else 0) for lane in range(lanes)]
        errors: list[BaseException] = []

        def run(rounds: int) -> None:
            try:
                _lane(engine.address, state, rounds, arguments.no_confirm, results)
            except BaseException as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=run, args=(rounds,)) for rounds in per_lane if rounds]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            print(f"error: {errors[0]!r}", file=sys.stderr)
    elapsed = time.monotonic() - began
    confirm = "without the start confirmation" if arguments.no_confirm else "with the start confirmation"
    print(f"single-attempt tool SIGKILLing its Worker as its first instruction, {confirm}")
    print(f"  sessions: {results.sessions} on {lanes} lanes in {elapsed:.0f} s "
          f"(round p50 {statistics.median(results.round_seconds or [0.0]):.2f} s)")
    print(f"  second runs of the tool: {results.second_runs}")
    print(f"  calls recorded {ToolCallStatus.OUTCOME_UNKNOWN.value}: {results.outcome_unknown}")
    for line in results.other_status[:5]:
        print(f"  other: {line}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
