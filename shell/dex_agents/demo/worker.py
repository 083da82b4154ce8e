"""Worker child of the demo: ``python -m dex_agents.demo.worker``.

Reads ``DEX_SERVER_ADDRESS``, ``DEX_AGENTS_DEMO_STATE_DIR`` and ``DEX_AGENTS_DEMO_MODEL`` (optional).
"""

from __future__ import annotations

import os
from pathlib import Path

from dex_agents.demo.support_agent import build_support_flow
from dex_agents.testing import run_agent_worker_process


def main() -> None:
    state_directory = os.environ.get("DEX_AGENTS_DEMO_STATE_DIR")
    if not state_directory:
        raise SystemExit("DEX_AGENTS_DEMO_STATE_DIR is not set")
    model = os.environ.get("DEX_AGENTS_DEMO_MODEL") or None
    run_agent_worker_process([build_support_flow(model=model, state_directory=Path(state_directory))])


if __name__ == "__main__":
    main()
