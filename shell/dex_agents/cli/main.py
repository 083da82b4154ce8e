"""The ``dex-agents`` command line.

Commands: ``engine`` (the local Dex engine, unchanged: its arguments go to
``dex_agents.engine.cli``), ``worker``, ``demo``, ``chat``, ``console``, ``replay`` and
``sessions list|show|start|stop|tail|approve|reject|extend|resolve|send|compact|export``.

Invariants:
    * A failure prints one line ``dex-agents: error: <message> (hint: <hint>)`` to stderr and exits
      non-zero; a traceback only with ``--debug``. Ctrl-C exits 130 after cleaning up.
    * Output that is not a terminal is never wrapped (a line is as long as its text).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, TypeVar

import typer
from rich.console import Console

from dex_agents.cli.errors import CliError
from dex_agents.cli.frameworks import DEMO_AGENTS, SUBAGENT_DEMO_AGENT, Framework

if TYPE_CHECKING:
    from dex import Credential

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
FlowTypeOption = Annotated[str | None, typer.Option("--flow-type", help="the session's Flow type, checked "
                                                                        "(default: the session's own)")]
TokenFileOption = Annotated[Path | None, typer.Option("--token-file", help="the Dex server's bearer token "
                                                                           "(the SDK's FileCredential format)")]
DebugOption = Annotated[bool, typer.Option("--debug", help="show tracebacks; keep the temporary directory")]


def _console() -> Console:
    """Standard output; not wrapped at the console's width when it is not a terminal."""
    console = Console(highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


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
        return (f"no Worker answered: {_one_line(error)} (hint: start one: dex-agents worker --agent "
                f"MODULE:ATTRIBUTE --server {server or 'HOST:PORT'})")
    if isinstance(error, WorkerInvocationError):
        session = f"session {error.flow_id}" if error.flow_id else "the session"
        return f"{session} refused the request: {_one_line(Exception(error.worker_error_detail or error.detail))}"
    unavailable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    for cause in error_chain(error):
        code = cause.code if isinstance(cause, DexServiceError) else (
            cause.code() if isinstance(cause, grpc.RpcError) and callable(getattr(cause, "code", None)) else None)
        if code in unavailable:
            where = f" at {server}" if server is not None else ""
            return (f"the Dex server{where} does not answer: {_one_line(cause)} (hint: is a Dex server running "
                    f"there? dex-agents engine runs the local one)")
    return f"{type(error).__name__}: {_one_line(error)} (hint: rerun with --debug for the traceback)"


def _server(address: str | None) -> str:
    from dex_agents.cli.connection import check_server_address

    return _run(lambda: check_server_address(address))


def _credential(token_file: Path | None) -> Credential | None:
    from dex_agents.cli.connection import credential_from

    return _run(lambda: credential_from(token_file))


_log_formats: list[str] = []


@app.callback()
def _root(debug: DebugOption = False,
          log_format: Annotated[str, typer.Option("--log-format", help="log lines as text or json (one object "
                                                                       "a line)")] = "text") -> None:
    """Durable AI-agent sessions on Dex."""
    _debug_flags.append(debug)
    _log_formats.append(log_format)


def _setup_logs(debug: bool = False) -> None:
    """The one logging setup (``dex_agents.logs``): time, level, session, turn and Step on each line;
    tracebacks only with ``--debug``; ``--log-format json``."""
    from dex_agents.logs import LOG_FORMATS, configure_logging

    log_format = _log_formats[-1] if _log_formats else "text"
    if log_format not in LOG_FORMATS:
        _error_console().print(f"dex-agents: error: --log-format must be text or json, not {log_format!r}",
                               markup=False)
        raise typer.Exit(2)
    configure_logging(log_format="json" if log_format == "json" else "text",
                      debug=debug or bool(_debug_flags and _debug_flags[-1]))


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
        return run_demo(options, _console(), debug=debug)

    raise typer.Exit(_run(start, debug=debug))


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
    credential = _credential(token_file)
    options = ChatOptions(agent=agent, server=server, session=session, auto_approve=auto_approve, model=model,
                          framework=framework, credential=credential)
    raise typer.Exit(_run(lambda: run_chat(options, _console(), debug=debug), debug=debug, server=server))


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
    address = _server(server)
    credential = _credential(token_file)
    raise typer.Exit(_run(lambda: run_console(address, credential, host, port, no_auth=no_auth, console=_console()),
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
    address = _server(server)
    credential = _credential(token_file)
    raise typer.Exit(_run(lambda: serve(agent, address, task_slots=task_slots, app_dir=app_dir,
                                        credential=credential, stop_on_stdin_eof=stop_on_stdin_eof),
                          server=address))


@sessions_app.command("list")
def sessions_list(server: ServerOption = None,
                  flow_type: Annotated[str | None, typer.Option("--flow-type", help="only sessions of this Flow "
                                                                                    "type (default: all)")] = None,
                  limit: Annotated[int, typer.Option("--limit", min=1, help="at most this many")] = 100,
                  token_file: TokenFileOption = None) -> None:
    """List sessions, newest first."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.list_sessions(address, flow_type, _console(), limit=limit, credential=credential),
         server=address)


@sessions_app.command("show")
def sessions_show(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                  token_file: TokenFileOption = None,
                  full: Annotated[bool, typer.Option("--full", help="print long messages, arguments and outputs "
                                                                    "whole (default: cut at 1000 characters)")]
                  = False) -> None:
    """Print a session's state, messages, pending interrupts, tool calls and usage (needs a Worker)."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.show(address, flow_type, session, _console(), credential=credential, full=full),
         server=address)


@sessions_app.command("start")
def sessions_start(flow_type: Annotated[str, typer.Argument(help="the agent's Flow type, e.g. SupportAgent")],
                   session: Annotated[str, typer.Argument(help="the new session's ID")],
                   text: Annotated[str, typer.Argument(help="the first user message")],
                   server: ServerOption = None, token_file: TokenFileOption = None) -> None:
    """Start a session with its first message (a Worker serving the Flow type runs the turn)."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.start(address, flow_type, session, text, _console(), credential=credential),
         server=address)


@sessions_app.command("stop")
def sessions_stop(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                  reason: Annotated[str | None, typer.Option("--reason", help="why, recorded with Dex")] = None,
                  token_file: TokenFileOption = None) -> None:
    """Stop a session: Dex cancels its run; it takes no more messages (needs only the server)."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.stop(address, flow_type, session, reason, _console(), credential=credential),
         server=address)


@sessions_app.command("cancel")
def sessions_cancel(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                    tool_call: Annotated[str | None, typer.Option(
                        "--tool-call", help="cancel only this tool call (the turn goes on)")] = None,
                    reason: Annotated[str | None, typer.Option("--reason", help="why; the model reads it")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Cancel a session's running turn, or one tool call of it (needs a Worker)."""
    from dex_agents.cli import cancel

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: cancel.cancel(address, flow_type, session, tool_call, reason, _console(), credential=credential),
         server=address)


def _confirm(question: str) -> bool:
    """Ask a yes/no question on the terminal (standard input); no answer is no."""
    try:
        return typer.confirm(question, default=False)
    except typer.Abort:
        return False


@sessions_app.command("rewind")
def sessions_rewind(session: str,
                    to_turn: Annotated[int, typer.Option("--to-turn", min=0, help="go back to right after this "
                                                                                  "turn ended")],
                    reason: Annotated[str | None, typer.Option("--reason", help="why, kept in the session's "
                                                                                "audit")] = None,
                    yes: Annotated[bool, typer.Option("--yes", help="do not ask, even when removed tool calls "
                                                                    "may have had effects")] = False,
                    server: ServerOption = None, flow_type: FlowTypeOption = None,
                    token_file: TokenFileOption = None) -> None:
    """Rewind a session to its state right after a turn ended, naming every removed tool call that may
    have had an effect (not undone); asks first when there is one (needs a Worker)."""
    from dex_agents.cli import time_travel

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: time_travel.rewind(address, flow_type, session, to_turn, reason, _console(), yes=yes,
                                    confirm=_confirm,
                                    credential=credential), server=address)


@sessions_app.command("fork")
def sessions_fork(session: str,
                  new_session: Annotated[str, typer.Argument(help="the new session's ID")],
                  at_turn: Annotated[int, typer.Option("--at-turn", min=0, help="the new session's conversation "
                                                                                "is the original's through this "
                                                                                "turn")],
                  server: ServerOption = None, flow_type: FlowTypeOption = None,
                  token_file: TokenFileOption = None) -> None:
    """Start a new session of the same Flow type from a session's conversation through a turn; both go
    on independently (needs only the server)."""
    from dex_agents.cli import time_travel

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: time_travel.fork(address, flow_type, session, at_turn, new_session, _console(),
                                  credential=credential), server=address)


