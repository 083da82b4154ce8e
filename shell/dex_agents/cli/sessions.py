"""``dex-agents sessions``: list, show, tail and answer sessions on any Dex server.

Invariants:
    * Every command needs the server (``--server`` or ``DEX_SERVER_ADDRESS``). A command on one
      session uses that session's own Flow type (``--flow-type``, when given, must match it).
    * ``list`` and ``tail`` read the server only; ``show``, ``send``, ``approve`` and ``reject`` are
      RPCs that a Worker serving the Flow type runs: without one they fail within about a second,
      naming the command that starts one, and nothing is sent.
    * ``tail`` prints the retained events grouped by turn, keeping only the highest attempt's text
      within one Step execution, then follows new events until Ctrl-C (or returns at once with
      ``--no-follow``).
    * ``list`` prints one line per session with full timestamps, never cut to the terminal's width.
    * A session whose Dex run is closed is *stopped*: ``list`` shows ``stopped (canceled)``, ``show``
      ``state: stopped (canceled), the agent was ... when it stopped`` (Dex's Flow status from
      ``describe_flow``; the spec's snapshot has no such field). ``start`` and ``stop`` need only the
      server; ``send`` and the answers to a stopped session fail at once (``SessionStoppedError``).
    * ``export`` reads the server only (no Worker) and writes one JSON document, to ``--out`` (written
      whole or not at all: a temporary file renamed into place) or to standard output.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from dex import (
    Credential,
    FlowAlreadyStartedError,
    FlowNotFoundError,
    FlowStatus,
    SearchFlowEntry,
    WorkerInvocationError,
)
from rich.console import Console

from dex_agents.cli.connection import open_session, require_worker
from dex_agents.cli.errors import CliError
from dex_agents.cli.follow import follow_events
from dex_agents.cli.subagent_view import print_children
from dex_agents.cli.view import EventView, format_usage, latest_attempts_only
from dex_agents.client import NoWorkerError, SessionClient
from dex_agents.client.sessions import search_sessions
from dex_agents.client.stopped import is_stopped_status, stopped_label
from dex_agents.pure.offline.export_document import render_export
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.values.session import UserMessageReceipt

__all__ = ["export", "list_sessions", "print_snapshot", "send", "session_lines", "show", "start", "stop",
           "tail"]


def session_lines(entries: list[SearchFlowEntry], *, with_flow_type: bool) -> list[str]:
    """The sessions as aligned lines under a header: ID, (Flow type,) status (a closed run is
    ``stopped (canceled)``, ...), started, closed."""
    header = ["SESSION", *(["FLOW TYPE"] if with_flow_type else []), "STATUS", "STARTED", "CLOSED"]
    rows = [[entry.flow_id, *([entry.flow_type] if with_flow_type else []), stopped_label(entry.status),
             entry.started_at.isoformat(timespec="seconds"),
             "" if entry.closed_at is None else entry.closed_at.isoformat(timespec="seconds")] for entry in entries]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]]


def list_sessions(server: str, flow_type: str | None, console: Console, *, limit: int = 100,
                  credential: Credential | None = None) -> None:
    """The sessions of ``flow_type`` (of every Flow type when ``None``), newest first."""
    entries = search_sessions(server, flow_type=flow_type, limit=limit, credential=credential)
    if not entries and flow_type is not None:
        # Issue 29, finding 3: a misspelt Flow type lists nothing; name the types that have sessions.
        used = sorted({entry.flow_type for entry in search_sessions(server, limit=1000, credential=credential)})
        console.print(f"no {flow_type} sessions: no session of that Flow type exists on {server} (is it spelt "
                      f"right? Flow types with sessions: {', '.join(used) or 'none'})", highlight=False, markup=False)
        return
    if not entries:
        console.print("no sessions", highlight=False)
        return
    for line in session_lines(entries, with_flow_type=flow_type is None):
        console.print(line, markup=False, highlight=False)


SHOWN_CHARACTERS = 1000
"""How much of one message, tool argument or output ``sessions show`` prints without ``--full``."""


def _cut(text: str, limit: int | None) -> str:
    """``text``, cut to ``limit`` characters with a note of what was left out (whole for ``None``)."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters: --full shows them)"


