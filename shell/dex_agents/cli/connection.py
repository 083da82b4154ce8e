"""The command line's way to a Dex server: the address, the credential, a session client.

Invariants:
    * ``check_server_address`` accepts ``host:port`` only; anything else is a ``CliError`` before a
      connection is made. ``credential_from`` reads a token file or fails with a ``CliError``.
    * ``open_session`` yields a ``SessionClient`` of the session's own Flow type (read from the
      server; ``--flow-type``, when given, must match it), closed when the ``with`` block ends.
    * ``require_worker`` fails within about a second when no Worker serves the session's Flow type,
      with a hint naming the command that starts one; nothing was sent then.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from dex_agents.cli.errors import CliError
from dex_agents.cli.frameworks import DEMO_AGENT

if TYPE_CHECKING:  # the SDK and the client are imported where they are used: `dex-agents worker` prints
    # its first progress line before the SDK is imported and never needs the client
    from dex import Credential

    from dex_agents.client import SessionClient

__all__ = [
    "DEFAULT_FLOW_TYPE",
    "DEMO_AGENT",
    "SERVER_ENV",
    "check_server_address",
    "credential_from",
    "open_session",
    "require_worker",
    "worker_hint",
]

DEFAULT_FLOW_TYPE: Final = "SupportAgent"
"""The demo agent's Flow type."""



SERVER_ENV: Final = "DEX_SERVER_ADDRESS"
"""``dex_agents.client.SERVER_ADDRESS_ENV`` (a test checks they agree), spelled out to keep this import light."""
_ADDRESS: Final = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


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


def credential_from(token_file: Path | None) -> Credential | None:
    """The bearer credential in ``token_file`` (the SDK's ``FileCredential`` format), if one is given."""
    if token_file is None:
        return None
    from dex import FileCredential

    try:
        return FileCredential(token_file)
    except (OSError, UnicodeError, ValueError) as error:
        raise CliError(f"--token-file {token_file}: {error}", exit_code=2) from error


def worker_hint(flow_type: str, server_address: str) -> str:
    """How to start a Worker serving ``flow_type`` on the server."""
    if flow_type == DEFAULT_FLOW_TYPE:
        return f"start the demo agent's Worker: dex-agents worker --agent {DEMO_AGENT} --server {server_address}"
    return (f"start a Worker serving {flow_type}: dex-agents worker --agent MODULE:ATTRIBUTE "
            f"--server {server_address}")


@contextlib.contextmanager
def open_session(server_address: str, session_id: str, *, flow_type: str | None = None,
                 credential: Credential | None = None) -> Iterator[SessionClient]:
    """A session client for the Flow type of ``session_id``; closed on exit.

    Raises:
        FlowNotFoundError: The session does not exist.
        CliError: ``flow_type`` is not the session's.
    """
    from dex_agents.client import SessionClient
    from dex_agents.client.sessions import describe_session

    actual = describe_session(server_address, session_id, credential=credential).flow_type
    if flow_type is not None and flow_type != actual:
        raise CliError(f"session {session_id} has Flow type {actual}, not {flow_type}",
                       hint="drop --flow-type: the session's own type is used", exit_code=2)
    with SessionClient.connect(server_address, actual, credential=credential) as sessions:
        yield sessions


def require_worker(sessions: SessionClient, session_id: str) -> None:
    """Fail fast, with a hint, unless a Worker serving the session's Flow type answers."""
    from dex_agents.client import NoWorkerError

    try:
        sessions.check_worker(session_id)
    except NoWorkerError as error:
        raise CliError(str(error), hint=worker_hint(error.flow_type, error.server_address)) from error
