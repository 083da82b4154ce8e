"""``dex-agents demo``: the support agent on a local engine and a Worker child, shown live.

Invariants:
    * Before anything starts, in this order: the demo agent loads (else an install hint for its
      extra), ``--model`` is a model the agent can use (format, provider, key), and approvals can be
      asked (a terminal on stdin, or ``--auto-approve``).
    * Everything the demo starts (engine child, Worker children, temporary directory) is stopped and
      removed when it returns or raises, Ctrl-C included.
    * The Worker children are ``dex-agents worker --agent <agent>``, the command a user runs.
    * ``--crash``: the first Worker runs with the refund's crash gate armed; once the refund reaches
      its gate the Worker's process group is SIGKILLed and a new Worker (gate not armed) takes over,
      then the gate is released. The refund is not run again: its outcome is unknown, and the demo
      agent's ``reconcile`` finds the refund in its ledger by the call's idempotency key, so the call
      is recorded ``succeeded`` (settled by the reconcile check) and the model is told so; an agent
      without a reconcile records ``outcome_unknown`` and the model is told that.
    * ``--subagent`` (the agent module names ``SUB_AGENT_TOOLS``): when the parent defers a call of a
      sub-agent tool, the child session it starts is followed to the end of its turn, its events
      indented under the parent's (``cli.subagent_view``).
    * ``--console``: the session console serves the demo's engine on a free loopback port (no token)
      from before the session starts until the demo ends; its URL is printed first.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

from rich.console import Console

from dex_agents.cli.children import WorkerChildren, local_engine, scratch_directory
from dex_agents.cli.connection import DEFAULT_FLOW_TYPE, DEMO_AGENT
from dex_agents.cli.subagent_view import follow_children
from dex_agents.cli.session_driver import NO_TTY_HINT, Approval, SessionDriver, auto_approver, terminal_approver
from dex_agents.cli.errors import EXTRA_OF_MODULE, CliError, install_hint
from dex_agents.cli.view import EventView, format_usage
from dex_agents.client import SessionClient
from dex_agents.pure.machine import events as kinds
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt
from dex_agents.serving.gate import FileGate

__all__ = ["DemoOptions", "check_model", "load_agent_module", "run_demo"]

STATE_DIR_ENV: Final = "DEX_AGENTS_DEMO_STATE_DIR"
MODEL_ENV: Final = "DEX_AGENTS_DEMO_MODEL"
CRASH_GATE_ENV: Final = "DEX_AGENTS_DEMO_CRASH_GATE"
REFUND_TOOL: Final = "refund_order"
REFUND_GATE: Final = "refund"
REFUNDS_LOG: Final = "refunds.log"
SETTLED_NOTE: Final = "[Dex] The outcome was unknown ("
"""How the result of a call whose unknown outcome was settled begins (``texts.settled_outcome_note``)."""
MODEL_HINT: Final = ("pass --model provider:name (e.g. openai:gpt-4o-mini) with the provider's API key set, "
                     "or leave --model out for the scripted model, which needs no key")


@dataclass(frozen=True)
class DemoOptions:
    """The demo's flags."""

    auto_approve: bool = False
    crash: bool = False
    model: str | None = None
    agent: str = DEMO_AGENT
    """The agent the Workers serve (``module:attribute``); its module has ``DEMO_TURNS``."""
    console: bool = False
    """Serve the session console beside the demo; the session stays open until Ctrl-C (a terminal) or the end."""


def load_agent_module(agent: str) -> ModuleType:
    """The module of the demo agent ``agent``, or a ``CliError`` with an install hint for its extra."""
    module_name = agent.partition(":")[0]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        extra = EXTRA_OF_MODULE.get((error.name or "").partition(".")[0])
        raise CliError(f"the demo agent cannot be loaded: {error}",
                       hint=None if extra is None else install_hint(extra)) from error


def check_model(module: ModuleType, model: str | None) -> None:
    """A ``CliError`` unless the agent's ``check_model`` accepts ``model`` (nothing to check: no model)."""
    check: Callable[[str], None] | None = getattr(module, "check_model", None)
    if model is None or check is None:
        return
    try:
        check(model)
    except ValueError as error:
        raise CliError(f"--model {model!r}: {error}", hint=MODEL_HINT, exit_code=2) from error


def _approver(options: DemoOptions, console: Console) -> Callable[[AgentInterrupt], Approval]:
    return auto_approver(console) if options.auto_approve else terminal_approver(console)


