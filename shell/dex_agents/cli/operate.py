"""``dex-agents sessions approve|reject|extend|resolve``: an operator's answers to a session (issue 25).

Invariants:
    * Each is an RPC a Worker serving the session's Flow type runs: without one it fails within about
      a second, naming the command that starts one, and nothing is sent.
    * ``approve --edit-arguments JSON`` approves with the edit (``--arguments-sha256``: the pending
      interrupt's hash the approver saw; ``--approver``, ``--reason``: the audit). The session checks the
      edit against the tool's schema before the call runs, so the command follows the session's events
      until the approval is honoured (``interrupt_resolved``) or refused (``dex_agents.approval_refused``:
      exit 1 with the framework's validation error; the interrupt is pending again).
    * ``resolve`` settles a call whose outcome is unknown: ``--status succeeded --output TEXT`` or
      ``--status failed --message TEXT``, with ``--resolver`` (required) and ``--reason``.
    * A refusal by the session is one line saying why (exit 1); a bad option exits 2 before anything is sent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from dex import Credential
from rich.console import Console

from dex_agents.cli.connection import open_session, require_worker
from dex_agents.cli.errors import CliError
from dex_agents.client import SessionClient
from dex_agents.client.values import edit_verdict

__all__ = ["Approval", "approve", "deadline_of", "extend", "resolve", "settled_text"]

EDIT_CHECK_SECONDS: Final = 60.0
"""How long ``approve --edit-arguments`` follows the events for the session's check of the edit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """One answer to a pending interrupt, as the command line gives it."""

    approved: bool
    message: str | None = None
    edited_arguments: str | None = None
    arguments_sha256: str | None = None
    approver: str | None = None
    reason: str | None = None


def approve(server: str, flow_type: str | None, session_id: str, interrupt_id: str, approval: Approval,
            console: Console, *, credential: Credential | None = None) -> None:
    """Approve (perhaps with edited arguments) or reject a pending interrupt."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        require_worker(sessions, session_id)
        cursor = sessions.events(session_id).cursor if approval.edited_arguments is not None else ""
        accepted = sessions.resolve_interrupt(
            session_id, interrupt_id, approval.approved, approval.message, edited_arguments=approval.edited_arguments,
            arguments_sha256=approval.arguments_sha256, approver=approval.approver, reason=approval.reason)
        if not accepted:
            raise CliError(f"interrupt {interrupt_id} is not pending",
                           hint=f"see the pending interrupts with: dex-agents sessions show {session_id}")
        if approval.edited_arguments is not None:
            _await_edit_check(sessions, session_id, interrupt_id, cursor, console)
            return
    console.print(f"interrupt {interrupt_id} {'approved' if approval.approved else 'rejected'}", highlight=False)


def _await_edit_check(sessions: SessionClient, session_id: str, interrupt_id: str, cursor: str,
                      console: Console) -> None:
    """Follow the events after ``cursor`` until the session honoured or refused the edited approval."""
    deadline = time.monotonic() + EDIT_CHECK_SECONDS
    for item in sessions.follow(session_id, cursor):
        verdict = None if item is None else edit_verdict(item.event, interrupt_id)
        if verdict is not None:
            taken, why = verdict
            if not taken:
                raise CliError(f"the edited arguments were refused: {why}; interrupt {interrupt_id} is pending "
                               "again", hint="fix the arguments to fit the tool's parameters and approve again")
            console.print(f"interrupt {interrupt_id} approved with edited arguments; the call runs with them",
                          highlight=False)
            return
        if time.monotonic() > deadline:
            console.print(f"interrupt {interrupt_id} approved with edited arguments; the session has not checked "
                          f"them yet (see dex-agents sessions tail {session_id})", highlight=False)
            return


def deadline_of(deadline_ms: int | None, minutes: float | None) -> int:
    """``extend``'s new deadline in milliseconds from ``--deadline-ms`` or ``--minutes`` (exactly one)."""
    if (deadline_ms is None) == (minutes is None):
        raise CliError("give exactly one of --deadline-ms and --minutes", exit_code=2)
    return deadline_ms if deadline_ms is not None else max(1, round((minutes or 0) * 60_000))


def extend(server: str, flow_type: str | None, session_id: str, interrupt_id: str, deadline_ms: int,
           console: Console, *, credential: Credential | None = None) -> None:
    """Move a pending interrupt's deadline to ``deadline_ms`` from now."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        require_worker(sessions, session_id)
        moved = sessions.extend_interrupt_deadline(session_id, interrupt_id, deadline_ms)
        if not moved:
            raise CliError(f"the deadline of interrupt {interrupt_id} did not move: it is not pending, it never "
                           "expires, its deadline passed, or the new one is not later",
                           hint=f"see the pending interrupts with: dex-agents sessions show {session_id}")
        pending = [i for i in sessions.pending_interrupts(session_id) if i.interrupt_id == interrupt_id]
    deadline = pending[0].deadline if pending else None
    console.print(f"interrupt {interrupt_id} now expires at {deadline}", highlight=False)


def settled_text(status: str, output: str | None, message: str | None) -> str:
    """The ``output_or_message`` of ``resolve``'s options; ``CliError`` (exit 2) when they do not fit."""
    if status == "succeeded" and output is not None and message is None:
        return output
    if status == "failed" and message is not None and output is None:
        return message
    if status not in ("succeeded", "failed"):
        raise CliError(f"--status must be succeeded or failed, got {status!r}", exit_code=2)
    raise CliError(f"--status {status} takes {'--output' if status == 'succeeded' else '--message'} (only)",
                   hint="--output TEXT: what the tool returned; --message TEXT: why it failed", exit_code=2)


def resolve(server: str, flow_type: str | None, session_id: str, tool_call_id: str, status: str, text: str,
            resolver: str, reason: str | None, console: Console, *, credential: Credential | None = None) -> None:
    """Settle the unknown outcome of the call ``tool_call_id``."""
    if not resolver.strip():
        raise CliError("--resolver must name who settles the outcome (it is kept in the audit)", exit_code=2)
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        require_worker(sessions, session_id)
        sessions.resolve_tool_outcome(session_id, tool_call_id, status, text, resolver=resolver, reason=reason)
    console.print(f"tool call {tool_call_id} settled as {status} by {resolver}; the session's next model call is "
                  "told", highlight=False)
