"""``dex_agents.client.SessionClient``: an application's sessions through a runner-less definition,
against a Worker that serves the agent's real Flow."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from dex import FlowNotActiveOrNotFoundError, FlowNotFoundError

from dex_agents.client import (
    NoWorkerError,
    SessionClient,
    SessionNotFoundError,
    SessionOverview,
    session_flow_definition,
    turns_ended,
)
from pyrsistent import pvector
from dex_agents.pure.values.session import AgentStatus, MessageRole
from dex_agents.serving.worker import check_servable
from dex_agents.testing import AgentSessionTestClient
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory
from tests.shell.agents import LOOKUP_ANSWER, LOOKUP_MESSAGE, REFUND_ANSWER, REFUND_MESSAGE, build_support_flow, unique_flow_type


def _session_id() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


def test_a_definition_has_the_flows_schema_rpcs_and_codecs_but_serves_nothing(tmp_path: Path) -> None:
    served = build_support_flow(tmp_path, flow_type="Definitions")
    definition = session_flow_definition("Definitions")
    assert served.serves_sessions and not definition.serves_sessions
    assert definition.get_flow_type() == "Definitions"
    mine, theirs = definition.get_persistence_schema(), served.get_persistence_schema()
    assert [d.name for d in mine.attributes] == [d.name for d in theirs.attributes]
    assert [d.name for d in mine.channels] == [d.name for d in theirs.channels]
    assert [d.name for d in mine.streams] == [d.name for d in theirs.streams]
    with pytest.raises(ValueError, match="Client's definition"):
        check_servable([definition], 8)
    with pytest.raises(ValueError, match="non-blank"):
        session_flow_definition(" ")


def test_an_application_runs_a_session_with_approval_paging_and_events(
        dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, tmp_path: Path) -> None:
    flow_type = unique_flow_type("ClientApp")
    agent_environment([build_support_flow(tmp_path, flow_type=flow_type)])  # the Worker, in this process
    session_id = _session_id()
    with SessionClient.connect(dex_engine.server_address, flow_type, timeout=30) as sessions:
        assert not sessions.flow.serves_sessions
        sessions.start(session_id, REFUND_MESSAGE)
        interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
        assert sessions.wait_for_status(session_id, AgentStatus.RUNNING_TOOLS).current_turn_id is not None
        sessions.check_worker(session_id)
        assert sessions.approve(session_id, interrupt.interrupt_id) is True
        assert sessions.approve(session_id, interrupt.interrupt_id) is False  # no longer pending
        sessions.wait_for_completed_turns(session_id, 1)

        first = sessions.events(session_id)
        assert not first.missed_events and first.cursor == first.events[-1].cursor
        assert [item.event.type for item in first.events][:1] == ["turn_started"]
        assert sessions.events(session_id, first.cursor).events == ()

        assert sessions.send(session_id, LOOKUP_MESSAGE) is True
        assert sessions.send(session_id, "   ") is False
        state = sessions.wait_for(session_id, turns_ended(2))
        assert state.completed_turn_count == 2

        later = sessions.events(session_id, first.cursor)
        assert later.events and not later.missed_events
        assert later.events[0].event.type == "turn_started"
        assert [item.cursor for item in later.events] == [item.cursor for item in sessions.events(session_id).events
                                                          ][len(first.events):]
        assert sessions.next_event(session_id, later.cursor, wait=1) is None
        with pytest.raises(ValueError, match="'not-a-cursor' is no cursor of the events of session"):
            sessions.events(session_id, "not-a-cursor")  # issue 29, finding 10: it read from the first event

        snapshot = sessions.snapshot(session_id)
        assert snapshot.messages[-1].text == LOOKUP_ANSWER and REFUND_ANSWER in [m.text for m in snapshot.messages]
        newest = sessions.messages(session_id, limit=2)
        older = sessions.messages(session_id, before_sequence=newest.next_before_sequence, limit=200)
        assert [m.sequence for m in (*older.messages, *newest.messages)] == [m.sequence for m in snapshot.messages]
        assert older.next_before_sequence is None and snapshot.messages[0].role is MessageRole.USER
        assert session_id in [entry.flow_id for entry in sessions.list_sessions()]
        assert sessions.describe(session_id).flow_type == flow_type
        sessions.stop(session_id)


def test_without_a_worker_check_worker_fails_and_the_waits_still_read(dex_engine: PrivateDexEngine) -> None:
    flow_type = unique_flow_type("ClientNoWorker")
    session_id = _session_id()
    with SessionClient.connect(dex_engine.server_address, flow_type) as sessions:
        sessions.start(session_id, "hello")  # accepted by the server; no Worker runs it
        with pytest.raises(NoWorkerError) as raised:
            sessions.check_worker(session_id)
        assert (raised.value.flow_type, raised.value.seconds) == (flow_type, 1)
        assert str(raised.value) == f"no Worker serving {flow_type} answered on {dex_engine.server_address} within 1 s"
        assert sessions.state(session_id) is None and list(sessions.pending_interrupts(session_id)) == []
        assert sessions.overview(session_id) == SessionOverview(state=None, pending_interrupts=pvector(), usage=None)
        # Issue 29, finding 3: a wait that times out while no Worker serves the Flow type says so (a
        # misspelt type looks the same), instead of a bare TimeoutError; it is still a TimeoutError.
        with pytest.raises(NoWorkerError, match=f"session '{session_id}': timed out after 0.2 s waiting for 1 "
                                                f"completed turn\\(s\\); last value seen: None; no Worker serving "
                                                f"{flow_type} answered .* check the spelling of the Flow type"):
            sessions.wait_for_completed_turns(session_id, 1, timeout=0.2)
        with pytest.raises(SessionNotFoundError) as unknown:  # also Dex's two errors, for existing handlers
            sessions.check_worker("no-such-session")
        assert isinstance(unknown.value, FlowNotActiveOrNotFoundError | FlowNotFoundError)
        with pytest.raises(FlowNotFoundError):
            sessions.describe("no-such-session")
        sessions.stop(session_id)


def test_bad_arguments_are_clear_errors(dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        SessionClient.connect(dex_engine.server_address, "Whatever", timeout=0)
    with SessionClient.connect(dex_engine.server_address, "Whatever") as sessions:
        other = build_support_flow(tmp_path, flow_type="NotInTheRegistry")
        with pytest.raises(ValueError, match="does not hold this 'NotInTheRegistry' Flow"):
            SessionClient(sessions.client, other)
        with pytest.raises(ValueError, match="does not hold"):
            AgentSessionTestClient(sessions.client, other)
    with SessionClient.connect(dex_engine.server_address, "It's") as quoted:
        with pytest.raises(ValueError, match="quote"):
            quoted.list_sessions()


def test_the_testing_client_is_the_product_client_underneath(
        agent_environment: AgentEnvironmentFactory, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type("ClientThin"))
    environment = agent_environment([flow])
    with environment.sessions(flow) as test_client:
        assert isinstance(test_client.sessions, SessionClient)
        assert test_client.sessions.client is environment.client and test_client.sessions.flow is flow
        test_client.start_session("thin-1", LOOKUP_MESSAGE)
        assert test_client.wait_for_completed_turns("thin-1", 1) == test_client.sessions.state("thin-1")
        assert test_client.events("thin-1") == [item.event for item in test_client.sessions.events("thin-1").events]


def test_compact_asks_the_next_model_call_to_compact_and_a_flow_without_compaction_refuses(
        dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, tmp_path: Path) -> None:
    from dex import FlowConfig, StartFlowOptions, WorkerInvocationError

    from dex_agents.shell import create_agent_session_flow
    from tests.shell.scenario_flows import scripted_runner

    compacting, plain = unique_flow_type("Compacting"), unique_flow_type("NeverCompacts")
    agent_environment([create_agent_session_flow(scripted_runner(tmp_path, {}), compacting),
                       create_agent_session_flow(scripted_runner(tmp_path, {}), plain, compaction=None)])
    session_id = _session_id()
    with SessionClient.connect(dex_engine.server_address, compacting, timeout=30) as sessions:
        sessions.start(session_id, "one")
        sessions.wait_for_completed_turns(session_id, 1)
        assert sessions.compact(session_id) is False  # one turn, kept whole
        for count, text in enumerate(("two", "three"), start=2):
            sessions.send(session_id, text)
            sessions.wait_for_completed_turns(session_id, count)
        assert sessions.compact(session_id) is True
        sessions.send(session_id, "four")
        sessions.wait_for_completed_turns(session_id, 4)
        assert [m.text for m in sessions.snapshot(session_id).messages][-1] == "echo: four (3 messages)"
    with SessionClient.connect(dex_engine.server_address, plain, timeout=30) as sessions:
        options = StartFlowOptions(config_override=FlowConfig(continue_as_new_threshold=50))
        other = _session_id()
        sessions.start(other, "one", options=options)
        sessions.wait_for_completed_turns(other, 1)
        with pytest.raises(WorkerInvocationError, match="compaction=None"):
            sessions.compact(other)
