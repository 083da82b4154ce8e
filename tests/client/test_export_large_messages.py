"""A session holding a 2 MB message exports whole (issue 29, finding 1): the export's reads of committed
state came back in one gRPC answer above gRPC's 4 MiB default and failed with ``Received message larger
than max``; they now go through channels that receive large messages, as the session client's do."""

from __future__ import annotations

import uuid
from pathlib import Path

from dex_agents.client import SessionClient
from dex_agents.shell import create_agent_session_flow
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory
from tests.shell.agents import unique_flow_type
from tests.shell.scenario_flows import scripted_runner

TWO_MEGABYTES = "x" * 2_000_000


def test_a_session_with_a_2_mb_message_exports_whole(dex_engine: PrivateDexEngine,
                                                     agent_environment: AgentEnvironmentFactory,
                                                     tmp_path: Path) -> None:
    flow_type = unique_flow_type("LargeExport")
    agent_environment([create_agent_session_flow(scripted_runner(tmp_path, {}), flow_type)])
    session_id = f"s-{uuid.uuid4().hex[:12]}"
    with SessionClient.connect(dex_engine.server_address, flow_type, timeout=60) as sessions:
        sessions.start(session_id, TWO_MEGABYTES)
        sessions.wait_for_completed_turns(session_id, 1)
        document = sessions.export(session_id)
    assert document.snapshot.messages[0].text == TWO_MEGABYTES
    state = document.snapshot.state
    assert state is not None and state.completed_turn_count == 1
