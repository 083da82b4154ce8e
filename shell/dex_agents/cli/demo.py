"""``dex-agents demo``: the support agent on a local engine and a Worker child, shown live.

Invariants:
    * Everything the demo starts (engine child, Worker children, temporary directory) is stopped and
      removed when it returns or raises, Ctrl-C included.
    * Without a terminal on stdin and without ``--auto-approve`` the demo fails before it starts
      anything (approvals could not be asked).
    * ``--crash``: the first Worker runs with the refund's crash gate armed; once the refund reaches
      its gate the Worker's process group is SIGKILLed and a new Worker (gate not armed) takes over,
      then the gate is released. The refund is not run again: its tool call is recorded
      ``outcome_unknown`` and the model is told.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rich.console import Console

from dex_agents.cli.connection import DEFAULT_FLOW_TYPE, client_flow, open_sessions
from dex_agents.cli.driver import NO_TTY_HINT, Approval, SessionDriver, auto_approver, terminal_approver
from dex_agents.cli.errors import CliError
from dex_agents.cli.view import EventView, format_usage
from dex_agents.pure import events as kinds
from dex_agents.pure.rpc_values import AgentSnapshot
from dex_agents.pure.values import AgentEvent, AgentInterrupt
from dex_agents.testing.processes import KillableWorkerProcess, log_tail

__all__ = ["DemoOptions", "run_demo"]

DEMO_WORKER_MODULE: Final = "dex_agents.demo.worker"
DEMO_AGENT_MODULE: Final = "dex_agents.demo.support_agent"
STATE_DIR_ENV: Final = "DEX_AGENTS_DEMO_STATE_DIR"
MODEL_ENV: Final = "DEX_AGENTS_DEMO_MODEL"
CRASH_GATE_ENV: Final = "DEX_AGENTS_DEMO_CRASH_GATE"
REFUND_TOOL: Final = "refund_order"
REFUND_GATE: Final = "refund"
REFUNDS_LOG: Final = "refunds.log"


@dataclass(frozen=True)
class DemoOptions:
    """The demo's flags."""

    auto_approve: bool = False
    crash: bool = False
    model: str | None = None
    agent_module: str = DEMO_AGENT_MODULE
    """Module with ``DEMO_TURNS``."""
    worker_module: str = DEMO_WORKER_MODULE
    """Worker child module serving the agent's Flow."""


def demo_turns(agent_module: str = DEMO_AGENT_MODULE) -> Sequence[str]:
    """The scripted user messages of the demo agent."""
    try:
        module = importlib.import_module(agent_module)
    except ImportError as error:
        raise CliError(f"the demo agent cannot be loaded: {error}",
                       hint="install the demo's extra: pip install 'dex-agents[pydantic-ai]'") from error
    turns: Sequence[str] = module.DEMO_TURNS
    return turns


@contextlib.contextmanager
def local_engine(directory: Path, console: Console) -> Iterator[str]:
    """The local engine as a child process with its database in ``directory``; yields its address."""
    from dex_agents.engine.launch import EngineProcess, EngineStartError

    with console.status("starting the local Dex engine..."):
        try:
            engine = EngineProcess.start(directory / "engine.sqlite3", log_path=directory / "engine.log")
        except EngineStartError as error:
            raise CliError(f"the local engine did not start: {str(error).splitlines()[0]}") from error
    try:
        console.print(f"engine: {engine.address}", style="dim", highlight=False)
        yield engine.address
    finally:
        engine.stop()


@dataclass
class WorkerChildren:
    """The Worker children of one command: started in order, all stopped at the end."""

    server_address: str
    directory: Path
    environment: dict[str, str]
    console: Console
    module: str = DEMO_WORKER_MODULE
    started: list[KillableWorkerProcess] = field(default_factory=list)

    def start(self, extra: dict[str, str] | None = None) -> KillableWorkerProcess:
        from dex_agents.testing.processes import WorkerStartError

        number = len(self.started) + 1
        temporary = self.directory / "worker-tmp"
        temporary.mkdir(exist_ok=True)
        environment = {"TMPDIR": str(temporary), **self.environment, **(extra or {})}
        with self.console.status(f"starting Worker {number}..."):
            try:
                worker = KillableWorkerProcess.start(entry_module=self.module, server_address=self.server_address,
                                                     log_path=self.directory / f"worker-{number}.log",
                                                     environment=environment)
            except WorkerStartError as error:
                last = [line for line in str(error).splitlines() if line.strip()][-1]
                raise CliError(f"Worker {number} did not start: {last}") from error
        self.started.append(worker)
        self.console.print(f"worker {number}: pid {worker.pid}", style="dim", highlight=False)
        return worker

    @property
    def current(self) -> KillableWorkerProcess:
        return self.started[-1]

    def check_alive(self) -> None:
        status = self.current.returncode
        if status is not None:
            lines = [line for line in log_tail(self.current.log_path).splitlines() if line.strip()]
            last = f": {lines[-1].strip()}" if lines else ""
            raise CliError(f"the Worker exited with status {status}{last}",
                           hint="rerun with --debug to keep its log")

    def stop_all(self) -> None:
        for worker in reversed(self.started):
            worker.stop()


