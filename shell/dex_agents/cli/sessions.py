"""``dex-agents sessions``: list, show, tail and answer sessions on any Dex server.

Invariants:
    * Every command needs the server (``--server`` or ``DEX_SERVER_ADDRESS``) and a Flow type
      (default ``SupportAgent``); reads that do not need a Worker (list, tail, the pending
      interrupts) work while no Worker runs, the RPCs (show, send, approve, reject) need one.
    * ``tail`` prints the retained events grouped by turn, keeping only the highest attempt's text
      within one Step execution, then follows new events until Ctrl-C (or returns at once with
      ``--no-follow``).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dex_agents.cli.connection import client_flow, open_sessions
from dex_agents.cli.errors import CliError
from dex_agents.cli.follow import follow_events, retained_events
from dex_agents.cli.view import EventView, format_usage, latest_attempts_only
from dex_agents.pure.rpc_values import AgentSnapshot

__all__ = ["approve", "list_sessions", "send", "show", "tail"]


def list_sessions(server: str, flow_type: str, console: Console, *, limit: int = 100) -> None:
    """A table of the Flow type's sessions, newest first."""
    with open_sessions(server, client_flow(flow_type)) as sessions:
        page = sessions.client.search_flows(f"FlowType = '{flow_type}'", limit)
    if not page.flows:
        console.print(f"no {flow_type} sessions", highlight=False)
        return
    table = Table("session", "status", "started", "closed")
    for entry in page.flows:
        table.add_row(entry.flow_id, entry.status.name.lower(), entry.started_at.isoformat(timespec="seconds"),
                      "" if entry.closed_at is None else entry.closed_at.isoformat(timespec="seconds"))
    console.print(table)


def print_snapshot(snapshot: AgentSnapshot, session_id: str, console: Console) -> None:
    """The snapshot as text: state, messages, pending interrupts, tool calls, usage."""
    console.rule(f"session {session_id}", style="cyan")
    state = snapshot.state
    if state is None:
        console.print("state: not started", highlight=False)
    else:
        console.print(f"state: {state.status.value}; turns {state.turn_count} (completed "
                      f"{state.completed_turn_count}, failed {state.failed_turn_count}); "
                      f"messages {state.message_count}; queued {snapshot.queued_message_count}",
                      highlight=False)
        if state.last_turn_error:
            console.print(f"last turn error: {state.last_turn_error}", style="red", markup=False, highlight=False)
    console.print("messages:", style="bold")
    for message in snapshot.messages:
        if message.text is not None:
            body = message.text
        elif message.tool_output is not None:
            body = f"{message.tool_name} -> {message.tool_output}"
        else:
            body = f"{message.tool_name}({message.tool_arguments})"
        console.print(f"  {message.sequence:>3} {message.role.value:<9} {body}", markup=False, highlight=False)
    console.print("pending interrupts:", style="bold")
    for interrupt in snapshot.pending_interrupts:
        console.print(f"  {interrupt.interrupt_id} {interrupt.tool_name}({interrupt.arguments})"
                      + (f" until {interrupt.deadline}" if interrupt.deadline else ""), markup=False,
                      highlight=False)
    if not snapshot.pending_interrupts:
        console.print("  none", highlight=False)
    console.print("tool calls:", style="bold")
    for call in snapshot.tool_calls:
        detail = call.error or call.rejection_message or call.output or ""
        console.print(f"  {call.tool_call_id} {call.tool_name} [{call.effect.value}] {call.status.value}"
                      + (f": {detail}" if detail else ""), markup=False, highlight=False)
    if not snapshot.tool_calls:
        console.print("  none", highlight=False)
    console.print(f"usage: {format_usage(snapshot.usage)}", highlight=False)


def show(server: str, flow_type: str, session_id: str, console: Console) -> None:
    """Print the session's snapshot (an RPC: needs a Worker)."""
    with open_sessions(server, client_flow(flow_type)) as sessions:
        with console.status("reading the snapshot..."):
            snapshot = sessions.snapshot(session_id)
    print_snapshot(snapshot, session_id, console)


def send(server: str, flow_type: str, session_id: str, text: str, console: Console) -> None:
    """Queue a user message."""
    with open_sessions(server, client_flow(flow_type)) as sessions:
        if not sessions.send_user_message(session_id, text):
            raise CliError("the message was not accepted", hint="a message must not be blank")
    console.print(f"sent to {session_id}", highlight=False)


def approve(server: str, flow_type: str, session_id: str, interrupt_id: str, approved: bool,
            message: str | None, console: Console) -> None:
    """Approve or reject a pending interrupt."""
    with open_sessions(server, client_flow(flow_type)) as sessions:
        accepted = sessions.resolve_interrupt(session_id, interrupt_id, approved, message)
    if not accepted:
        raise CliError(f"interrupt {interrupt_id} is not pending",
                       hint=f"see the pending interrupts with: dex-agents sessions show {session_id}")
    console.print(f"interrupt {interrupt_id} {'approved' if approved else 'rejected'}", highlight=False)


def tail(server: str, flow_type: str, session_id: str, console: Console, *, follow: bool) -> None:
    """Print the session's events grouped by turn and attempt, then follow new ones."""
    with open_sessions(server, client_flow(flow_type)) as sessions:
        sessions.client.describe_flow(session_id)  # an unknown session fails here instead of waiting forever
        events, token = retained_events(sessions, session_id)
        view = EventView(console)
        for event in latest_attempts_only(events):
            view.show(event)
        view.finish_line()
        if follow:
            follow_events(sessions, session_id, view.show, resume_token=token)
