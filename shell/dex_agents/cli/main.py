"""The ``dex-agents`` command line.

Commands: ``engine`` (the local Dex engine, unchanged: its arguments go to
``dex_agents.engine.cli``), ``worker``, ``demo``, ``chat``, ``console``, ``replay`` and
``sessions list|show|start|stop|cancel|rewind|fork|tail|approve|reject|extend|resolve|send|compact|export``
(``cli.sessions_commands``). Every command runs through ``cli.running.run_command``: one line on a
failure, a traceback only with ``--debug``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Final

import typer

from dex_agents.cli.errors import CliError
from dex_agents.cli.frameworks import DEMO_AGENTS, SUBAGENT_DEMO_AGENT, Framework
from dex_agents.cli.running import (
    DebugOption,
    ServerOption,
    TokenFileOption,
    credential_of,
    debug_flags,
    error_console,
    run_command,
    server_address,
    stdout_console,
)
from dex_agents.cli.sessions_commands import sessions_app

__all__ = ["app", "main"]

ENGINE_COMMAND: Final = "engine"

app = typer.Typer(name="dex-agents", help="Durable AI-agent sessions on Dex.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
app.add_typer(sessions_app, name="sessions")

_log_formats: list[str] = []


@app.callback()
def _root(debug: DebugOption = False,
          log_format: Annotated[str, typer.Option("--log-format", help="log lines as text or json (one object "
                                                                       "a line)")] = "text") -> None:
    """Durable AI-agent sessions on Dex."""
    debug_flags.append(debug)
    _log_formats.append(log_format)


def _setup_logs(debug: bool = False) -> None:
    """The one logging setup (``dex_agents.logs``): time, level, session, turn and Step on each line;
    tracebacks only with ``--debug``; ``--log-format json``."""
    from dex_agents.logs import LOG_FORMATS, configure_logging

    log_format = _log_formats[-1] if _log_formats else "text"
    if log_format not in LOG_FORMATS:
        error_console().print(f"dex-agents: error: --log-format must be text or json, not {log_format!r}",
                               markup=False)
        raise typer.Exit(2)
    configure_logging(log_format="json" if log_format == "json" else "text",
                      debug=debug or bool(debug_flags and debug_flags[-1]))


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
    framework: Annotated[Framework, typer.Option("--framework", help="the framework the support agent runs on")]
    = Framework.PYDANTIC_AI,
    with_console: Annotated[bool, typer.Option("--console", help="serve the session console beside the demo "
                                                                 "(loopback, no token) and print its URL")] = False,
    subagent: Annotated[bool, typer.Option("--subagent", help="the support agent delegates the refund to a billing "
                                                              "agent, a durable child session (Pydantic AI)")] = False,
    debug: DebugOption = False,
) -> None:
    """Run the support agent on a local engine and show the session live."""
    from dex_agents.cli.demo_command import DemoOptions, run_demo

    options = DemoOptions(auto_approve=auto_approve, crash=crash, model=model,
                          agent=SUBAGENT_DEMO_AGENT if subagent else DEMO_AGENTS[framework], console=with_console)

    def start() -> int:
        if subagent and (framework is not Framework.PYDANTIC_AI or crash):
            raise CliError("--subagent runs on Pydantic AI, without --crash", hint="drop --framework and --crash",
                           exit_code=2)
        return run_demo(options, stdout_console(), debug=debug)

    raise typer.Exit(run_command(start, debug=debug))


@app.command()
def chat(
    agent: Annotated[str | None, typer.Option("--agent", help="module:attribute of an AgentSessionFlow or "
                                                             "a function returning one (default: the demo agent)")] = None,
    server: Annotated[str | None, typer.Option("--server", envvar="DEX_SERVER_ADDRESS",
                                               help="Dex server HOST:PORT whose Workers serve the agent "
                                                    "(default: a local engine and Worker of its own)")] = None,
    session: Annotated[str | None, typer.Option("--session", help="continue this session (with --server)")] = None,
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="approve every tool call without asking")] = False,
    model: Annotated[str | None, typer.Option("--model", help="the demo agent's model as provider:name")] = None,
    framework: Annotated[Framework | None, typer.Option("--framework", help="the framework the demo agent runs "
                                                                            "on (default pydantic-ai)")] = None,
    token_file: TokenFileOption = None,
    debug: DebugOption = False,
) -> None:
    """Chat with an agent in a durable session."""
    from dex_agents.cli.chat import ChatOptions, run_chat

    _setup_logs(debug)
    credential = credential_of(token_file)
    options = ChatOptions(agent=agent, server=server, session=session, auto_approve=auto_approve, model=model,
                          framework=framework, credential=credential)
    raise typer.Exit(run_command(lambda: run_chat(options, stdout_console(), debug=debug), debug=debug, server=server))


@app.command()
def console(
    server: ServerOption = None,
    host: Annotated[str, typer.Option("--host", help="address to serve on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="port to serve on")] = 8600,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="bearer token the console requires and sends to the Dex server (the engine's "
                             "--token-file format)")] = None,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="serve without a token (loopback only)")] = False,
) -> None:
    """Serve the session console: a web UI and an HTTP API for watching and operating sessions."""
    from dex_agents.cli.console_command import run_console

    _setup_logs()
    address = server_address(server)
    credential = credential_of(token_file)
    raise typer.Exit(run_command(lambda: run_console(address, credential, host, port, no_auth=no_auth, console=stdout_console()),
                                 server=address))


@app.command()
def worker(
    agent: Annotated[list[str], typer.Option("--agent", help="module:attribute of an AgentSessionFlow, a list of "
                                                            "them, or a function returning either (repeatable)")],
    server: ServerOption = None,
    task_slots: Annotated[int, typer.Option("--task-slots", min=1, help="tasks run at once (one is kept for "
                                                                        "RPCs)")] = 8,
    app_dir: Annotated[Path, typer.Option("--app-dir", help="directory the agent modules are imported from, "
                                                            "first on sys.path")] = Path("."),
    token_file: TokenFileOption = None,
    stop_on_stdin_eof: Annotated[bool, typer.Option("--stop-on-stdin-eof", hidden=True)] = False,
) -> None:
    """Serve agents' sessions until SIGTERM or Ctrl-C (running tasks drain first)."""
    from dex_agents.cli.worker import serve

    _setup_logs()
    address = server_address(server)
    credential = credential_of(token_file)
    raise typer.Exit(run_command(lambda: serve(agent, address, task_slots=task_slots, app_dir=app_dir,
                                        credential=credential, stop_on_stdin_eof=stop_on_stdin_eof),
                          server=address))


