"""Worker child for ``dex-agents chat --agent module:attribute``: serves that agent's Flow.

Reads the agent reference from ``DEX_AGENTS_CLI_AGENT`` and the server from ``DEX_SERVER_ADDRESS``.
"""

from __future__ import annotations

import os

from dex_agents.cli.chat import AGENT_ENV, load_agent
from dex_agents.testing.worker_process import run_agent_worker_process

if __name__ == "__main__":
    run_agent_worker_process([load_agent(os.environ[AGENT_ENV])])
