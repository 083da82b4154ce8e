"""``python -m dex_agents.demo.worker``: the demo agent's Worker, the same as
``dex-agents worker --agent dex_agents.demo.support_agent:support_flow`` (server from
``DEX_SERVER_ADDRESS``; ``DEX_AGENTS_DEMO_STATE_DIR`` and ``DEX_AGENTS_DEMO_MODEL`` as
``support_flow`` reads them).
"""

from __future__ import annotations

import sys

from dex_agents.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["worker", "--agent", "dex_agents.demo.support_agent:support_flow", *sys.argv[1:]]))