@app.command()
def replay(file: Annotated[Path, typer.Argument(help="a session export (dex-agents sessions export)")]) -> None:
    """Replay an exported session through the installed reducers, offline; exit 1 at a difference."""
    from dex_agents.cli.replay import replay_file

    raise typer.Exit(run_command(lambda: replay_file(file, stdout_console())))


_OWN_DEBUG_COMMANDS: Final = frozenset({ENGINE_COMMAND, "demo", "chat"})
"""Commands with a ``--debug`` of their own (the engine's keeps its own parser)."""


def _debug_first(arguments: list[str]) -> list[str]:
    """The root options given after a subcommand (``sessions send S T --debug``, ``worker ... --log-format
    json``) moved before it, where the root takes them; up to ``--``. ``--debug`` stays where it is
    for the commands with a ``--debug`` of their own; the engine keeps all of its arguments."""
    if not arguments or arguments[0] == ENGINE_COMMAND:
        return arguments
    end = arguments.index("--") if "--" in arguments else len(arguments)
    moved: list[str] = []
    kept: list[str] = []
    index = 0
    while index < end:
        argument = arguments[index]
        if argument == "--debug" and index > 0 and arguments[0] not in _OWN_DEBUG_COMMANDS:
            moved.append(argument)
        elif argument == "--log-format" and index > 0 and index + 1 < end:
            moved += [argument, arguments[index + 1]]
            index += 1
        elif argument.startswith("--log-format=") and index > 0:
            moved.append(argument)
        else:
            kept.append(argument)
        index += 1
    return [*moved, *kept, *arguments[end:]]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Args:
        argv: Arguments without the program name; ``None`` reads ``sys.argv``.
    """
    arguments = _debug_first(list(sys.argv[1:] if argv is None else argv))
    if arguments[:1] == [ENGINE_COMMAND]:  # the engine keeps its own parser, flags and exit statuses
        from dex_agents.engine import cli as engine_cli

        return engine_cli.main(arguments)
    try:
        app(arguments, prog_name=os.environ.get("DEX_AGENTS_PROG_NAME", "dex-agents"), standalone_mode=True)
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
