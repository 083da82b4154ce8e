"""Reads and bad input on an in-process Worker: ``list_agent_messages`` paging and limit clamping, a
malformed page request, the snapshot before the session started, an unknown session, and a blank
initial message."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from dex import FlowNotActiveOrNotFoundError
from pyrsistent import pvector

from dex_agents.pure.values.rpc import AgentMessagePage, AgentSnapshot, ListAgentMessagesInput
from dex_agents.pure.values.runner import AgentTurnOutcome, TurnCompleted
from dex_agents.pure.values.session import AgentStatus, AgentUsage, FrameworkMessage, MessageRole
from dex_agents.shell import AgentTurnContext, create_agent_session_flow
from dex_agents.testing import MODEL_CALL_USAGE, FileGate, poll_until
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import (
    RecordingRunner,
    completed_steps,
    new_session_id,
    scripted_runner,
    session_flow,
    user_text_of,
)
from tests.shell.agents import unique_flow_type

LONG_MESSAGE = "Tell me everything"
LONG_ANSWER_LINES = 250
MESSAGE_COUNT = LONG_ANSWER_LINES + 1


def assistant_line(number: int) -> FrameworkMessage:
    text = f"line {number}"
    return FrameworkMessage(role=MessageRole.ASSISTANT, text=text, tool_call_id=None, tool_name=None,
                            tool_arguments=None, tool_output=None,
                            framework_item=f'{{"content":"{text}","role":"assistant"}}')


async def long_answer(turn: AgentTurnContext) -> AgentTurnOutcome | None:
    """One model call that answers ``LONG_ANSWER_LINES`` assistant messages (a framework may produce many)."""
    if user_text_of(turn) != LONG_MESSAGE:
        return None
    lines = [assistant_line(number) for number in range(1, LONG_ANSWER_LINES + 1)]
    return TurnCompleted(new_messages=pvector(lines), usage=MODEL_CALL_USAGE)


def sequences(page: AgentMessagePage) -> list[int]:
    return [message.sequence for message in page.messages]


def test_message_pages_clamp_the_limit_and_page_oldest_first(agent_environment: AgentEnvironmentFactory,
                                                             agent_sessions: AgentSessionsFactory,
                                                             tmp_path: Path) -> None:
    runner = RecordingRunner(inner=scripted_runner(tmp_path, {}), before_model=long_answer)
    flow = session_flow(runner, prefix="Paging")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, LONG_MESSAGE)
    state = sessions.wait_for_completed_turns(session_id, 1)
    assert state.message_count == MESSAGE_COUNT
    snapshot = sessions.snapshot(session_id)
    assert [m.sequence for m in snapshot.messages] == list(range(1, MESSAGE_COUNT + 1))

    default = sessions.list_messages(session_id)
    assert (sequences(default), default.next_before_sequence) == (list(range(202, 252)), 202)
    assert list(default.messages) == list(snapshot.messages[-50:])
    # The RPC clamps a limit below 1; the client refuses one (issue 29, finding 10: it returned a message).
    smallest = environment.client.invoke_rpc(flow.list_agent_messages, session_id,
                                             ListAgentMessagesInput(before_sequence=None, limit=0))
    assert (sequences(smallest), smallest.next_before_sequence) == ([251], 251)
    for bad in (0, -3):
        with pytest.raises(ValueError, match="limit must be at least 1"):
            sessions.list_messages(session_id, limit=bad)
    largest = sessions.list_messages(session_id, limit=500)
    assert (sequences(largest), largest.next_before_sequence) == (list(range(52, 252)), 52)
    assert sequences(sessions.list_messages(session_id, limit=200)) == sequences(largest)

    pages: list[AgentMessagePage] = []
    before: int | None = None
    while True:
        page = sessions.list_messages(session_id, before_sequence=before, limit=100)
        pages.append(page)
        if page.next_before_sequence is None:
            break
        before = page.next_before_sequence
    assert [(sequences(p)[0], sequences(p)[-1], p.next_before_sequence) for p in pages] == [
        (152, 251, 152), (52, 151, 52), (1, 51, None)]
    assert [m for page in reversed(pages) for m in page.messages] == list(snapshot.messages)

    middle = sessions.list_messages(session_id, before_sequence=11, limit=5)
    assert (sequences(middle), middle.next_before_sequence) == ([6, 7, 8, 9, 10], 6)
    beyond = sessions.list_messages(session_id, before_sequence=10_000, limit=3)
    assert (sequences(beyond), beyond.next_before_sequence) == ([249, 250, 251], 249)
    for below in (1, 0):
        empty = sessions.list_messages(session_id, before_sequence=below)
        assert (list(empty.messages), empty.next_before_sequence) == ([], None)


def test_a_negative_before_sequence_gives_an_empty_page(agent_environment: AgentEnvironmentFactory,
                                                        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """The pure core's paging rule: ``before_sequence`` at 1 or below is an empty page, not an error."""
    flow = session_flow(scripted_runner(tmp_path, {}), prefix="BadPage")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, "Hello")
    sessions.wait_for_completed_turns(session_id, 1)

    page = environment.client.invoke_rpc(flow.list_agent_messages, session_id,
                                         ListAgentMessagesInput(before_sequence=-5, limit=None))
    assert page == AgentMessagePage(messages=pvector(), next_before_sequence=None)
    with pytest.raises(ValueError, match="before_sequence must be at least 0"):  # the client checks it first
        sessions.list_messages(session_id, before_sequence=-5, limit=-5)


