"""``dex-agents chat``: an interactive session with the demo agent or a user's agent.

``--agent module:attribute`` names an ``AgentSessionFlow`` or a callable returning one (called with
no arguments); a Worker child serves it. Without ``--server`` (or ``DEX_SERVER_ADDRESS``) the chat
runs its own local engine. Everything it starts is stopped at the end, Ctrl-C included.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import uuid
from collections.abc import Iterator
from typing import Final

from rich.console import Console
from rich.prompt import Prompt

from dex_agents.cli.connection import DEFAULT_FLOW_TYPE, SERVER_ENV, check_server_address, client_flow, open_sessions
from dex_agents.cli.demo import (
    DEMO_WORKER_MODULE,
    MODEL_ENV,
    STATE_DIR_ENV,
    WorkerChildren,
    local_engine,
    scratch_directory,
)
from dex_agents.cli.driver import SessionDriver, auto_approver, terminal_approver
from dex_agents.cli.errors import CliError
from dex_agents.cli.view import EventView
from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["AGENT_ENV", "load_agent", "run_chat"]

AGENT_ENV: Final = "DEX_AGENTS_CLI_AGENT"
AGENT_WORKER_MODULE: Final = "dex_agents.cli.agent_worker"
_QUIT: Final = frozenset({"/quit", "/exit", "exit", "quit"})


def load_agent(reference: str) -> AgentSessionFlow:
    """The Flow named by ``module:attribute`` (a Flow, or a callable returning one)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise CliError(f"bad --agent {reference!r}", hint="expected module:attribute, e.g. my_app.agents:build_flow",
                       exit_code=2)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise CliError(f"--agent: cannot import {module_name!r}: {error}", exit_code=2) from error
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise CliError(f"--agent: {module_name!r} has no attribute {attribute!r}", exit_code=2) from None
    if not isinstance(value, AgentSessionFlow) and callable(value):
        value = value()
    if not isinstance(value, AgentSessionFlow):
        raise CliError(f"--agent {reference!r} is a {type(value).__name__}, not an AgentSessionFlow",
                       hint="name a Flow from create_agent_session_flow, or a function returning one", exit_code=2)
    return value


@contextlib.contextmanager
def _server(server: str | None, directory: object, console: Console) -> Iterator[str]:
    if server:
        yield check_server_address(server)
        return
    from pathlib import Path

    assert isinstance(directory, Path)
    with local_engine(directory, console) as address:
        yield address


def run_chat(agent: str | None, server: str | None, console: Console, *, auto_approve: bool, model: str | None,
             debug: bool = False) -> int:
    """Chat until end of input or ``/quit``."""
    server = server or os.environ.get(SERVER_ENV) or None
    if agent is None:
        flow_type = DEFAULT_FLOW_TYPE
        module, environment = DEMO_WORKER_MODULE, {}
    else:
        flow_type = load_agent(agent).get_flow_type()
        module, environment = AGENT_WORKER_MODULE, {AGENT_ENV: agent}
    approver = auto_approver(console) if auto_approve else terminal_approver(console)
    with scratch_directory(debug, console) as directory, _server(server, directory, console) as address:
        if agent is None:
            state_directory = directory / "state"
            state_directory.mkdir()
            environment[STATE_DIR_ENV] = str(state_directory)
            if model is not None:
                environment[MODEL_ENV] = model
        workers = WorkerChildren(address, directory, environment, console, module=module)
        try:
            workers.start()
            with open_sessions(address, client_flow(flow_type)) as sessions:
                session_id = f"chat-{uuid.uuid4().hex[:8]}"
                view = EventView(console)
                driver = SessionDriver(sessions, session_id, view, approver, check=workers.check_alive)
                console.print(f"session {session_id} ({flow_type}); /quit or end of input to leave",
                              style="bold", highlight=False)
                turns = 0
                while True:
                    try:
                        text = Prompt.ask("[bold cyan]you[/]", console=console)
                    except EOFError:
                        break
                    if text.strip() in _QUIT:
                        break
                    if not text.strip():
                        continue
                    if turns == 0:
                        sessions.start_session(session_id, text)
                    elif not sessions.send_user_message(session_id, text):
                        continue
                    turns += 1
                    driver.wait_for_turns(turns)
                if turns:
                    sessions.stop_session(session_id)
        finally:
            workers.stop_all()
    return 0
