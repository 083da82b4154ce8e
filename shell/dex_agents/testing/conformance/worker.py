"""Worker child of the conformance suite's crash tests: ``python -m dex_agents.testing.conformance.worker``.

Reads ``DEX_CONFORMANCE_SETUP`` (a ``ConformanceSetup`` as JSON), loads its adapter and serves the
Flows it builds (see ``run_agent_worker_process``).
"""

from __future__ import annotations

import os
from typing import Final

from dex_agents.testing.conformance.adapter import ConformanceSetup, build_conformance_flows, load_adapter
from dex_agents.testing.worker_process import run_agent_worker_process

SETUP_ENV: Final = "DEX_CONFORMANCE_SETUP"


def main() -> None:
    setup = ConformanceSetup.from_json(os.environ[SETUP_ENV])
    run_agent_worker_process(build_conformance_flows(load_adapter(setup.adapter), setup))


if __name__ == "__main__":
    main()
