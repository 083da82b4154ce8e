"""The golden sessions' Worker child: ``python -m tests.golden_sessions.worker_main`` (see ``agent``)."""

from __future__ import annotations

from dex_agents.testing import run_agent_worker_process
from tests.golden_sessions.agent import golden_flow_from_environment

if __name__ == "__main__":
    run_agent_worker_process([golden_flow_from_environment()])
