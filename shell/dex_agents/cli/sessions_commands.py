"""``dex-agents sessions ...``: inspect, answer and operate sessions on a Dex server.

Each command checks its arguments, then calls one function of ``cli.sessions``, ``cli.operate``,
``cli.cancel`` or ``cli.time_travel`` through ``run_command`` (one line on failure). The SDK is
imported inside the commands, so ``dex-agents --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dex_agents.cli.running import (
    FlowTypeOption,
    ServerOption,
    TokenFileOption,
    credential_of,
    run_command,
    server_address,
    stdout_console,
)

__all__ = ["sessions_app"]

sessions_app = typer.Typer(help="Inspect and answer sessions on a Dex server.", no_args_is_help=True)


@sessions_app.command("list")
def sessions_list(server: ServerOption = None,
                  flow_type: Annotated[str | None, typer.Option("--flow-type", help="only sessions of this Flow "
                                                                                    "type (default: all)")] = None,
                  limit: Annotated[int, typer.Option("--limit", min=1, help="at most this many")] = 100,
                  token_file: TokenFileOption = None) -> None:
    """List sessions, newest first."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.list_sessions(address, flow_type, stdout_console(), limit=limit, credential=credential),
                server=address)


@sessions_app.command("show")
def sessions_show(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                  token_file: TokenFileOption = None,
                  full: Annotated[bool, typer.Option("--full", help="print long messages, arguments and outputs "
                                                                    "whole (default: cut at 1000 characters)")]
                  = False) -> None:
    """Print a session's state, messages, pending interrupts, tool calls and usage (needs a Worker)."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.show(address, flow_type, session, stdout_console(), credential=credential, full=full),
                server=address)


@sessions_app.command("start")
def sessions_start(flow_type: Annotated[str, typer.Argument(help="the agent's Flow type, e.g. SupportAgent")],
                   session: Annotated[str, typer.Argument(help="the new session's ID")],
                   text: Annotated[str, typer.Argument(help="the first user message")],
                   server: ServerOption = None, token_file: TokenFileOption = None) -> None:
    """Start a session with its first message (a Worker serving the Flow type runs the turn)."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.start(address, flow_type, session, text, stdout_console(), credential=credential),
                server=address)


@sessions_app.command("stop")
def sessions_stop(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                  reason: Annotated[str | None, typer.Option("--reason", help="why, recorded with Dex")] = None,
                  token_file: TokenFileOption = None) -> None:
    """Stop a session: Dex cancels its run; it takes no more messages (needs only the server)."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.stop(address, flow_type, session, reason, stdout_console(), credential=credential),
                server=address)


@sessions_app.command("cancel")
def sessions_cancel(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                    tool_call: Annotated[str | None, typer.Option(
                        "--tool-call", help="cancel only this tool call (the turn goes on)")] = None,
                    reason: Annotated[str | None, typer.Option("--reason", help="why; the model reads it")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Cancel a session's running turn, or one tool call of it (needs a Worker)."""
    from dex_agents.cli import cancel

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: cancel.cancel(address, flow_type, session, tool_call, reason, stdout_console(), credential=credential),
                server=address)


def confirm(question: str) -> bool:
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

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: time_travel.rewind(address, flow_type, session, to_turn, reason, stdout_console(), yes=yes,
                                    confirm=confirm,
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

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: time_travel.fork(address, flow_type, session, at_turn, new_session, stdout_console(),
                                  credential=credential), server=address)


@sessions_app.command("tail")
def sessions_tail(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                  follow: Annotated[bool, typer.Option("--follow/--no-follow",
                                                       help="keep following new events")] = True,
                  token_file: TokenFileOption = None) -> None:
    """Print a session's events grouped by turn and attempt, and follow new ones."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.tail(address, flow_type, session, stdout_console(), follow=follow, credential=credential),
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

    address = server_address(server)
    credential = credential_of(token_file)
    approval = operate.Approval(approved=True, edited_arguments=edit_arguments, arguments_sha256=arguments_sha256,
                                approver=approver, reason=reason)
    run_command(lambda: operate.approve(address, flow_type, session, interrupt_id, approval, stdout_console(),
                                 credential=credential), server=address)


@sessions_app.command("reject")
def sessions_reject(session: str, interrupt_id: str, server: ServerOption = None,
                    flow_type: FlowTypeOption = None,
                    message: Annotated[str | None, typer.Option("--message", help="what the model is told")] = None,
                    approver: Annotated[str | None, typer.Option("--approver", help="who rejects (audit)")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Reject a pending interrupt (needs a Worker)."""
    from dex_agents.cli import operate

    address = server_address(server)
    credential = credential_of(token_file)
    approval = operate.Approval(approved=False, message=message, approver=approver)
    run_command(lambda: operate.approve(address, flow_type, session, interrupt_id, approval, stdout_console(),
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

    address = server_address(server)
    credential = credential_of(token_file)
    milliseconds = run_command(lambda: operate.deadline_of(deadline_ms, minutes))
    run_command(lambda: operate.extend(address, flow_type, session, interrupt_id, milliseconds, stdout_console(),
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

    address = server_address(server)
    credential = credential_of(token_file)
    text = run_command(lambda: operate.settled_text(status, output, message))
    run_command(lambda: operate.resolve(address, flow_type, session, tool_call_id, status, text, resolver, reason,
                                 stdout_console(), credential=credential), server=address)


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

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.send(address, flow_type, session, text, stdout_console(), credential=credential,
                               message_id=message_id), server=address)


@sessions_app.command("compact")
def sessions_compact(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                     token_file: TokenFileOption = None) -> None:
    """Compact a session's history before its next model call: the oldest turns become one summary the
    model reads; the transcript stays whole (needs a Worker)."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.compact(address, flow_type, session, stdout_console(), credential=credential), server=address)


@sessions_app.command("export")
def sessions_export(session: str, server: ServerOption = None, flow_type: FlowTypeOption = None,
                    out: Annotated[Path | None, typer.Option("--out", help="write the export here (default: "
                                                                          "standard output)")] = None,
                    token_file: TokenFileOption = None) -> None:
    """Export a session to one JSON document: values, events, Step history and the reducers' inputs."""
    from dex_agents.cli import sessions

    address = server_address(server)
    credential = credential_of(token_file)
    run_command(lambda: sessions.export(address, flow_type, session, out, stdout_console(), credential=credential),
                server=address)