@sessions_app.command("tail")
def sessions_tail(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                  follow: Annotated[bool, typer.Option("--follow/--no-follow",
                                                       help="keep following new events")] = True,
                  token_file: TokenFileOption = None) -> None:
    """Print a session's events grouped by turn and attempt, and follow new ones."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.tail(address, flow_type, session, _console(), follow=follow, credential=credential),
         server=address)


@sessions_app.command("approve")
def sessions_approve(session: str, interrupt_id: str, server: ServerOption = None,
                     flow_type: FlowTypeOption = None,
                     edit_arguments: Annotated[str | None, typer.Option(
                         "--edit-arguments", help="a JSON object to run instead of the model's arguments (checked "
                                                  "against the tool's schema before the call runs)")] = None,
                     arguments_sha256: Annotated[str | None, typer.Option(
                         "--arguments-sha256", help="the pending interrupt's arguments_sha256 you saw (sessions "
                                                    "show): refused if the arguments changed")] = None,
                     approver: Annotated[str | None, typer.Option("--approver", help="who approves (audit)")] = None,
                     reason: Annotated[str | None, typer.Option("--reason", help="why (audit)")] = None,
                     token_file: TokenFileOption = None) -> None:
    """Approve a pending interrupt, as seen or with edited arguments (needs a Worker)."""
    from dex_agents.cli import operate

    address = _server(server)
    credential = _credential(token_file)
    approval = operate.Approval(approved=True, edited_arguments=edit_arguments, arguments_sha256=arguments_sha256,
                                approver=approver, reason=reason)
    _run(lambda: operate.approve(address, flow_type, session, interrupt_id, approval, _console(),
                                 credential=credential), server=address)


@sessions_app.command("reject")
def sessions_reject(session: str, interrupt_id: str, server: ServerOption = None,
                    flow_type: FlowTypeOption = None,
                    message: Annotated[str | None, typer.Option("--message", help="what the model is told")] = None,
                    approver: Annotated[str | None, typer.Option("--approver", help="who rejects (audit)")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Reject a pending interrupt (needs a Worker)."""
    from dex_agents.cli import operate

    address = _server(server)
    credential = _credential(token_file)
    approval = operate.Approval(approved=False, message=message, approver=approver)
    _run(lambda: operate.approve(address, flow_type, session, interrupt_id, approval, _console(),
                                 credential=credential), server=address)


