"""``SessionClient.stop(session_id, reason)`` and a stopped session: the stop reason reaches Dex, the
session reads as stopped (Dex's Flow status), its committed values and snapshot stay readable, and a
send or an approval fails at once with ``SessionStoppedError`` instead of waiting."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dex import FlowNotFoundError, FlowStatus, StopFlowOptions, StopType
from dex.dexpb import dex_pb2 as pb

from dex_agents.client import SessionStoppedError
from dex_agents.client.stopped import is_stopped_status, stopped_label
from dex_agents.pure.values.session import AgentStatus
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.agents import LOOKUP_ANSWER, LOOKUP_MESSAGE, build_support_flow, unique_flow_type
from tests.shell.scenario_flows import raw_history


def test_a_stopped_session_refuses_input_at_once_and_stays_readable(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type("Stopped"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow).sessions
    sessions.start("stop-1", LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns("stop-1", 1)
    assert sessions.is_stopped("stop-1") is False

    sessions.stop("stop-1", "the customer closed the ticket")
    assert sessions.describe("stop-1").status is FlowStatus.CANCELED and sessions.is_stopped("stop-1") is True
    closed = [event.flow_closed for event in raw_history(environment.server_address, "stop-1")
              if event.WhichOneof("payload") == "flow_closed"]
    assert [event.flow_status for event in closed] == [pb.FLOW_STATUS_CANCELED]  # Dex keeps no reason in history

    state = sessions.state("stop-1")
    assert state is not None and state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    assert sessions.snapshot("stop-1").messages[-1].text == LOOKUP_ANSWER

    began = time.monotonic()
    with pytest.raises(SessionStoppedError) as refused:
        sessions.send("stop-1", "Are you there?")
    assert time.monotonic() - began < sessions.timeout / 2, "refused at once, not after the send's retries"
    assert (refused.value.session_id, refused.value.status) == ("stop-1", FlowStatus.CANCELED)
    assert str(refused.value) == "session stop-1 is stopped (its run is canceled); it takes no more input"
    with pytest.raises(SessionStoppedError):
        sessions.approve("stop-1", "no-such-interrupt")


def test_stop_takes_options_as_before_and_unknown_sessions_keep_dexs_error(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type("StopOptions"))
    sessions = agent_sessions(agent_environment([flow]), flow).sessions
    sessions.start("stop-2")
    sessions.stop("stop-2", StopFlowOptions(type=StopType.TERMINATE))
    assert sessions.describe("stop-2").status is FlowStatus.TERMINATED
    with pytest.raises(SessionStoppedError):
        sessions.send("stop-2", "hello")
    with pytest.raises(FlowNotFoundError):
        sessions.is_stopped("no-such-session")


@pytest.mark.parametrize(("status", "label"), [
    (FlowStatus.RUNNING, "running"), (FlowStatus.CONTINUED_AS_NEW, "continued_as_new"),
    (FlowStatus.CANCELED, "stopped (canceled)"), (FlowStatus.TERMINATED, "stopped (terminated)"),
    (FlowStatus.FAILED, "stopped (failed)"), (FlowStatus.COMPLETED, "stopped (completed)"),
])
def test_which_statuses_are_stopped(status: FlowStatus, label: str) -> None:
    assert stopped_label(status) == label
    assert is_stopped_status(status) is label.startswith("stopped")
