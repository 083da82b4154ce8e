"""The ``dex-agents`` command line.

Commands: ``engine`` (the local Dex engine, unchanged: its arguments go to
``dex_agents.engine.cli``), ``demo``, ``chat`` and ``sessions list|show|tail|approve|reject|send``.

Invariants:
    * A failure prints one line ``dex-agents: error: <message> (hint: <hint>)`` to stderr and exits
      non-zero; a traceback only with ``--debug``. Ctrl-C exits 130 after cleaning up.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Final, TypeVar

import typer
from rich.console import Console

from dex_agents.cli.errors import CliError

__all__ = ["app", "main"]

T = TypeVar("T")

ENGINE_COMMAND: Final = "engine"
_MAX_ERROR_CHARACTERS: Final = 300

app = typer.Typer(name="dex-agents", help="Durable AI-agent sessions on Dex.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
sessions_app = typer.Typer(help="Inspect and answer sessions on a Dex server.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")

_debug_flags: list[bool] = []

ServerOption = Annotated[str | None, typer.Option("--server", envvar="DEX_SERVER_ADDRESS",
                                                  help="Dex server HOST:PORT (or DEX_SERVER_ADDRESS)")]
FlowTypeOption = Annotated[str, typer.Option("--flow-type", help="the sessions' Flow type")]
DebugOption = Annotated[bool, typer.Option("--debug", help="show tracebacks; keep the temporary directory")]


def _console() -> Console:
    return Console(highlight=False)


def _error_console() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= _MAX_ERROR_CHARACTERS else text[: _MAX_ERROR_CHARACTERS - 3] + "..."


def _run(body: Callable[[], T], *, debug: bool = False, server: str | None = None) -> T:
    """Run a command body; turn failures into one line on stderr and an exit status."""
    debug = debug or bool(_debug_flags and _debug_flags[-1])
    err = _error_console()
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
        err.print(f"dex-agents: error: {_describe(error, server)}", markup=False)
        raise typer.Exit(1) from None


def _describe(error: Exception, server: str | None) -> str:
    """One line for an unexpected failure, with a hint where the cause is recognisable."""
    import grpc
    from dex import DexServiceError, FlowNotActiveOrNotFoundError, FlowNotFoundError

    if isinstance(error, FlowNotFoundError | FlowNotActiveOrNotFoundError):
        session = f"session {error.flow_id}" if error.flow_id else "the session"
        return f"{session} was not found or is not running (hint: see the sessions with: dex-agents sessions list)"
    if isinstance(error, DexServiceError) and error.code in (grpc.StatusCode.UNAVAILABLE,
                                                              grpc.StatusCode.DEADLINE_EXCEEDED):
        where = f" at {server}" if server is not None else ""
        return f"the Dex server{where} does not answer: {_one_line(error)} (hint: is a Dex server running there?)"
    return f"{type(error).__name__}: {_one_line(error)} (hint: rerun with --debug for the traceback)"


def _server(address: str | None) -> str:
    from dex_agents.cli.connection import check_server_address

    return _run(lambda: check_server_address(address))


@app.callback()
def _root(debug: DebugOption = False) -> None:
    """Durable AI-agent sessions on Dex."""
    _debug_flags.append(debug)


@app.command(ENGINE_COMMAND, context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
             add_help_option=False)
def engine(ctx: typer.Context) -> None:
    """Run the local Dex engine (development, tests, demo); see `dex-agents engine --help`."""
    from dex_agents.engine import cli as engine_cli

    raise typer.Exit(engine_cli.main([ENGINE_COMMAND, *ctx.args]))


@app.command()
def demo(
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="approve every tool call without asking")] = False,
    crash: Annotated[bool, typer.Option("--crash", help="SIGKILL the Worker inside the refund and recover")] = False,
    model: Annotated[str | None, typer.Option("--model", help="the model as provider:name")] = None,
    debug: DebugOption = False,
) -> None:
    """Run the support agent on a local engine and show the session live."""
    from dex_agents.cli.demo import DemoOptions, run_demo

    options = DemoOptions(auto_approve=auto_approve, crash=crash, model=model)
    raise typer.Exit(_run(lambda: run_demo(options, _console(), debug=debug), debug=debug))


@app.command()
def chat(
    agent: Annotated[str | None, typer.Option("--agent", help="module:attribute of an AgentSessionFlow or "
                                                             "a function returning one (default: the demo agent)")] = None,
    server: Annotated[str | None, typer.Option("--server", envvar="DEX_SERVER_ADDRESS",
                                               help="Dex server HOST:PORT (default: a local engine)")] = None,
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="approve every tool call without asking")] = False,
    model: Annotated[str | None, typer.Option("--model", help="the demo agent's model as provider:name")] = None,
    debug: DebugOption = False,
) -> None:
    """Chat with an agent in a durable session."""
    from dex_agents.cli.chat import run_chat

    raise typer.Exit(_run(lambda: run_chat(agent, server, _console(), auto_approve=auto_approve, model=model,
                                           debug=debug), debug=debug, server=server))


@sessions_app.command("list")
def sessions_list(server: ServerOption = None, flow_type: FlowTypeOption = "SupportAgent",
                  limit: Annotated[int, typer.Option("--limit", min=1, help="at most this many")] = 100) -> None:
    """List the sessions of a Flow type, newest first."""
    from dex_agents.cli import sessions

    address = _server(server)
    _run(lambda: sessions.list_sessions(address, flow_type, _console(), limit=limit), server=address)


@sessions_app.command("show")
def sessions_show(session: str, server: ServerOption = None, flow_type: FlowTypeOption = "SupportAgent") -> None:
    """Print a session's state, messages, pending interrupts, tool calls and usage."""
    from dex_agents.cli import sessions

    address = _server(server)
    _run(lambda: sessions.show(address, flow_type, session, _console()), server=address)