@sessions_app.command("extend")
def sessions_extend(session: str, interrupt_id: str, server: ServerOption = None,
                    flow_type: FlowTypeOption = None,
                    deadline_ms: Annotated[int | None, typer.Option(
                        "--deadline-ms", min=1, help="the new deadline, in milliseconds from now")] = None,
                    minutes: Annotated[float | None, typer.Option(
                        "--minutes", min=0.001, help="the new deadline, in minutes from now")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Give an approver more time: move a pending interrupt's deadline later (needs a Worker)."""
    from dex_agents.cli import operate

    address = _server(server)
    credential = _credential(token_file)
    milliseconds = _run(lambda: operate.deadline_of(deadline_ms, minutes))
    _run(lambda: operate.extend(address, flow_type, session, interrupt_id, milliseconds, _console(),
                                credential=credential), server=address)


@sessions_app.command("resolve")
def sessions_resolve(session: str, tool_call_id: str,
                     status: Annotated[str, typer.Option("--status", help="succeeded or failed")],
                     resolver: Annotated[str, typer.Option("--resolver", help="who settles it (audit)")],
                     output: Annotated[str | None, typer.Option("--output", help="with succeeded: what the tool "
                                                                                 "returned")] = None,
                     message: Annotated[str | None, typer.Option("--message", help="with failed: why it "
                                                                                   "failed")] = None,
                     reason: Annotated[str | None, typer.Option("--reason", help="why (audit)")] = None,
                     server: ServerOption = None, flow_type: FlowTypeOption = None,
                     token_file: TokenFileOption = None) -> None:
    """Settle a tool call whose outcome is unknown as succeeded or failed; the model is told (needs a Worker)."""
    from dex_agents.cli import operate

    address = _server(server)
    credential = _credential(token_file)
    text = _run(lambda: operate.settled_text(status, output, message))
    _run(lambda: operate.resolve(address, flow_type, session, tool_call_id, status, text, resolver, reason,
                                 _console(), credential=credential), server=address)


@sessions_app.command("send")
def sessions_send(session: str,
                  text: Annotated[str, typer.Argument(help="the message; - reads it from standard input")],
                  server: ServerOption = None, flow_type: FlowTypeOption = None,
                  message_id: Annotated[str | None, typer.Option(
                      "--message-id", help="the message's identity: sending it again queues nothing more "
                                           "(default: a new one)")] = None,
                  token_file: TokenFileOption = None) -> None:
    """Send a user message to a session, once (needs a Worker)."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.send(address, flow_type, session, text, _console(), credential=credential,
                               message_id=message_id), server=address)


@sessions_app.command("compact")
def sessions_compact(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                     token_file: TokenFileOption = None) -> None:
    """Compact a session's history before its next model call: the oldest turns become one summary the
    model reads; the transcript stays whole (needs a Worker)."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.compact(address, flow_type, session, _console(), credential=credential), server=address)


@sessions_app.command("export")
def sessions_export(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                    out: Annotated[Path | None, typer.Option("--out", help="write the export here (default: "
                                                                          "standard output)")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Export a session to one JSON document: values, events, Step history and the reducers' inputs."""
    from dex_agents.cli import sessions

    address = _server(server)
    credential = _credential(token_file)
    _run(lambda: sessions.export(address, flow_type, session, out, _console(), credential=credential),
         server=address)


@app.command()
def replay(file: Annotated[Path, typer.Argument(help="a session export (dex-agents sessions export)")]) -> None:
    """Replay an exported session through the installed reducers, offline; exit 1 at a difference."""
    from dex_agents.cli.replay import replay_file

    raise typer.Exit(_run(lambda: replay_file(file, _console())))


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
