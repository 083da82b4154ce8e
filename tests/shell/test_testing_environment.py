"""The session part of ``dex_agents.testing``, used through its pytest fixtures as an adapter's tests
would: ``AgentTestEnvironment``, ``AgentSessionTestClient`` and a Worker child running
``run_agent_worker_process``. Every wait is on committed values, never on elapsed time."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from pyrsistent import pvector

from dex_agents.pure.values.session import AgentStatus, MessageRole
from dex_agents.testing import (
    WORKER_READY_LINE,
    AgentTestEnvironment,
    PrivateDexEngine,
    poll_until,
    run_agent_worker_process,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.shell.agents import (
    LOOKUP_ANSWER,
    LOOKUP_MESSAGE,
    REFUND_ANSWER,
    REFUND_MESSAGE,
    WORKER_MODULE,
    build_support_flow,
    tool_invocations,
    unique_flow_type,
    worker_environment,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
CHILD_SECONDS = 30.0


def new_session_id() -> str:
    return f"session-{uuid.uuid4().hex[:12]}"


def worker_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "dex-agents-test-worker"]


def test_a_scripted_session_end_to_end(agent_environment: AgentEnvironmentFactory,
                                       agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type())
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = new_session_id()

    sessions.start_session(session_id, "Hello")
    state = sessions.wait_for_completed_turns(session_id, 1)

    snapshot = sessions.snapshot(session_id)
    assert [(message.role, message.text) for message in snapshot.messages] == [
        (MessageRole.USER, "Hello"), (MessageRole.ASSISTANT, "echo: Hello (1 messages)")]
    assert snapshot.state == state
    assert sessions.read_agent_state(session_id) == snapshot.state
    assert state.status is AgentStatus.WAITING_FOR_USER_MESSAGE and state.message_count == 2
    assert sessions.read_pending_interrupts(session_id) == pvector()
    assert sessions.resolve_interrupt(session_id, "turn-1:no-such-call", approved=True) is False
    assert sessions.list_messages(session_id, limit=1).messages == snapshot.messages[1:]

    events = sessions.events(session_id)
    assert events[0].type == "turn_started" and events[-1].type == "turn_completed"
    assert events == sessions.events(session_id, page_size=1)  # paged the same, oldest first
    assert {event.turn_id for event in events} == {"turn-1"}


def test_an_approval_survives_a_worker_restart(agent_environment: AgentEnvironmentFactory,
                                               agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type())
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")

    environment.stop_worker()
    assert not environment.is_worker_running
    assert sessions.read_pending_interrupts(session_id) == pvector([interrupt])  # read with no Worker
    assert sessions.wait_for_status(session_id, AgentStatus.RUNNING_TOOLS).current_turn_id == "turn-1"
    environment.start_worker()

    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    sessions.wait_for_turns(session_id, 1)
    snapshot = sessions.snapshot(session_id)
    assert snapshot.messages[-1].text == REFUND_ANSWER
    assert [call.status for call in snapshot.tool_calls] == []  # records are kept only while a turn runs
    assert tool_invocations(tmp_path).count() == 1
    assert sessions.read_pending_interrupts(session_id) == pvector()


def test_waits_name_the_session_the_wait_and_the_last_value(agent_environment: AgentEnvironmentFactory,
                                                            agent_sessions: AgentSessionsFactory,
                                                            tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type())
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = new_session_id()
    sessions.start_session(session_id)
    sessions.wait_for_status(session_id, "waiting_for_user_message")

    with pytest.raises(TimeoutError, match=rf"session '{session_id}'.*3 completed turn\(s\).*completed_turn_count=0"):
        sessions.wait_for_completed_turns(session_id, 3, timeout=0.05)
    with pytest.raises(TimeoutError, match=r"a pending interrupt of tool 'refund'.*last value seen: pvector\(\[\]\)"):
        sessions.wait_for_pending_interrupt(session_id, "refund", timeout=0.05)
    with pytest.raises(ValueError):
        sessions.wait_for_status(session_id, "sleeping")


def test_the_environment_owns_and_releases_everything(dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type())
    other = build_support_flow(tmp_path, flow_type=unique_flow_type())
    threads_before = len(worker_threads())
    with AgentTestEnvironment.start(server_address=dex_engine.server_address, flows=[flow]) as environment:
        assert environment.is_worker_running and len(worker_threads()) == threads_before + 1
        with pytest.raises(RuntimeError, match="already running"):
            environment.start_worker()
        with pytest.raises(ValueError, match="not one of"):
            environment.sessions(other)
        sessions = environment.sessions(flow)
        session_id = new_session_id()
        sessions.start_session(session_id, "Hi")
        sessions.wait_for_completed_turns(session_id, 1)
    environment.close()  # idempotent
    assert len(worker_threads()) == threads_before
    with pytest.raises(RuntimeError, match="closed"):
        environment.start_worker()
    with pytest.raises(ValueError, match="at least one Flow"):
        AgentTestEnvironment.start(server_address=dex_engine.server_address, flows=[])


def test_a_worker_child_serves_sessions_across_a_sigkill_and_drains_on_stop(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    state_directory = tmp_path / "state"
    flow_type = unique_flow_type()
    flow = build_support_flow(state_directory, flow_type=flow_type)
    first = killable_worker(WORKER_MODULE, environment=worker_environment(state_directory, flow_type))
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    session_id = new_session_id()

    sessions.start_session(session_id, LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)
    assert sessions.snapshot(session_id).messages[-1].text == LOOKUP_ANSWER
    assert tool_invocations(state_directory).entries() == [f"lookup_order:{session_id}/turn-1/call-lookup"]

    first.kill()
    assert first.returncode == -9
    second = killable_worker(WORKER_MODULE, environment=worker_environment(state_directory, flow_type))
    assert sessions.send_user_message(session_id, REFUND_MESSAGE) is True
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    state = sessions.wait_for_completed_turns(session_id, 2)
    assert state.message_count == 8
    assert tool_invocations(state_directory).count(f"refund:{session_id}/turn-2/call-refund") == 1

    second.stop()
    assert second.returncode == 0
    assert "dex-agents test Worker stopped (SIGTERM)" in second.log_path.read_text()


def test_a_worker_child_stops_when_its_stdin_closes(dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    state_directory = tmp_path / "state"
    temporary = tmp_path / "worker-tmp"
    temporary.mkdir()
    log_path = tmp_path / "worker.log"
    environment = {**os.environ, **worker_environment(state_directory, unique_flow_type()),
                   "DEX_SERVER_ADDRESS": dex_engine.server_address, "TMPDIR": str(temporary)}
    with log_path.open("wb") as log:
        child = subprocess.Popen([sys.executable, "-m", WORKER_MODULE], stdin=subprocess.PIPE, stdout=log,
                                 stderr=subprocess.STDOUT, env=environment, cwd=REPO_ROOT, start_new_session=True)
    try:
        poll_until(lambda: True if WORKER_READY_LINE in log_path.read_text() else None, timeout=CHILD_SECONDS,
                   description="the Worker child's ready line")
        assert child.stdin is not None
        child.stdin.close()  # what the parent's death does
        assert child.wait(CHILD_SECONDS) == 0
    finally:
        child.kill()
        child.wait()
    assert "stopped (end of stdin)" in log_path.read_text()
    assert list(temporary.iterdir()) == []  # its temporary directory is gone


def test_run_agent_worker_process_needs_the_server_address(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DEX_SERVER_ADDRESS", raising=False)
    with pytest.raises(RuntimeError, match="DEX_SERVER_ADDRESS is not set"):
        run_agent_worker_process([build_support_flow(tmp_path)])


def test_a_worker_that_stopped_with_an_error_fails_the_environments_stop() -> None:
    """The in-process Worker's serving error used to be swallowed (``except BaseException: pass``)."""
    from concurrent.futures import Future

    from dex_agents.testing.environment import WorkerServingError, _InProcessWorker, _LoopThread

    class ClosedWorker:
        async def close(self) -> None:
            return None

    serving: Future[None] = Future()
    serving.set_exception(ConnectionError("the Dex server went away"))
    loop = _LoopThread()
    try:
        with pytest.raises(WorkerServingError, match="the Dex server went away"):
            _InProcessWorker(ClosedWorker(), serving).stop(loop)  # type: ignore[arg-type]
        cancelled: Future[None] = Future()
        cancelled.cancel()
        _InProcessWorker(ClosedWorker(), cancelled).stop(loop)  # type: ignore[arg-type]  # a cancelled one is no error
    finally:
        loop.close()
