"""Worker child of the demo crash test: serves the Flow of the demo agent ``dex_agents.demo.<TEST_DEMO_MODULE>``.

Reads ``TEST_DEMO_MODULE``, ``TEST_STATE_DIR`` and ``TEST_FLOW_TYPE``; the refund waits at its gate
when ``DEX_AGENTS_DEMO_CRASH_GATE=1``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from dex_agents.testing import run_agent_worker_process

if __name__ == "__main__":
    demo = importlib.import_module(f"dex_agents.demo.{os.environ['TEST_DEMO_MODULE']}")
    run_agent_worker_process([demo.build_support_flow(state_directory=Path(os.environ["TEST_STATE_DIR"]),
                                                      flow_type=os.environ["TEST_FLOW_TYPE"])])
