"""Worker child for ``tests.cli.stand_in_demo`` (reads ``DEX_AGENTS_DEMO_STATE_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path

from dex_agents.testing import run_agent_worker_process
from tests.cli.stand_in_demo import build_support_flow

if __name__ == "__main__":
    run_agent_worker_process([build_support_flow(state_directory=Path(os.environ["DEX_AGENTS_DEMO_STATE_DIR"]))])
