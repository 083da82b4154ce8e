"""The support agent's Worker child: ``python -m tests.shell.worker_main`` (see ``tests.shell.agents``).

Start it with the ``killable_worker`` fixture (or ``KillableWorkerProcess.start``) and
``worker_environment(state_directory, flow_type)``; it prints the ready line once registered and
serves until SIGTERM (graceful drain, exit 0), SIGKILL, or the end of its stdin.
"""

from __future__ import annotations

from dex_agents.testing import run_agent_worker_process
from tests.shell.agents import support_flow_from_environment

if __name__ == "__main__":
    run_agent_worker_process([support_flow_from_environment()])
