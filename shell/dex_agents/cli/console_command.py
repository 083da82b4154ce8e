"""``dex-agents console``: serve the session console in the foreground, and beside the demo.

Invariants: a missing ``console`` extra is a ``CliError`` naming its install command; without
``--token-file`` the console needs ``--no-auth`` and a loopback ``--host``; it prints its URL once
it serves, and stops on SIGINT or SIGTERM (uvicorn's handlers).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dex import FileCredential
from rich.console import Console

from dex_agents.cli.errors import CliError, install_hint

__all__ = ["console_beside", "run_console"]


def _require_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as error:
        raise CliError(f"the console needs the console extra: {error}", hint=install_hint("console")) from error


def run_console(address: str, credential: object, host: str, port: int, *, no_auth: bool, console: Console) -> int:
    """Serve until interrupted; returns the exit status."""
    _require_extra()
    from dex_agents.console import ConsoleSettings
    from dex_agents.console.auth import check_bind
    from dex_agents.console.server import console_url, serve_console

    if credential is None and not no_auth:
        raise CliError("the console needs a bearer token", hint="pass --token-file FILE, or --no-auth on loopback",
                       exit_code=2)
    if credential is not None and not isinstance(credential, FileCredential):
        raise CliError("--token-file must name a token file", exit_code=2)
    try:
        check_bind(host, credential)
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from error
    console.print(f"dex-agents console for {address} on {console_url(host, port)}", markup=False, highlight=False)
    serve_console(ConsoleSettings(server_address=address, credential=credential), host, port)
    return 0


@contextlib.contextmanager
def console_beside(address: str, console: Console) -> Iterator[str]:
    """The console on a free loopback port (no token) while the block runs; yields its URL."""
    _require_extra()
    from dex_agents.console import ConsoleSettings
    from dex_agents.console.server import BackgroundConsole

    served = BackgroundConsole(ConsoleSettings(server_address=address))
    url = served.start()
    console.print(f"session console: {url}", style="bold", markup=False, highlight=False)
    try:
        yield url
    finally:
        served.stop()
