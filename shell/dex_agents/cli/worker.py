"""``dex-agents worker``: serve agents' sessions in the foreground, the way production runs them.

Invariants:
    * Every ``--agent`` is loaded, and the Flows checked, before anything connects; a bad reference
      exits 2 with what was wrong (and an install hint when a framework's extra is missing).
    * While it starts, progress lines ``dex-agents worker: <step> (at <seconds> s)`` go to stdout, in
      this order: starting, loading the agents, connecting, registered; the seconds count from the
      process's start (where the system says it; else from the command's). None of them starts with
      the ready line's prefix.
    * The ready line is printed once the Worker is registered; SIGTERM or SIGINT drains the running
      tasks, prints ``dex-agents worker stopped (<signal>)`` and exits 0.
    * This module imports only the light parts of the command line: the Worker's runtime (the Dex
      SDK, ``dex_agents.shell``) and the agents are imported by ``serve``, after its first line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from dex_agents.cli.errors import EXTRA_OF_MODULE, CliError, install_hint

if TYPE_CHECKING:
    from dex import Credential

    from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["PROGRESS_PREFIX", "StartProgress", "load_agent_flows", "serve"]

PROGRESS_PREFIX: Final = "dex-agents worker: "
"""How each progress line of a starting Worker begins."""


def _process_age() -> float | None:
    """Seconds since this process started, where ``/proc`` says it (Linux); else ``None``."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat_file:
            fields = stat_file.read().rpartition(")")[2].split()
        with open("/proc/uptime", encoding="ascii") as uptime_file:
            uptime = float(uptime_file.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class StartProgress:
    """Prints a starting Worker's progress lines, each with the seconds since the process started."""

    def __init__(self) -> None:
        self._origin = time.monotonic() - (_process_age() or 0.0)

    def __call__(self, step: str) -> None:
        print(f"{PROGRESS_PREFIX}{step} (at {time.monotonic() - self._origin:.1f} s)", flush=True)


def load_agent_flows(references: Sequence[str], *, app_dir: Path | None = None) -> list[AgentSessionFlow]:
    """The Flows of every ``--agent`` reference, or a ``CliError`` (exit 2) naming the bad one."""
    from dex_agents.serving.agents import AgentReferenceError, load_agents

    if not references:
        raise CliError("no agent given", hint="pass --agent MODULE:ATTRIBUTE, e.g. "
                       "--agent dex_agents.demo.support_agent:support_flow", exit_code=2)
    flows: list[AgentSessionFlow] = []
    for reference in references:
        try:
            flows.extend(load_agents(reference, app_dir=app_dir))
        except AgentReferenceError as error:
            root = (error.missing_module or "").partition(".")[0]
            extra = EXTRA_OF_MODULE.get(root)
            raise CliError(f"--agent: {error}", hint=None if extra is None else install_hint(extra),
                           exit_code=2) from error
    return flows


def serve(references: Sequence[str], server_address: str, *, task_slots: int, app_dir: Path | None,
          credential: Credential | None, stop_on_stdin_eof: bool) -> int:
    """Serve the agents until SIGTERM or SIGINT; returns the exit status."""
    progress = StartProgress()
    progress("starting: importing the Worker's runtime")
    from dex_agents.serving.worker import WorkerCredentialError, check_servable, run_worker

    progress(f"loading the agents {', '.join(references)}")
    flows = load_agent_flows(references, app_dir=app_dir)
    try:
        check_servable(flows, task_slots)
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from error
    try:
        run_worker(flows, server_address, task_slots=task_slots, credential=credential,
                   stop_on_stdin_eof=stop_on_stdin_eof, progress=progress)
    except WorkerCredentialError as error:
        hint = ("pass the server's token: --token-file FILE" if error.missing
                else "--token-file must hold the server's token")
        raise CliError(str(error), hint=hint + " (the file's UTF-8 text, trimmed)") from error
    return 0
