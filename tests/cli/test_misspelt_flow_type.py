"""Issue 29, finding 3: a misspelt session (Flow) type says so early on the command line. Before,
``sessions start`` of a type no Worker serves printed only "started" (the session never runs) and
``sessions list --flow-type`` of a type nobody uses printed "no X sessions"."""

from __future__ import annotations

import uuid

from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import run_cli
from tests.shell.agents import unique_flow_type


def test_start_of_a_type_no_worker_serves_warns_and_list_names_the_types_in_use(dex_engine: PrivateDexEngine) -> None:
    server = {"DEX_SERVER_ADDRESS": dex_engine.server_address}
    misspelt = unique_flow_type("SupportAgnet")
    session_id = f"typo-{uuid.uuid4().hex[:8]}"

    started = run_cli("sessions", "start", misspelt, session_id, "hello", environment=server)
    assert started.returncode == 0, started.stderr  # the session is started: a Worker started later runs it
    first, warning = started.stdout.strip().splitlines()
    assert first.startswith(f"started {session_id} ({misspelt}, run ")
    assert warning == (f"warning: no Worker serving {misspelt} answered on {dex_engine.server_address} within 1 s; "
                       f"the session waits for one (hint: start a Worker serving {misspelt} (dex-agents worker "
                       f"--agent MODULE:ATTRIBUTE --server {dex_engine.server_address}), or check the spelling of "
                       f"the Flow type)")

    unused = unique_flow_type("NobodyUsesThis")
    listed = run_cli("sessions", "list", "--flow-type", unused, environment=server)
    assert listed.returncode == 0, listed.stderr
    text = " ".join(listed.stdout.split())
    assert text.startswith(f"no {unused} sessions: no session of that Flow type exists on "
                           f"{dex_engine.server_address} (is it spelt right? Flow types with sessions: "), text
    assert misspelt in text

    stopped = run_cli("sessions", "stop", session_id, environment=server)
    assert stopped.returncode == 0, stopped.stderr
