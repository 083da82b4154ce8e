"""Showing a sub-agent's child session inside its parent's: ``follow_children`` is a hook for the
parent's ``SessionDriver`` that, when a call of a sub-agent tool is deferred, follows the child session
that call starts (its events indented under the parent's, its approvals answered like the parent's)
until the child's turn ends; then the parent's events go on.

Invariants: each child session is followed once; a child's events are read through a client of its
own Flow type (a session's events are kept per Flow type); the child client is closed when its turn
ended. A child that does not appear within ``CHILD_WAIT_SECONDS`` is a ``CliError``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any, Final

from rich.console import Console

from dex_agents.cli.errors import CliError
from dex_agents.cli.session_driver import Approval, SessionDriver
from dex_agents.cli.view import EventView
from dex_agents.client import SessionClient
from dex_agents.pure.machine import events as kinds
from dex_agents.pure.values.session import AgentEvent, AgentInterrupt

__all__ = ["CHILD_WAIT_SECONDS", "IndentedConsole", "follow_children", "print_children"]

CHILD_WAIT_SECONDS: Final = 30.0
CHILD_PREFIX: Final = "    │ "


class IndentedConsole(Console):
    """A console that writes through ``parent``'s file with every line prefixed (streamed text too)."""

    def __init__(self, parent: Console, prefix: str = CHILD_PREFIX) -> None:
        super().__init__(file=parent.file, width=parent.width, force_terminal=parent.is_terminal,
                         no_color=parent.no_color, color_system="auto" if parent.color_system else None,
                         highlight=False)
        self.prefix = prefix
        self._at_line_start = True

    def print(self, *objects: Any, **options: Any) -> None:  # noqa: A003 - rich's name
        end = options.get("end", "\n")
        options.setdefault("soft_wrap", True)  # the terminal wraps: every line keeps its prefix
        if objects and isinstance(objects[0], str):
            text = objects[0].replace("\n", "\n" + self.prefix)
            objects = ((self.prefix if self._at_line_start else "") + text, *objects[1:])
        elif self._at_line_start and not objects:
            objects = (self.prefix.rstrip(),)
        super().print(*objects, **options)
        self._at_line_start = end.endswith("\n")

    def rule(self, title: Any = "", **options: Any) -> None:
        self.print(f"── child {title} ──", style=options.get("style"))


def follow_children(parent: SessionClient, session_id: str, sub_agent_tools: Collection[str], console: Console,
                    approver_for: Callable[[Console], Callable[[AgentInterrupt], Approval]]
                    ) -> Callable[[AgentEvent], None]:
    """The hook that follows each child session a deferred call of ``sub_agent_tools`` starts
    (``approver_for(console)``: how its approvals are answered, printing to the child's console)."""
    followed: set[str] = set()

    def new_child() -> tuple[str, str]:
        deadline = time.monotonic() + CHILD_WAIT_SECONDS
        while time.monotonic() < deadline:
            fresh = [entry for entry in parent.children(session_id) if entry.flow_id not in followed]
            if fresh:
                return fresh[0].flow_id, fresh[0].flow_type
            time.sleep(0.1)
        raise CliError(f"no child session of {session_id} started within {CHILD_WAIT_SECONDS:g} s",
                       hint="does a Worker serve the child agent's Flow type?")

    def hook(event: AgentEvent) -> None:
        if event.type != kinds.TOOL_CALL_DEFERRED or event.payload.get("tool_name") not in sub_agent_tools:
            return
        child_id, flow_type = new_child()
        followed.add(child_id)
        indented = IndentedConsole(console)
        indented.print(f"child session {child_id} ({flow_type})", style="bold")
        with SessionClient.connect(parent.server_address, flow_type) as child:
            SessionDriver(child, child_id, EventView(indented), approver_for(indented)).wait_for_turns(1)
        indented.print(f"child session ended: {parent.describe(child_id).status.name}", style="bold")

    return hook


def print_children(sessions: SessionClient, session_id: str, console: Console) -> None:
    """``sessions show``'s part on sub-agents: the session's child sessions (ID, agent's Flow type, Dex
    status) and the approvals they wait for, which ``sessions approve`` through this session resolves."""
    children = sessions.children(session_id)
    console.print("child sessions:", style="bold")
    for entry in children:
        console.print(f"  {entry.flow_id} ({entry.flow_type}) {entry.status.name.lower()}", markup=False,
                      highlight=False)
    if not children:
        console.print("  none", highlight=False)
        return
    for approval in sessions.pending_approvals(session_id):
        if approval.session_id != session_id:
            interrupt = approval.interrupt
            console.print(f"  pending in {approval.session_id}: {interrupt.interrupt_id} "
                          f"{interrupt.tool_name}({interrupt.arguments})", markup=False, highlight=False)