def print_snapshot(snapshot: AgentSnapshot, session_id: str, console: Console, *,
                   limit: int | None = SHOWN_CHARACTERS, run_status: FlowStatus | None = None) -> None:
    """The snapshot as text: state, messages, pending interrupts, tool calls, usage; each message,
    argument and output cut to ``limit`` characters (``None``: whole). A session whose run is closed
    (``run_status``) shows ``state: stopped (canceled)`` and the agent's status when it stopped."""
    console.rule(f"session {session_id}", style="cyan")
    state = snapshot.state
    stopped = run_status is not None and is_stopped_status(run_status)
    shown = "" if state is None else state.status.value
    if stopped and run_status is not None:
        shown = f"{stopped_label(run_status)}" + (f", the agent was {shown} when it stopped" if shown else "")
    if state is None:
        console.print(f"state: {shown or 'not started'}", highlight=False)
    else:
        console.print(f"state: {shown}; turns {state.turn_count} (completed "
                      f"{state.completed_turn_count}, failed {state.failed_turn_count}"
                      f"{f', canceled {state.canceled_turn_count}' if state.canceled_turn_count else ''}); "
                      f"messages {state.message_count}; queued {snapshot.queued_message_count}",
                      highlight=False)
        if state.parent_session_id is not None:
            console.print(f"parent session: {state.parent_session_id} (this is a sub-agent's child session)",
                          markup=False, highlight=False)
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
        console.print(f"  {message.sequence:>3} {message.role.value:<9} {_cut(body, limit)}", markup=False,
                      highlight=False)
    console.print("pending interrupts:", style="bold")
    for interrupt in snapshot.pending_interrupts:
        console.print(f"  {interrupt.interrupt_id} {interrupt.tool_name}({_cut(interrupt.arguments, limit)})"
                      + (f" until {interrupt.deadline}" if interrupt.deadline else "")
                      + (f" arguments_sha256={interrupt.arguments_sha256}" if interrupt.arguments_sha256 else ""),
                      markup=False, highlight=False)
    if not snapshot.pending_interrupts:
        console.print("  none", highlight=False)
    console.print("tool calls:", style="bold")
    for call in snapshot.tool_calls:
        detail = call.error or call.rejection_message or call.output or ""
        console.print(f"  {call.tool_call_id} {call.tool_name} [{call.effect.value}] {call.status.value}"
                      + (f": {_cut(detail, limit)}" if detail else ""), markup=False, highlight=False)
    if not snapshot.tool_calls:
        console.print("  none", highlight=False)
    console.print(f"usage: {format_usage(snapshot.usage)}", highlight=False)


def show(server: str, flow_type: str | None, session_id: str, console: Console, *,
         credential: Credential | None = None, full: bool = False) -> None:
    """Print the session's snapshot (an RPC: needs a Worker); long texts cut unless ``full``."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        run_status = sessions.describe(session_id).status
        require_worker(sessions, session_id)
        with console.status("reading the snapshot..."):
            snapshot = sessions.snapshot(session_id)  # query-only: a stopped run answers it too
        print_snapshot(snapshot, session_id, console, limit=None if full else SHOWN_CHARACTERS, run_status=run_status)
        print_children(sessions, session_id, console)


def start(server: str, flow_type: str, session_id: str, text: str, console: Console, *,
          credential: Credential | None = None) -> None:
    """Start the session ``session_id`` of ``flow_type`` with ``text`` as its first message (needs only
    the server; a Worker serving the Flow type runs the turn). An existing session is an error."""
    try:
        with SessionClient.connect(server, flow_type, credential=credential) as sessions:
            if _exists(sessions, session_id):
                raise CliError(f"session {session_id} exists already",
                               hint=f"see it with: dex-agents sessions show {session_id}")
            run_id = sessions.start(session_id, text or None)
            console.print(f"started {session_id} ({flow_type}, run {run_id})", highlight=False, markup=False)
            try:  # Issue 29, finding 3: what start(check=True) probes, after the started line
                sessions.check_worker(session_id)
            except NoWorkerError as error:
                console.print(f"warning: {error}; the session waits for one (hint: {error.hint})", highlight=False,
                              markup=False)
    except FlowAlreadyStartedError as error:
        raise CliError(f"session {session_id} exists already",
                       hint=f"see it with: dex-agents sessions show {session_id}") from error
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from error


def _exists(sessions: SessionClient, session_id: str) -> bool:
    try:
        sessions.describe(session_id)
    except FlowNotFoundError:
        return False
    return True


def stop(server: str, flow_type: str | None, session_id: str, reason: str | None, console: Console, *,
         credential: Credential | None = None) -> None:
    """Stop the session (Dex cancels its run, recording ``reason``); needs only the server."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        status = sessions.describe(session_id).status
        if is_stopped_status(status):
            raise CliError(f"session {session_id} is {stopped_label(status)} already",
                           hint="see the sessions with: dex-agents sessions list")
        sessions.stop(session_id, reason)
    console.print(f"stopped {session_id}" + (f" ({reason})" if reason else ""), highlight=False, markup=False)