def run_demo(options: DemoOptions, console: Console, *, debug: bool = False) -> int:
    """Run the demo; returns the exit status."""
    module = load_agent_module(options.agent)
    turns: Sequence[str] = module.DEMO_TURNS
    check_model(module, options.model)
    if not options.auto_approve and not sys.stdin.isatty():
        raise CliError("the demo asks for approvals but " + NO_TTY_HINT.split(", so ")[0],
                       hint="rerun with --auto-approve", exit_code=2)
    with scratch_directory(debug, console) as directory:
        state_directory = directory / "state"
        state_directory.mkdir()
        environment = {STATE_DIR_ENV: str(state_directory)}
        if options.model is not None:
            environment[MODEL_ENV] = options.model
        with local_engine(directory, console) as address, _maybe_console(options, address, console):
            workers = WorkerChildren(options.agent, address, directory, environment, console)
            try:
                workers.start({CRASH_GATE_ENV: "1"} if options.crash else None)
                with SessionClient.connect(address, DEFAULT_FLOW_TYPE) as sessions:
                    _converse(sessions, turns, options, workers, state_directory, console,
                              getattr(module, "SUB_AGENT_TOOLS", frozenset()))
                    if options.console:
                        _keep_serving(console)
            finally:
                workers.stop_all()
    return 0


def _maybe_console(options: DemoOptions, address: str, console: Console) -> contextlib.AbstractContextManager[object]:
    if not options.console:
        return contextlib.nullcontext()
    from dex_agents.cli.console_command import console_beside

    return console_beside(address, console)


def _keep_serving(console: Console) -> None:
    """With a terminal, keep the engine, Worker and console up until Enter or Ctrl-C."""
    if not sys.stdin.isatty():
        return
    console.print("the console keeps serving the session: press Enter (or Ctrl-C) to stop", highlight=False)
    try:
        sys.stdin.readline()
    except KeyboardInterrupt:
        pass


def _converse(sessions: SessionClient, turns: Sequence[str], options: DemoOptions, workers: WorkerChildren,
              state_directory: Path, console: Console, sub_agent_tools: Collection[str] = ()) -> None:
    session_id = f"demo-{uuid.uuid4().hex[:8]}"
    crashed: list[bool] = []
    follow_child = follow_children(sessions, session_id, sub_agent_tools, console,
                                   lambda printer: _approver(options, printer))

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
    def hook(event: AgentEvent) -> None:
        crash_at_refund(event)
        follow_child(event)  # a sub-agent's call: its child session, indented, until its turn ends

    driver = SessionDriver(sessions, session_id, view, _approver(options, console), hook=hook,
                           check=workers.check_alive)
    console.print(f"session {session_id}", style="bold", highlight=False)
    for number, text in enumerate(turns, start=1):
        console.print(f"user> {text}", style="bold cyan", markup=False, highlight=False)
        if number == 1:
            sessions.start(session_id, text)
        else:
            sessions.send(session_id, text)
        driver.wait_for_turns(number)
    _summary(sessions.snapshot(session_id), view, state_directory, console)
    if not options.console:  # with the console, the session stays open to be looked at
        sessions.stop(session_id)
    failed = sum(1 for outcome in view.ended_turns.values() if outcome == "failed")
    if failed:
        raise CliError(f"{failed} of {len(turns)} turns failed (see above)",
                       hint="check --model and the provider's API key")


def _summary(snapshot: AgentSnapshot, view: EventView, state_directory: Path, console: Console) -> None:
    console.rule("summary", style="cyan")
    for (turn_id, tool_call_id), (tool_name, status) in view.finished_tools.items():
        console.print(f"tool call {tool_name}: {status}", markup=False, highlight=False,
                      style="bold red" if status == "outcome_unknown" else None)
        told = next((message.tool_output for message in snapshot.messages
                     if message.turn_id == turn_id and message.tool_call_id == tool_call_id
                     and message.tool_output is not None), None)
        settled = told is not None and told.startswith(SETTLED_NOTE)  # an unknown outcome the reconcile settled
        if told is not None and (status == "outcome_unknown" or settled):
            console.print(f"  the model was told: {told}", markup=False, highlight=False)
    console.print(f"session usage: {format_usage(snapshot.usage)}", highlight=False)
    log = state_directory / REFUNDS_LOG
    refunds = len(log.read_text().splitlines()) if log.exists() else 0
    console.print(f"refunds performed: {refunds}", style="bold", highlight=False)
