"""``dex-agents sessions cancel``: cancel a session's running turn, or one tool call of it (the RPCs
``cancel_turn`` and ``cancel_tool_call``; needs a Worker). Without ``--tool-call`` the running turn's ID
is read from the session's state first, so the operator names only the session."""

from __future__ import annotations

from typing import Final

from dex import Credential
from rich.console import Console

from dex_agents.cli.connection import open_session, require_worker
from dex_agents.cli.errors import CliError

DEFAULT_REASON: Final = "cancelled from the command line"
"""The reason the model reads when ``--reason`` is not given."""


def cancel(server: str, flow_type: str | None, session_id: str, tool_call_id: str | None, reason: str | None,
           console: Console, *, credential: Credential | None = None) -> None:
    """Cancel the running turn (``tool_call_id`` ``None``) or that one open call of it."""
    why = DEFAULT_REASON if reason is None or not reason.strip() else reason
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        require_worker(sessions, session_id)
        if tool_call_id is not None:
            what = f"tool call {tool_call_id}"
            accepted = sessions.cancel_tool_call(session_id, tool_call_id, why)
        else:
            state = sessions.state(session_id)
            turn_id = None if state is None else state.current_turn_id
            if turn_id is None:
                raise CliError(f"session {session_id} runs no turn: there is nothing to cancel",
                               hint=f"see it with: dex-agents sessions show {session_id}")
            what = turn_id
            accepted = sessions.cancel_turn(session_id, turn_id, why)
    if not accepted:
        raise CliError(f"{what} of {session_id} is not running (it ended, or is being cancelled already)",
                       hint=f"see it with: dex-agents sessions show {session_id}")
    console.print(f"cancelled {what} of {session_id}: {why}", highlight=False, markup=False)


__all__ = ["DEFAULT_REASON", "cancel"]