@sessions_app.command("tail")
def sessions_tail(session: str, server: ServerOption = None, flow_type: FlowTypeOption = "SupportAgent",
                  follow: Annotated[bool, typer.Option("--follow/--no-follow",
                                                       help="keep following new events")] = True) -> None:
    """Print a session's events grouped by turn and attempt, and follow new ones."""
    from dex_agents.cli import sessions

    address = _server(server)
    _run(lambda: sessions.tail(address, flow_type, session, _console(), follow=follow), server=address)


@sessions_app.command("approve")
def sessions_approve(session: str, interrupt_id: str, server: ServerOption = None,
                     flow_type: FlowTypeOption = "SupportAgent") -> None:
    """Approve a pending interrupt."""
    from dex_agents.cli import sessions

    address = _server(server)
    _run(lambda: sessions.approve(address, flow_type, session, interrupt_id, True, None, _console()), server=address)


@sessions_app.command("reject")
def sessions_reject(session: str, interrupt_id: str, server: ServerOption = None,
                    flow_type: FlowTypeOption = "SupportAgent",
                    message: Annotated[str | None, typer.Option("--message", help="what the model is told")] = None,
                    ) -> None:
    """Reject a pending interrupt."""
    from dex_agents.cli import sessions

    address = _server(server)
    _run(lambda: sessions.approve(address, flow_type, session, interrupt_id, False, message, _console()),
         server=address)


@sessions_app.command("send")
def sessions_send(session: str, text: str, server: ServerOption = None,
                  flow_type: FlowTypeOption = "SupportAgent") -> None:
    """Send a user message to a session."""
    from dex_agents.cli import sessions

    address = _server(server)
    _run(lambda: sessions.send(address, flow_type, session, text, _console()), server=address)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Args:
        argv: Arguments without the program name; ``None`` reads ``sys.argv``.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == [ENGINE_COMMAND]:  # the engine keeps its own parser, flags and exit statuses
        from dex_agents.engine import cli as engine_cli

        return engine_cli.main(arguments)
    try:
        app(arguments, prog_name=os.environ.get("DEX_AGENTS_PROG_NAME", "dex-agents"), standalone_mode=True)
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
