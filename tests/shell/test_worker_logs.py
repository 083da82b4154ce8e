"""Issue 29, finding 5 and "Logs": a Worker's log lines carry time, level, session, turn and Step; an
expected failure (a refused send, a failed model attempt) is one line without a traceback, with its
attempt number; ``--debug`` keeps the tracebacks; the JSON format's lines parse."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dex import WorkerInvocationError

from dex_agents.logs import LogFormat, configure_logging
from dex_agents.shell import create_agent_session_flow
from dex_agents.testing import ScriptedAgentRunner
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.scripted_runner import ScriptedModelCall
from tests.shell.agents import REFUND_MESSAGE, build_support_flow, unique_flow_type


class _Captured:
    def __init__(self) -> None:
        self.stream = io.StringIO()

    @property
    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()


@pytest.fixture
def captured_logs(request: pytest.FixtureRequest) -> Iterator[_Captured]:
    log_format: LogFormat = getattr(request, "param", "text")
    captured = _Captured()
    setup = configure_logging(log_format=log_format, stream=captured.stream)
    try:
        yield captured
    finally:
        setup.close()


def _session() -> str:
    return f"log-{uuid.uuid4().hex[:10]}"


def _refuse_a_send(agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
                   tmp_path: Path) -> str:
    flow = build_support_flow(tmp_path, flow_type=unique_flow_type("Logs"))
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = _session()
    sessions.start_session(session_id, REFUND_MESSAGE)
    sessions.wait_for_pending_interrupt(session_id, "refund")  # turn-1 runs, waiting for the approval
    assert sessions.sessions.send(session_id, "first text", message_id="m-1") is True
    with pytest.raises(WorkerInvocationError):
        sessions.sessions.send(session_id, "another text", message_id="m-1")
    return session_id


def test_a_refused_send_is_one_line_with_the_session_and_turn(
        captured_logs: _Captured, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        tmp_path: Path) -> None:
    session_id = _refuse_a_send(agent_environment, agent_sessions, tmp_path)
    refused = [line for line in captured_logs.lines if "refused" in line]
    assert len(refused) == 1, captured_logs.lines
    assert f"session={session_id} turn=turn-1 step=send_user_message_once" in refused[0]
    assert " WARNING dex_agents.worker " in refused[0] and refused[0][:4].isdigit()
    assert not any("Traceback" in line for line in captured_logs.lines), captured_logs.lines


def test_a_failed_model_attempt_is_one_line_with_its_attempt_number(
        captured_logs: _Captured, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory
) -> None:
    runner = ScriptedAgentRunner(script={"Fail once": (ScriptedModelCall(text="fine now", fail_attempts=1),)})
    flow = create_agent_session_flow(runner, unique_flow_type("LogsModel"))
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = _session()
    sessions.start_session(session_id, "Fail once")
    sessions.wait_for_completed_turns(session_id, 1)
    failed = [line for line in captured_logs.lines if "failed" in line]
    assert len(failed) == 1, captured_logs.lines
    assert f"session={session_id} turn=turn-1 step=RunModel: RunModel attempt 1 failed:" in failed[0]
    assert failed[0].endswith("failed: scripted model failure (attempt 1)"), failed[0]
    assert not any("Traceback" in line for line in captured_logs.lines), captured_logs.lines


@pytest.mark.parametrize("captured_logs", ["json"], indirect=True)
def test_json_lines_parse_and_name_the_session(
        captured_logs: _Captured, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        tmp_path: Path) -> None:
    session_id = _refuse_a_send(agent_environment, agent_sessions, tmp_path)
    documents = [json.loads(line) for line in captured_logs.lines]
    refused = [document for document in documents if "refused" in document["message"]]
    assert len(refused) == 1
    assert {key: refused[0][key] for key in ("level", "session_id", "turn_id", "step")} == {
        "level": "WARNING", "session_id": session_id, "turn_id": "turn-1", "step": "send_user_message_once"}
    assert refused[0]["time"].endswith("+00:00") and "traceback" not in refused[0]


def test_debug_keeps_the_tracebacks(agent_environment: AgentEnvironmentFactory,
                                    agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    stream = io.StringIO()
    setup = configure_logging(debug=True, stream=stream)
    try:
        _refuse_a_send(agent_environment, agent_sessions, tmp_path)
    finally:
        setup.close()
    assert "Traceback" in stream.getvalue()
