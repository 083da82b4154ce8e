"""Worker child of the OpenAI Agents demo crash test: serves the demo agent's Flow.

Reads ``TEST_STATE_DIR`` and ``TEST_FLOW_TYPE``; the refund waits at its gate when
``DEX_AGENTS_DEMO_CRASH_GATE=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

from agents import set_tracing_disabled

from dex_agents.demo.openai_agents_agent import build_support_flow
from dex_agents.testing import run_agent_worker_process

if __name__ == "__main__":
    set_tracing_disabled(True)
    run_agent_worker_process([build_support_flow(state_directory=Path(os.environ["TEST_STATE_DIR"]),
                                                 flow_type=os.environ["TEST_FLOW_TYPE"])])