def test_the_snapshot_before_the_session_starts_has_no_state(agent_environment: AgentEnvironmentFactory,
                                                             agent_sessions: AgentSessionsFactory,
                                                             tmp_path: Path) -> None:
    """``build_user_message`` raises until the gate opens, so ``StartAgentSession`` fails its attempts
    (Dex reruns it after 1 s, 2 s, ...) and the session has not started while the test reads it."""
    start_gate = FileGate(tmp_path, "start")
    builds: list[str] = []
    lock = threading.Lock()

    def held_until_released(text: str, message: FrameworkMessage) -> FrameworkMessage:
        with lock:
            builds.append(text)
        if not start_gate.released_path.exists():
            raise RuntimeError("the adapter is not ready yet")
        return message

    runner = RecordingRunner(inner=scripted_runner(tmp_path, {}), user_message=held_until_released)
    flow = session_flow(runner, prefix="NotStarted")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=60.0)
    session_id = new_session_id()
    sessions.start_session(session_id, "Hello")
    poll_until(lambda: True if builds else None, description="StartAgentSession's first attempt")

    snapshot = sessions.snapshot(session_id)
    assert snapshot == AgentSnapshot(state=None, messages=pvector(), pending_interrupts=pvector(),
                                     tool_calls=pvector(), usage=AgentUsage(), queued_message_count=0)
    assert sessions.read_agent_state(session_id) is None
    assert completed_steps(environment.server_address, session_id) == []

    start_gate.release()
    state = sessions.wait_for_completed_turns(session_id, 1)
    assert state.message_count == 2
    assert sessions.snapshot(session_id).messages[-1].text == "echo: Hello (1 messages)"
    assert completed_steps(environment.server_address, session_id) == ["StartAgentSession", "RunModel"]


def test_rpcs_on_an_unknown_session_raise_flow_not_found(agent_environment: AgentEnvironmentFactory,
                                                         agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, {}), prefix="Unknown")
    sessions = agent_sessions(agent_environment([flow]), flow)
    unknown = new_session_id()

    with pytest.raises(FlowNotActiveOrNotFoundError, match=unknown):
        sessions.snapshot(unknown)
    with pytest.raises(FlowNotActiveOrNotFoundError, match=unknown):
        sessions.list_messages(unknown)
    with pytest.raises(FlowNotActiveOrNotFoundError, match=unknown):
        sessions.send_user_message(unknown, "Hello?")
    with pytest.raises(FlowNotActiveOrNotFoundError, match=unknown):
        sessions.resolve_interrupt(unknown, "turn-1:call-1", approved=True)


def test_a_blank_initial_message_starts_no_turn(agent_environment: AgentEnvironmentFactory,
                                                agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, {}), prefix="BlankStart")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()

    sessions.start_session(session_id, " \t\n ")
    state = sessions.wait_for_status(session_id, AgentStatus.WAITING_FOR_USER_MESSAGE)
    assert (state.turn_count, state.message_count, state.current_turn_id) == (0, 0, None)
    assert list(sessions.snapshot(session_id).messages) == []
    assert sessions.events(session_id) == []
    assert completed_steps(environment.server_address, session_id) == ["StartAgentSession"]
    assert sessions.send_user_message(session_id, "") is False
    assert sessions.snapshot(session_id).queued_message_count == 0

    assert sessions.send_user_message(session_id, "Hi") is True
    sessions.wait_for_completed_turns(session_id, 1)
    assert [(m.turn_id, m.text) for m in sessions.snapshot(session_id).messages] == [
        ("turn-1", "Hi"), ("turn-1", "echo: Hi (1 messages)")]
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "AwaitUserMessage", "RunModel"]


def test_rpcs_run_off_the_workers_event_loop(agent_environment: AgentEnvironmentFactory,
                                             agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """A snapshot of a long session decodes every message: it must not hold the event loop that runs the
    heartbeats and event flushes of the Steps beside it (each fact is seen on the thread that reduces it)."""
    threads: dict[str, set[int]] = {}

    def observe(fact: object) -> None:
        threads.setdefault(type(fact).__name__, set()).add(threading.get_ident())

    flow = create_agent_session_flow(scripted_runner(tmp_path, {}), unique_flow_type("OffLoop"),
                                     fact_observer=observe)
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = new_session_id()
    sessions.start_session(session_id, "hello")
    sessions.wait_for_completed_turns(session_id, 1)
    assert sessions.send_user_message(session_id, "again")
    sessions.wait_for_completed_turns(session_id, 2)
    sessions.snapshot(session_id)
    loop_threads = threads["ModelCallFinished"] | threads["SessionStarted"]
    assert len(loop_threads) == 1, threads  # the Steps run on the Worker's event loop
    for rpc_fact in ("SendUserMessageOnceCalled", "AgentSnapshotRequested"):
        assert threads[rpc_fact].isdisjoint(loop_threads), threads
