"""Export and offline replay (issue 20): a session that went through approvals, a Worker SIGKILLed
inside a single-attempt write and a failed turn is exported with ``dex-agents sessions export``,
replayed with ``dex-agents replay`` and through the Python API with no engine, and reproduces the
live snapshot; a seeded change to a reducer makes the replay report the first difference."""

from __future__ import annotations

import dataclasses
import io
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from dex_agents.cli.replay import replay_file
from dex_agents.pure.offline.export_document import read_export
from dex_agents.pure.machine.reducers import dispatch
from dex_agents.pure.machine.reducers.tools import reduce_tool_call_succeeded
from dex_agents.pure.offline.replay_report import replay_export
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import ToolCallSucceeded
from dex_agents.pure.machine.transition import StepTransition
from dex_agents.pure.values.session import ToolCallStatus
from dex_agents.testing import FileGate
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.cli.support import run_cli
from tests.golden_sessions.agent import (
    CHECK_WAREHOUSE,
    REFUND_7,
    REFUND_7_CALL,
    REFUND_8_CAREFULLY,
    REFUND_9,
    REFUND_GATE,
    WORKER_MODULE,
    build_golden_flow,
    worker_environment,
)
from tests.shell.agents import unique_flow_type


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=2000, no_color=True), buffer


def test_an_exported_session_with_approvals_a_crash_and_a_failed_turn_replays_offline(
        dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow_type = unique_flow_type("Export")
    flow = build_golden_flow(tmp_path, flow_type)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    environment = worker_environment(tmp_path, flow_type)
    worker = killable_worker(WORKER_MODULE, environment=environment)
    session_id = f"export-{uuid.uuid4().hex[:10]}"

    sessions.start_session(session_id, REFUND_7)  # an approval
    sessions.resolve_interrupt(session_id, sessions.wait_for_pending_interrupt(session_id, "refund").interrupt_id, True)
    sessions.wait_for_completed_turns(session_id, 1)
    assert sessions.send_user_message(session_id, REFUND_8_CAREFULLY)  # a crash inside the approved refund
    sessions.resolve_interrupt(session_id, sessions.wait_for_pending_interrupt(session_id, "refund").interrupt_id, True)
    gate = FileGate(tmp_path, REFUND_GATE)
    gate.wait_until_reached()
    worker.kill()
    gate.release()
    killable_worker(WORKER_MODULE, environment=environment)
    sessions.wait_for_completed_turns(session_id, 2)
    assert sessions.send_user_message(session_id, REFUND_9)  # a rejection
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, False, "not today")
    sessions.wait_for_completed_turns(session_id, 3)
    assert sessions.send_user_message(session_id, CHECK_WAREHOUSE)  # a failed turn, after a read ran
    state = sessions.wait_for_turns(session_id, 4, timeout=60)
    assert state.failed_turn_count == 1
    live = sessions.snapshot(session_id)

    out = tmp_path / "session.json"
    exported = run_cli("sessions", "export", session_id, "--out", str(out),
                       environment={"DEX_SERVER_ADDRESS": dex_engine.server_address})
    assert exported.returncode == 0, exported.stderr
    assert f"exported session {session_id} to {out}" in exported.stdout and "(clock: recorded)" in exported.stdout
    replayed = run_cli("replay", str(out))  # no server named: offline
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "identical" in replayed.stdout

    document = read_export(out.read_text(encoding="utf-8")).unwrap()
    assert document.snapshot == live and document.session.flow_type == flow_type
    assert document.reconstruction.clock == "recorded" and list(document.reconstruction.notes) == []
    report = replay_export(document).unwrap()
    assert report.identical and report.snapshot == live
    executed = [(step.step_type, step.outcome) for step in document.steps if step.method == "execute"]
    assert ("CallSingleAttemptTool", "failed") in executed and ("RecordToolOutcomeUnknown", "completed") in executed
    assert ("RunModel", "failed") in executed and ("RecordTurnFailure", "completed") in executed
    assert any(event.event.type == "interrupt_resolved" for event in document.events)
    assert live.state is not None
    assert len([value for value in document.values if value.name == "AgentMessages"]) == live.state.message_count

    def seeded(state: SessionState, succeeded: ToolCallSucceeded) -> StepTransition:
        return reduce_tool_call_succeeded(state, dataclasses.replace(succeeded, output=succeeded.output.upper()))

    monkeypatch.setattr(dispatch, "reduce_tool_call_succeeded", seeded)
    console, printed = _console()
    assert replay_file(out, console) == 1
    text = printed.getvalue()
    assert f"first difference: AgentToolCalls/{REFUND_7_CALL}: the replay writes another value in this step" in text
    assert "input: #" in text and "(tool_call_succeeded)" in text and "turn: turn-1" in text
    assert '"output":"order 7 refunded"' in text and '"output":"ORDER 7 REFUNDED"' in text
    mutated = replay_export(document).unwrap()
    difference = mutated.difference
    assert difference is not None and difference.turn_id == "turn-1" and difference.input_kind == "tool_call_succeeded"
    assert ToolCallStatus.SUCCEEDED.value in str(difference.expected)


def test_export_names_an_unknown_session_and_replay_refuses_what_is_not_an_export(
        dex_engine: PrivateDexEngine, tmp_path: Path) -> None:
    missing = run_cli("sessions", "export", "no-such-session", environment={"DEX_SERVER_ADDRESS": dex_engine.server_address})
    assert missing.returncode == 1
    assert "session no-such-session was not found" in missing.stderr
    not_json = tmp_path / "x.json"
    not_json.write_text("{", encoding="utf-8")
    refused = run_cli("replay", str(not_json))
    assert refused.returncode == 2 and "malformed session export" in refused.stderr
    other = tmp_path / "y.json"
    other.write_text('{"format": "dex-agents-session-export", "version": 9}', encoding="utf-8")
    refused = run_cli("replay", str(other))
    assert refused.returncode == 2 and "version 9 session export; this dex-agents reads version 1" in refused.stderr
