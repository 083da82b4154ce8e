"""Agent references that ``dex-agents worker`` must refuse (see ``test_worker_command``)."""

from __future__ import annotations

from pathlib import Path

from dex_agents.client import session_flow_definition
from dex_agents.shell import AgentSessionFlow
from tests.cli.stand_in_demo import build_support_flow

client_definition = session_flow_definition("Definition")


def twins() -> list[AgentSessionFlow]:
    return [build_support_flow(state_directory=Path("."), flow_type="Twin") for _ in range(2)]


def failing_factory() -> AgentSessionFlow:
    raise ValueError("no model configured")
