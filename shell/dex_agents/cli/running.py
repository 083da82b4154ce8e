"""How every ``dex-agents`` command runs: its shared options, its consoles, and the one rule for failures.

Invariants:
    * A failure prints one line ``dex-agents: error: <message> (hint: <hint>)`` to stderr and exits
      non-zero (``run_command``); a traceback only with ``--debug``. Ctrl-C exits 130 after cleaning up.
    * Output that is not a terminal is never wrapped (a line is as long as its text).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, TypeVar

import typer
from rich.console import Console

from dex_agents.cli.errors import CliError

if TYPE_CHECKING:
    from dex import Credential

__all__ = ["DebugOption", "FlowTypeOption", "ServerOption", "TokenFileOption", "credential_of", "debug_flags",
           "describe_failure", "error_console", "one_line", "run_command", "server_address", "stdout_console"]

T = TypeVar("T")

_MAX_ERROR_CHARACTERS: Final = 300

debug_flags: list[bool] = []
"""The root ``--debug`` of each invocation (the last one counts)."""

ServerOption = Annotated[str | None, typer.Option("--server", envvar="DEX_SERVER_ADDRESS",
                                                  help="Dex server HOST:PORT (or DEX_SERVER_ADDRESS)")]
FlowTypeOption = Annotated[str | None, typer.Option("--flow-type", help="the session's Flow type, checked "
                                                                        "(default: the session's own)")]
TokenFileOption = Annotated[Path | None, typer.Option("--token-file", help="the Dex server's bearer token "
                                                                           "(the SDK's FileCredential format)")]
DebugOption = Annotated[bool, typer.Option("--debug", help="show tracebacks; keep the temporary directory")]


def stdout_console() -> Console:
    """Standard output; not wrapped at the console's width when it is not a terminal."""
    console = Console(highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


def error_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= _MAX_ERROR_CHARACTERS else text[: _MAX_ERROR_CHARACTERS - 3] + "..."


def run_command(body: Callable[[], T], *, debug: bool = False, server: str | None = None) -> T:
    """Run a command body; turn failures into one line on stderr and an exit status."""
    debug = debug or bool(debug_flags and debug_flags[-1])
    err = error_console()
    try:
        return body()
    except CliError as error:
        if debug:
            err.print_exception()
        err.print(f"dex-agents: error: {error.one_line()}", markup=False)
        raise typer.Exit(error.exit_code) from None
    except KeyboardInterrupt:
        err.print("dex-agents: interrupted", markup=False)
        raise typer.Exit(130) from None
    except Exception as error:  # noqa: BLE001 - every failure is one line unless --debug
        if debug:
            err.print_exception()
        err.print(f"dex-agents: error: {describe_failure(error, server)}", markup=False)
        raise typer.Exit(1) from None


def describe_failure(error: Exception, server: str | None) -> str:
    """One line for an unexpected failure, with a hint where the cause is recognisable."""
    import grpc
    from dex import DexServiceError, FlowNotActiveOrNotFoundError, FlowNotFoundError, WorkerInvocationError

    from dex_agents.client import NoWorkerError, SessionStoppedError
    from dex_agents.shell.error_chain import error_chain

    if isinstance(error, NoWorkerError):
        return f"{error} (hint: {error.hint})"
    if isinstance(error, SessionStoppedError):
        return f"{error.detail} (hint: start another session: dex-agents sessions start FLOW_TYPE SESSION_ID TEXT)"
    if isinstance(error, FlowNotFoundError | FlowNotActiveOrNotFoundError):
        session = f"session {error.flow_id}" if error.flow_id else "the session"
        return f"{session} was not found or is not running (hint: see the sessions with: dex-agents sessions list)"
    if isinstance(error, WorkerInvocationError) and not error.worker_error_type:
        return (f"no Worker answered: {one_line(error)} (hint: start one: dex-agents worker --agent "
                f"MODULE:ATTRIBUTE --server {server or 'HOST:PORT'})")
    if isinstance(error, WorkerInvocationError):
        session = f"session {error.flow_id}" if error.flow_id else "the session"
        return f"{session} refused the request: {one_line(Exception(error.worker_error_detail or error.detail))}"
    unavailable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    for cause in error_chain(error):
        code = cause.code if isinstance(cause, DexServiceError) else (
            cause.code() if isinstance(cause, grpc.RpcError) and callable(getattr(cause, "code", None)) else None)
        if code in unavailable:
            where = f" at {server}" if server is not None else ""
            return (f"the Dex server{where} does not answer: {one_line(cause)} (hint: is a Dex server running "
                    f"there? dex-agents engine runs the local one)")
    return f"{type(error).__name__}: {one_line(error)} (hint: rerun with --debug for the traceback)"


def server_address(address: str | None) -> str:
    from dex_agents.cli.connection import check_server_address

    return run_command(lambda: check_server_address(address))


def credential_of(token_file: Path | None) -> Credential | None:
    from dex_agents.cli.connection import credential_from

    return run_command(lambda: credential_from(token_file))


