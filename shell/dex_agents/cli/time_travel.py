"""``dex-agents sessions rewind`` and ``sessions fork``: time travel from the command line.

Invariants:
    * ``rewind`` needs a Worker (the session records the rewind) and checks for one first. It prints
      what the rewind would remove and, when a removed tool call may have had an effect (a side effect
      a rewind does not undo), asks before changing anything (``--yes`` does not ask; no answer, or
      not ``y``, changes nothing, exit 1). Then it prints the recorded rewind: every such tool call
      with its effect class, status and idempotency key.
    * ``fork`` needs only the server; it prints the new session and run.
    * A turn a session has no point for (not ended, nothing after it, before a continue-as-new) is
      one error line naming why, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dex import Credential
from rich.console import Console

from dex_agents.cli.connection import open_session, require_worker
from dex_agents.cli.errors import CliError
from dex_agents.client import SessionRewindError
from dex_agents.pure.values.time_travel import RewoundToolCall

__all__ = ["fork", "rewind", "tool_call_lines"]


def tool_call_lines(calls: Sequence[RewoundToolCall]) -> list[str]:
    """One line per tool call: name, effect class, status, idempotency key (and its turn and ID)."""
    return [f"  {call.tool_name}  {call.effect.value}  {call.status.value}  key {call.idempotency_key}  "
            f"({call.turn_id}, {call.tool_call_id})" for call in calls]


def _print(console: Console, lines: Sequence[str]) -> None:
    for line in lines:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def rewind(server: str, flow_type: str | None, session_id: str, to_turn: int, reason: str | None, console: Console, *,
           yes: bool, confirm: Callable[[str], bool], credential: Credential | None = None) -> None:
    """Rewind ``session_id`` to right after turn ``to_turn`` (see the module docstring); ``confirm``
    asks the operator (``typer.confirm``)."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        require_worker(sessions, session_id)
        try:
            preview = sessions.rewind_preview(session_id, to_turn, reason)
            if preview.tool_calls and not yes:
                _print(console, [f"rewinding {session_id} to right after turn {to_turn} removes "
                                 f"{preview.removed_turn_count} turn(s); these tool calls may have had effects, "
                                 f"which a rewind does not undo:", *tool_call_lines(preview.tool_calls)])
                if not confirm("rewind?"):
                    raise CliError("not rewound: nothing changed", hint="pass --yes to rewind without asking")
            audit = sessions.rewind(session_id, to_turn, reason)
        except SessionRewindError as error:
            raise CliError(f"cannot rewind {session_id}: {error}",
                           hint=f"see its turns with: dex-agents sessions show {session_id}") from error
    head = (f"rewound {session_id} to right after turn {audit.to_turn} (removed {audit.removed_turn_count} "
            f"turn(s); the replaced run {audit.previous_run_id} keeps them: dex-agents sessions export {session_id})")
    if not audit.tool_calls:
        _print(console, [head, "no removed tool call may have had an effect"])
        return
    _print(console, [head, f"{len(audit.tool_calls)} removed tool call(s) may have had effects, not undone:",
                     *tool_call_lines(audit.tool_calls)])


def fork(server: str, flow_type: str | None, session_id: str, at_turn: int, new_session_id: str, console: Console, *,
         credential: Credential | None = None) -> None:
    """Start ``new_session_id`` from ``session_id``'s conversation right after turn ``at_turn``."""
    with open_session(server, session_id, flow_type=flow_type, credential=credential) as sessions:
        try:
            run_id = sessions.fork(session_id, at_turn, new_session_id)
        except SessionRewindError as error:
            raise CliError(f"cannot fork {session_id}: {error}",
                           hint=f"see its turns with: dex-agents sessions show {session_id}") from error
    _print(console, [f"forked {session_id} after turn {at_turn} into {new_session_id} (run {run_id}); "
                     f"both go on independently"])
