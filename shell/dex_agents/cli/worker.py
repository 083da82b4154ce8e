"""``dex-agents worker``: serve agents' sessions in the foreground, the way production runs them.

Invariants:
    * Every ``--agent`` is loaded, and the Flows checked, before anything connects; a bad reference
      exits 2 with what was wrong (and an install hint when a framework's extra is missing).
    * The ready line is printed once the Worker is registered; SIGTERM or SIGINT drains the running
      tasks, prints ``dex-agents worker stopped (<signal>)`` and exits 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dex import Credential

from dex_agents.cli.errors import EXTRA_OF_MODULE, CliError, install_hint
from dex_agents.serving.agents import AgentReferenceError, load_agents
from dex_agents.serving.worker import WorkerCredentialError, check_servable, run_worker
from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["load_agent_flows", "serve"]


def load_agent_flows(references: Sequence[str], *, app_dir: Path | None = None) -> list[AgentSessionFlow]:
    """The Flows of every ``--agent`` reference, or a ``CliError`` (exit 2) naming the bad one."""
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
    flows = load_agent_flows(references, app_dir=app_dir)
    try:
        check_servable(flows, task_slots)
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from error
    try:
        run_worker(flows, server_address, task_slots=task_slots, credential=credential,
                   stop_on_stdin_eof=stop_on_stdin_eof)
    except WorkerCredentialError as error:
        hint = ("pass the server's token: --token-file FILE" if error.missing
                else "--token-file must hold the server's token")
        raise CliError(str(error), hint=hint + " (the file's UTF-8 text, trimmed)") from error
    return 0