def _binds(receipt: UserMessageReceipt, text: str) -> bool:
    """Whether ``receipt`` records ``text`` (a text the session would refuse binds nothing)."""
    try:
        return receipt.binds(text)
    except UnicodeEncodeError:
        return False


def send(server: str, flow_type: str | None, session_id: str, text: str, console: Console, *,
         credential: Credential | None = None, message_id: str | None = None) -> None:
    """Queue a user message once (an RPC: needs a Worker); ``text`` ``-`` reads it from standard input.
    Repeating the command with the same ``message_id`` queues nothing more and says so (the session's
    receipt of the message is read first)."""
    if text == "-":
        text = sys.stdin.read().removesuffix("\n")
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        try:
            receipt = None if message_id is None else sessions.message_receipt(session_id, message_id)
        except ValueError as error:
            raise CliError(str(error), hint="pass --message-id a short ID without '/'", exit_code=2) from error
        if receipt is not None and _binds(receipt, text):
            console.print(f"message {message_id} was already queued to {session_id}: nothing sent", highlight=False,
                          markup=False)
            return
        require_worker(sessions, session_id)
        try:
            accepted = sessions.send(session_id, text, message_id=message_id)
        except WorkerInvocationError as error:
            if not error.worker_error_type:
                raise
            raise CliError(f"session {session_id} refused the message: {error.worker_error_detail or error.detail}",
                           hint="a message ID names one text: send another text with another --message-id"
                           if message_id is not None else None) from error
        if not accepted:
            raise CliError("the message was not accepted", hint="a message must not be blank")
    console.print(f"sent to {session_id}", highlight=False)


def compact(server: str, flow_type: str | None, session_id: str, console: Console, *,
            credential: Credential | None = None) -> None:
    """Ask the session to compact its history before its next model call (an RPC: needs a Worker)."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        require_worker(sessions, session_id)
        try:
            asked = sessions.compact(session_id)
        except WorkerInvocationError as error:
            raise CliError(f"{session_id} cannot compact: {error.worker_error_detail or error}",
                           hint="its Flow was created with compaction=None") from error
    if asked:
        console.print(f"{session_id} compacts its history before its next model call", highlight=False)
    else:
        console.print(f"{session_id} has nothing to compact: every message is in the turns it keeps whole",
                      highlight=False)


def tail(server: str, flow_type: str | None, session_id: str, console: Console, *, follow: bool,
         credential: Credential | None = None) -> None:
    """Print the session's events grouped by turn and attempt, then follow new ones."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        page = sessions.events(session_id)
        view = EventView(console)
        for event in latest_attempts_only(item.event for item in page.events):
            view.show(event)
        view.finish_line()
        if follow:
            follow_events(sessions, session_id, view.show, cursor=page.cursor)


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, renamed into place."""
    directory = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def export(server: str, flow_type: str | None, session_id: str, out: Path | None, console: Console, *,
           credential: Credential | None = None) -> None:
    """Write the session's export (values, events, Step history, inputs) to ``out`` or standard output."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        with console.status("reading the session..."):
            document = sessions.export(session_id)
    text = render_export(document)
    if out is None:
        sys.stdout.write(text)
        return
    try:
        _write_whole(out, text)
    except OSError as error:
        raise CliError(f"cannot write {out}: {error}", exit_code=2) from error
    console.print(f"exported session {session_id} to {out}: {len(document.steps)} history steps, "
                  f"{len(document.inputs)} inputs (clock: {document.reconstruction.clock}), "
                  f"{len(document.events)} events", highlight=False, markup=False)
    for note in document.reconstruction.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
