"""Driving a session turn by turn from a terminal: follow its events, answer its approvals.

Invariants:
    * Every ``interrupt_raised`` event is answered once, through ``approver``, with the committed
      pending interrupt (so the prompt shows the call's arguments); an interrupt that is no longer
      pending when its event is read (answered elsewhere) is skipped.
    * ``wait_for_turns(n)`` returns once ``n`` distinct turns of the session ended (completed or failed)
      in its events and the last of them ended in its committed state too (the end event is written
      before that commit), so what the turn stored can be read.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from rich.console import Console
from rich.prompt import Confirm, Prompt

from dex_agents.cli.errors import CliError
from dex_agents.cli.follow import follow_events
from dex_agents.cli.view import EventView
from dex_agents.client import SessionClient, turn_ended
from dex_agents.pure.machine import events as kinds
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt

__all__ = ["Approval", "SessionDriver", "auto_approver", "terminal_approver"]

_PENDING_READ_SECONDS: Final = 10.0
COMMIT_WAIT_SECONDS: Final = 60.0
"""How long a turn's end may take to commit after its end event was read."""
NO_TTY_HINT: Final = "stdin is not a terminal, so approvals cannot be asked; rerun with --auto-approve"


@dataclass(frozen=True)
class Approval:
    """An answer to an interrupt."""

    approved: bool
    rejection_message: str | None = None


def auto_approver(console: Console) -> Callable[[AgentInterrupt], Approval]:
    """Approve every call, saying so."""
    def approve(interrupt: AgentInterrupt) -> Approval:
        console.print(f"  auto-approved {interrupt.tool_name}({interrupt.arguments})", style="magenta",
                      markup=False, highlight=False)
        return Approval(approved=True)
    return approve


def terminal_approver(console: Console) -> Callable[[AgentInterrupt], Approval]:
    """Ask in the terminal; fails with a one-line hint when stdin is not a terminal."""
    def ask(interrupt: AgentInterrupt) -> Approval:
        if not sys.stdin.isatty():
            raise CliError("an approval is needed but " + NO_TTY_HINT.split(", so ")[0],
                           hint="rerun with --auto-approve", exit_code=2)
        console.print(f"  {interrupt.tool_name}({interrupt.arguments})", style="bold", markup=False,
                      highlight=False)
        if Confirm.ask(f"  Approve {interrupt.tool_name}?", console=console, default=False):
            return Approval(approved=True)
        reason = Prompt.ask("  Reason for the model", console=console, default="rejected by the user")
        return Approval(approved=False, rejection_message=reason)
    return ask


class SessionDriver:
    """One session followed live; answers approvals and runs hooks on events."""

    def __init__(self, sessions: SessionClient, session_id: str, view: EventView,
                 approver: Callable[[AgentInterrupt], Approval], *,
                 hook: Callable[[AgentEvent], None] = lambda event: None,
                 check: Callable[[], None] = lambda: None, idle_timeout: float | None = 120.0) -> None:
        self.sessions = sessions
        self.session_id = session_id
        self.view = view
        self._approver = approver
        self._hook = hook
        self._check = check
        self._idle_timeout = idle_timeout
        self._answered: set[str] = set()
        self.cursor = ""

    def wait_for_turns(self, count: int) -> None:
        """Follow events until ``count`` turns ended."""
        self.cursor = follow_events(
            self.sessions, self.session_id, self._on_event, cursor=self.cursor,
            until=lambda: len(self.view.ended_turns) >= count, check=self._check, idle_timeout=self._idle_timeout)
        self.view.finish_line()
        last = list(self.view.ended_turns)[-1]
        if last.startswith("turn-"):
            self.sessions.wait_for(self.session_id, turn_ended(last), timeout=COMMIT_WAIT_SECONDS)

    def _on_event(self, event: AgentEvent) -> None:
        self.view.show(event)
        if event.type == kinds.INTERRUPT_RAISED:
            interrupt_id = event.payload.get("interrupt_id")
            if isinstance(interrupt_id, str) and interrupt_id not in self._answered:
                self._answered.add(interrupt_id)
                self._answer(interrupt_id)
        self._hook(event)

    def _answer(self, interrupt_id: str) -> None:
        deadline = time.monotonic() + _PENDING_READ_SECONDS
        while True:
            pending = next((interrupt for interrupt in self.sessions.pending_interrupts(self.session_id)
                            if interrupt.interrupt_id == interrupt_id), None)
            if pending is not None:
                break
            if time.monotonic() >= deadline:
                return  # answered elsewhere, or past its deadline
            time.sleep(0.05)
        self.view.finish_line()
        answer = self._approver(pending)
        accepted = self.sessions.resolve_interrupt(self.session_id, interrupt_id, answer.approved,
                                                   answer.rejection_message)
        if not accepted:
            self.view.console.print(f"  interrupt {interrupt_id} was no longer pending", style="yellow")
