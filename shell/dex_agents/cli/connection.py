"""A session Client for the command line: a Flow of the right type, its Registry, and the RPCs.

The RPCs run on the Worker; the command line only needs a Flow of the same Flow type for the
Registry's codecs, so ``client_flow`` builds one with a runner that refuses to run.

Invariants:
    * ``open_sessions`` yields an ``AgentSessionTestClient`` whose environment (Client, BlobCache,
      temporary directory) is closed when the ``with`` block ends, errors included.
    * ``server_address`` accepts ``host:port`` only; anything else is a ``CliError`` before a
      connection is made.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Final

from dex_agents.cli.errors import CliError
from dex_agents.pure.runner_values import AgentTurnOutcome
from dex_agents.pure.values import FrameworkMessage
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import AgentTurnContext, DeferredToolExecution, ToolExecutionResult
from dex_agents.testing.environment import AgentTestEnvironment
from dex_agents.testing.session_client import AgentSessionTestClient

__all__ = ["DEFAULT_FLOW_TYPE", "SERVER_ENV", "check_server_address", "client_flow", "open_sessions"]

DEFAULT_FLOW_TYPE: Final = "SupportAgent"
SERVER_ENV: Final = "DEX_SERVER_ADDRESS"
_ADDRESS: Final = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


class ClientOnlyRunner:
    """A runner for a client-side Flow: the session's Steps run on a Worker, never here."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        raise RuntimeError("the command line's Flow only encodes RPCs; a Worker runs the session")

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        raise RuntimeError("the command line's Flow only encodes RPCs; a Worker runs the session")

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        raise RuntimeError("the command line's Flow only encodes RPCs; a Worker runs the session")


def client_flow(flow_type: str) -> AgentSessionFlow:
    """A Flow of ``flow_type`` whose runner never runs: enough for the Client's codecs."""
    try:
        return create_agent_session_flow(ClientOnlyRunner(), flow_type)
    except (TypeError, ValueError) as error:
        raise CliError(f"bad --flow-type {flow_type!r}: {error}", exit_code=2) from error


def check_server_address(address: str | None) -> str:
    """The ``host:port`` of the Dex server, or a ``CliError`` naming what is wrong."""
    if address is None or not address.strip():
        raise CliError("no Dex server given", hint=f"pass --server HOST:PORT or set {SERVER_ENV}", exit_code=2)
    address = address.strip()
    match = _ADDRESS.match(address)
    if match is None or not 0 < int(match.group(2)) <= 65535:
        raise CliError(f"bad server address {address!r}", hint="expected HOST:PORT, e.g. 127.0.0.1:8801",
                       exit_code=2)
    return address


@contextlib.contextmanager
def open_sessions(server_address: str, flow: AgentSessionFlow, *, timeout: float = 30.0,
                  poll_interval: float = 0.05) -> Iterator[AgentSessionTestClient]:
    """A session client for ``flow`` on the server at ``server_address``; closed on exit."""
    environment = AgentTestEnvironment.start(server_address=server_address, flows=[flow], is_worker_in_process=False)
    try:
        yield AgentSessionTestClient(environment.client, flow, server_address=server_address, timeout=timeout,
                                     poll_interval=poll_interval)
    finally:
        environment.close()
