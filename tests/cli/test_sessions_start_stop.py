"""``dex-agents sessions start`` and ``sessions stop`` as subprocesses against a running engine with a
Worker child serving the support agent: a session started from the command line runs its turn; a
stopped session says so in ``list`` and ``show``, and ``send`` to it fails at once with the reason."""

from __future__ import annotations

from pathlib import Path

from dex import FlowStatus

from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import run_cli
from tests.shell.agents import LOOKUP_ANSWER, LOOKUP_MESSAGE, WORKER_MODULE, build_support_flow, unique_flow_type, \
    worker_environment


def test_start_stop_and_a_stopped_session(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    killable_worker: KillableWorkerFactory, tmp_path: Path,
) -> None:
    flow_type = unique_flow_type("CliStartStop")
    flow = build_support_flow(tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    killable_worker(WORKER_MODULE, environment=worker_environment(tmp_path, flow_type))
    server = {"DEX_SERVER_ADDRESS": dex_engine.server_address}

    def cli(*arguments: str) -> tuple[int, str, str]:
        result = run_cli("sessions", *arguments, environment=server)
        return result.returncode, result.stdout, result.stderr

    status, out, err = cli("start", flow_type, "cli-start-1", LOOKUP_MESSAGE)
    assert status == 0, err
    assert out.startswith(f"started cli-start-1 ({flow_type}, run "), out
    state = sessions.wait_for_completed_turns("cli-start-1", 1)
    assert sessions.snapshot("cli-start-1").messages[-1].text == LOOKUP_ANSWER and state.failed_turn_count == 0

    status, out, err = cli("start", flow_type, "cli-start-1", LOOKUP_MESSAGE)
    assert (status, err.strip()) == (1, "dex-agents: error: session cli-start-1 exists already "
                                        "(hint: see it with: dex-agents sessions show cli-start-1)")

    status, out, err = cli("stop", "cli-start-1", "--reason", "customer closed the ticket")
    assert status == 0, err
    assert out.strip() == "stopped cli-start-1 (customer closed the ticket)"
    assert sessions.sessions.describe("cli-start-1").status is FlowStatus.CANCELED
    assert sessions.sessions.is_stopped("cli-start-1") is True

    status, out, err = cli("list", "--flow-type", flow_type)
    assert status == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("cli-start-1")]
    assert "stopped (canceled)" in line

    status, out, err = cli("show", "cli-start-1")
    assert status == 0, err
    assert "state: stopped (canceled), the agent was waiting_for_user_message when it stopped" in out
    assert LOOKUP_ANSWER in out  # the transcript is still read (a query-only RPC answers a stopped run)

    status, out, err = cli("send", "cli-start-1", "Are you there?")
    assert status == 1
    assert err.strip() == ("dex-agents: error: session cli-start-1 is stopped (its run is canceled); it takes no "
                           "more input (hint: start another session: dex-agents sessions start FLOW_TYPE SESSION_ID "
                           "TEXT)")

    status, out, err = cli("stop", "cli-start-1")
    assert (status, err.strip()) == (1, "dex-agents: error: session cli-start-1 is stopped (canceled) already "
                                        "(hint: see the sessions with: dex-agents sessions list)")