@contextlib.contextmanager
def scratch_directory(keep: bool, console: Console) -> Iterator[Path]:
    """A temporary directory, removed at the end unless ``keep``."""
    directory = Path(tempfile.mkdtemp(prefix="dex-agents-demo-"))
    try:
        yield directory
    finally:
        if keep:
            console.print(f"kept {directory}", style="dim", highlight=False)
        else:
            shutil.rmtree(directory, ignore_errors=True)


def _approver(options: DemoOptions, console: Console) -> Callable[[AgentInterrupt], Approval]:
    return auto_approver(console) if options.auto_approve else terminal_approver(console)


def run_demo(options: DemoOptions, console: Console, *, debug: bool = False) -> int:
    """Run the demo; returns the exit status."""
    if not options.auto_approve and not sys.stdin.isatty():
        raise CliError("the demo asks for approvals but " + NO_TTY_HINT.split(", so ")[0],
                       hint="rerun with --auto-approve", exit_code=2)
    turns = demo_turns(options.agent_module)
    from dex_agents.testing.coordination import FileGate

    with scratch_directory(debug, console) as directory:
        state_directory = directory / "state"
        state_directory.mkdir()
        environment = {STATE_DIR_ENV: str(state_directory)}
        if options.model is not None:
            environment[MODEL_ENV] = options.model
        with local_engine(directory, console) as address:
            workers = WorkerChildren(address, directory, environment, console, module=options.worker_module)
            try:
                workers.start({CRASH_GATE_ENV: "1"} if options.crash else None)
                flow = client_flow(DEFAULT_FLOW_TYPE)
                with open_sessions(address, flow) as sessions:
                    session_id = f"demo-{uuid.uuid4().hex[:8]}"
                    crashed: list[bool] = []

                    def crash_at_refund(event: AgentEvent) -> None:
                        if (not options.crash or crashed or event.type != kinds.TOOL_CALL_STARTED
                                or event.payload.get("tool_name") != REFUND_TOOL):
                            return
                        crashed.append(True)
                        gate = FileGate(state_directory, REFUND_GATE)
                        with console.status("waiting for the refund to reach its gate..."):
                            try:
                                gate.wait_until_reached(timeout=60.0)
                            except TimeoutError:
                                raise CliError(f"{REFUND_TOOL} did not reach its crash gate within 60 s",
                                               hint=f"the demo Worker arms it with {CRASH_GATE_ENV}=1") from None
                        victim = workers.current
                        victim.kill()
                        console.print(f"  CRASH: Worker pid {victim.pid} killed with SIGKILL inside {REFUND_TOOL}",
                                      style="bold red", highlight=False)
                        workers.start()
                        gate.release()

                    view = EventView(console)
                    driver = SessionDriver(sessions, session_id, view, _approver(options, console),
                                           hook=crash_at_refund, check=workers.check_alive)
                    console.print(f"session {session_id}", style="bold", highlight=False)
                    for number, text in enumerate(turns, start=1):
                        console.print(f"user> {text}", style="bold cyan", markup=False, highlight=False)
                        if number == 1:
                            sessions.start_session(session_id, text)
                        else:
                            sessions.send_user_message(session_id, text)
                        driver.wait_for_turns(number)
                    _summary(sessions.snapshot(session_id), view, state_directory, console)
                    sessions.stop_session(session_id)
                    failed = sum(1 for outcome in view.ended_turns.values() if outcome == "failed")
                    if failed:
                        raise CliError(f"{failed} of {len(turns)} turns failed (see above)",
                                       hint="check --model and the provider's API key")
            finally:
                workers.stop_all()
    return 0


def _summary(snapshot: AgentSnapshot, view: EventView, state_directory: Path, console: Console) -> None:
    console.rule("summary", style="cyan")
    for (turn_id, tool_call_id), (tool_name, status) in view.finished_tools.items():
        console.print(f"tool call {tool_name}: {status}", markup=False, highlight=False,
                      style="bold red" if status == "outcome_unknown" else None)
        if status != "outcome_unknown":
            continue
        told = next((message.tool_output for message in snapshot.messages
                     if message.turn_id == turn_id and message.tool_call_id == tool_call_id
                     and message.tool_output is not None), None)
        if told is not None:
            console.print(f"  the model was told: {told}", markup=False, highlight=False)
    console.print(f"session usage: {format_usage(snapshot.usage)}", highlight=False)
    log = state_directory / REFUNDS_LOG
    refunds = len(log.read_text().splitlines()) if log.exists() else 0
    console.print(f"refunds performed: {refunds}", style="bold", highlight=False)
