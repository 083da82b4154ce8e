"""Worker child of the adapter crash test: serves the demo support agent's Flow.

Reads ``TEST_STATE_DIR`` and ``TEST_FLOW_TYPE``; the refund waits at its gate when
``DEX_AGENTS_DEMO_CRASH_GATE=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dex_agents.demo.support_agent import build_support_flow
from dex_agents.testing import run_agent_worker_process

if __name__ == "__main__":
    run_agent_worker_process([build_support_flow(state_directory=Path(os.environ["TEST_STATE_DIR"]),
                                                 flow_type=os.environ["TEST_FLOW_TYPE"])])
