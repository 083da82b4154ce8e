"""``dex-agents chat``: an interactive session with the demo agent or a user's agent.

Invariants:
    * Before anything starts, the agent loads (``--agent module:attribute``, default the demo agent;
      a missing extra gets an install hint) and ``--model`` is checked.
    * Without ``--server`` (or ``DEX_SERVER_ADDRESS``) the chat runs its own local engine and a Worker
      child (``dex-agents worker --agent ...``); the session ends with the chat, and everything it
      started is stopped at the end, Ctrl-C included.
    * With ``--server`` the chat starts nothing: the Workers already serving the agent there run the
      session (without one it fails within about a second, naming the command that starts one, and
      removes the empty session it made). The session stays open when the chat ends, and the chat
      says how to continue it (``--session ID``, or ``dex-agents sessions``).
    * Input that is not a terminal is echoed after the prompt, so a transcript reads like a chat.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Final

from dex import Credential
from rich.console import Console
from rich.prompt import Prompt

from dex_agents.cli.children import WorkerChildren, local_engine, scratch_directory
from dex_agents.cli.connection import (
    DEFAULT_FLOW_TYPE,
    SERVER_ENV,
    check_server_address,
    open_session,
    require_worker,
)
from dex_agents.cli.demo_command import MODEL_ENV, STATE_DIR_ENV, check_model, load_agent_module
from dex_agents.cli.session_driver import SessionDriver, auto_approver, terminal_approver
from dex_agents.cli.errors import CliError
from dex_agents.cli.frameworks import DEMO_AGENTS, Framework
from dex_agents.cli.view import EventView
from dex_agents.cli.worker import load_agent_flows
from dex_agents.client import SessionClient

__all__ = ["ChatOptions", "run_chat"]

_QUIT: Final = frozenset({"/quit", "/exit", "exit", "quit"})


@dataclass(frozen=True)
class ChatOptions:
    """The chat's flags (``server`` falls back to ``DEX_SERVER_ADDRESS`` in ``run_chat``)."""

    agent: str | None = None
    server: str | None = None
    session: str | None = None
    auto_approve: bool = False
    model: str | None = None
    framework: Framework | None = None
    """The framework of the demo agent (``None``: Pydantic AI); only without ``agent``."""
    credential: Credential | None = None

    @property
    def demo_agent(self) -> str:
        """The demo agent on the chosen framework."""
        return DEMO_AGENTS[self.framework or Framework.PYDANTIC_AI]


def _flow_type(options: ChatOptions) -> str:
    """The agent's Flow type, loading the agent (and checking ``--model``) before anything starts."""
    if options.agent is None:
        check_model(load_agent_module(options.demo_agent), options.model)
        return DEFAULT_FLOW_TYPE
    if options.model is not None:
        raise CliError("--model applies to the demo agent only", hint="drop --model, or drop --agent", exit_code=2)
    if options.framework is not None:
        raise CliError("--framework picks the demo agent's framework", hint="drop --framework, or drop --agent",
                       exit_code=2)
    flows = load_agent_flows([options.agent])
    if len(flows) != 1:
        raise CliError(f"--agent {options.agent!r} names {len(flows)} agents; a chat talks to one", exit_code=2)
    return flows[0].get_flow_type()


def _read_line(console: Console) -> str | None:
    """The user's next line, or ``None`` at end of input; piped input is echoed after the prompt."""
    if sys.stdin.isatty():
        try:
            return Prompt.ask("[bold cyan]you[/]", console=console)
        except EOFError:
            return None
    line = sys.stdin.readline()
    if not line:
        return None
    text = line.rstrip("\r\n")
    console.print(f"you: {text}", style="bold cyan", markup=False, highlight=False)
    return text


def run_chat(options: ChatOptions, console: Console, *, debug: bool = False) -> int:
    """Chat until end of input or ``/quit``; returns the exit status."""
    options = replace(options, server=options.server or os.environ.get(SERVER_ENV) or None)
    if options.session is not None and options.server is None:
        raise CliError("--session continues a session on a Dex server", hint="pass --server HOST:PORT too",
                       exit_code=2)
    if options.server is not None:
        address = check_server_address(options.server)
        flow_type = None if options.session is not None else _flow_type(options)
        return _chat_on_server(address, flow_type, options, console)
    flow_type = _flow_type(options)
    with scratch_directory(debug, console) as directory, local_engine(directory, console) as address:
        environment: dict[str, str] = {}
        if options.agent is None:
            state_directory = directory / "state"
            state_directory.mkdir()
            environment[STATE_DIR_ENV] = str(state_directory)
            if options.model is not None:
                environment[MODEL_ENV] = options.model
        workers = WorkerChildren(options.agent or options.demo_agent, address, directory, environment, console)
        try:
            workers.start()
            with SessionClient.connect(address, flow_type) as sessions:
                session_id = f"chat-{uuid.uuid4().hex[:8]}"
                sessions.start(session_id)
                try:
                    _converse(sessions, session_id, options, console, workers.check_alive)
                finally:
                    sessions.stop(session_id)
        finally:
            workers.stop_all()
    return 0


@contextlib.contextmanager
def _server_session(address: str, flow_type: str | None, options: ChatOptions) -> Iterator[tuple[SessionClient, str]]:
    """A new session of ``flow_type`` (removed again if no Worker answers), or ``--session``'s."""
    if options.session is not None:
        with open_session(address, options.session, credential=options.credential) as sessions:
            require_worker(sessions, options.session)
            yield sessions, options.session
        return
    assert flow_type is not None
    with SessionClient.connect(address, flow_type, credential=options.credential) as sessions:
        session_id = f"chat-{uuid.uuid4().hex[:8]}"
        sessions.start(session_id)
        try:
            require_worker(sessions, session_id)
        except BaseException:
            sessions.stop(session_id)
            raise
        yield sessions, session_id


def _chat_on_server(address: str, flow_type: str | None, options: ChatOptions, console: Console) -> int:
    with _server_session(address, flow_type, options) as (sessions, session_id):
        try:
            _converse(sessions, session_id, options, console, lambda: None,
                      cursor=sessions.events(session_id).cursor)
        finally:
            console.print(f"session {session_id} stays open on {address}; continue it with: dex-agents chat "
                          f"--server {address} --session {session_id}  (or: dex-agents sessions send {session_id} "
                          f"TEXT --server {address})", style="dim", markup=False, highlight=False)
    return 0


def _converse(sessions: SessionClient, session_id: str, options: ChatOptions, console: Console,
              check: Callable[[], None], *, cursor: str = "") -> None:
    approver = auto_approver(console) if options.auto_approve else terminal_approver(console)
    view = EventView(console)
    driver = SessionDriver(sessions, session_id, view, approver, check=check)
    driver.cursor = cursor
    console.print(f"session {session_id} ({sessions.flow_type}); /quit or end of input to leave", style="bold",
                  highlight=False)
    turns = 0
    while True:
        text = _read_line(console)
        if text is None or text.strip() in _QUIT:
            break
        if not text.strip() or not sessions.send(session_id, text):
            continue
        turns += 1
        driver.wait_for_turns(turns)

