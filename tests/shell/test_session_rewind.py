"""Rewind and fork (issue 26, items 1, 2 and 4) on an in-process Worker and the local engine through the
real SDK: a rewind after a turn that ran a ``non_idempotent_write`` names the write and the session goes
on from turn 1 (the model sees turn 1 and the new turn only); a rewind across a pending approval; a fork
that goes on independently of its original; each session's export replays identically; bad input
changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyrsistent import pmap, pvector

from dex_agents.client import (
    NoWorkerError,
    RewindNotRecordedError,
    SessionClient,
    SessionExistsError,
    SessionNotFoundError,
    SessionRewindError,
    SessionStoppedError,
)
from dex_agents.pure.offline.replay_report import replay_export
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.values.session import MessageRole, ToolCallStatus, ToolEffect
from dex_agents.shell import AgentSessionFlow
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.session_client import AgentSessionTestClient
from tests.shell.scenario_flows import (
    READ_POLICY,
    WRITE_POLICY,
    RecordingRunner,
    answer_tool,
    call,
    new_session_id,
    of_type,
    scripted_runner,
    session_flow,
    tool_log,
)

ONE, REFUND, APPROVED_REFUND, THREE, FOUR = "one", "refund now", "refund after approval", "three", "four"
SCRIPT = {
    ONE: (ScriptedModelCall(tool_calls=(call("c-lookup", "lookup", order_id=1),)), ScriptedModelCall(text="One.")),
    REFUND: (ScriptedModelCall(tool_calls=(call("c-refund", "refund", order_id=1),)),
             ScriptedModelCall(text="Refunded.")),
    APPROVED_REFUND: (ScriptedModelCall(tool_calls=(call("c-approved", "approved_refund", order_id=2),)),
                      ScriptedModelCall(text="Refunded after approval.")),
    THREE: (ScriptedModelCall(text="Three."),),
    FOUR: (ScriptedModelCall(text="Four."),),
}
POLICIES = {"lookup": READ_POLICY, "approved_refund": WRITE_POLICY,
            "refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)}


def _flow(tmp_path: Path) -> tuple[AgentSessionFlow, RecordingRunner]:
    runner = RecordingRunner(inner=scripted_runner(tmp_path, SCRIPT, {
        "lookup": answer_tool("order 1 ships"), "refund": answer_tool("refunded"),
        "approved_refund": answer_tool("refunded")}))
    return session_flow(runner, prefix="Rewind", tool_policies=POLICIES, interrupt_deadline_ms=3_600_000), runner


def _texts(snapshot: AgentSnapshot) -> list[str | None]:
    return [m.text for m in snapshot.messages if m.role is not MessageRole.TOOL and m.text]


def _run_turn_1(sessions: AgentSessionTestClient, session_id: str) -> AgentSnapshot:
    """Start ``session_id`` with ``ONE``; its snapshot once turn 1 completed."""
    sessions.start_session(session_id, ONE)
    sessions.wait_for_completed_turns(session_id, 1)
    return sessions.snapshot(session_id)


def _run_refund_turn(sessions: AgentSessionTestClient, session_id: str) -> None:
    """Send ``REFUND`` (no approval) after turn 1 and wait for turn 2 to complete."""
    assert sessions.send_user_message(session_id, REFUND)
    sessions.wait_for_completed_turns(session_id, 2)


def _replays_identically(sessions: AgentSessionTestClient, session_id: str) -> None:
    document = sessions.sessions.export(session_id)
    report = replay_export(document).unwrap()
    assert report.identical, list(report.describe())
    assert report.snapshot == sessions.snapshot(session_id)
    assert list(document.reconstruction.notes) == []


def test_a_rewind_after_a_non_idempotent_write_names_it_and_the_session_goes_on_from_turn_1(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow, runner = _flow(tmp_path)
    sessions = agent_sessions(agent_environment([flow]), flow)
    client = sessions.sessions
    session_id = new_session_id()
    after_turn_1 = _run_turn_1(sessions, session_id)
    _run_refund_turn(sessions, session_id)
    assert tool_log(tmp_path).entries() == [f"lookup:{session_id}/turn-1/c-lookup",
                                            f"refund:{session_id}/turn-2/c-refund"]
    run_before = client.describe(session_id).run_id

    preview = client.rewind_preview(session_id, 1)
    audit = client.rewind(session_id, 1, "the refund was a mistake")

    (refund,) = audit.tool_calls
    assert (refund.tool_name, refund.effect, refund.status, refund.idempotency_key, refund.turn_id) == (
        "refund", ToolEffect.NON_IDEMPOTENT_WRITE, ToolCallStatus.SUCCEEDED, f"{session_id}/turn-2/c-refund", "turn-2")
    assert preview.tool_calls == audit.tool_calls and preview.previous_run_id == run_before
    assert (audit.to_turn, audit.reason, audit.previous_run_id, audit.removed_turn_count) == (
        1, "the refund was a mistake", run_before, 1)
    assert client.describe(session_id).run_id != run_before
    assert sessions.snapshot(session_id) == after_turn_1  # messages, usage, tool calls, queue: turn 1's
    (event,) = of_type(sessions.events(session_id), "dex_agents.session_rewound")
    assert event.payload["to_turn"] == 1 and event.payload["previous_run_id"] == run_before
    assert event.payload["tool_calls"] == pvector([pmap({
        "tool_call_id": "c-refund", "turn_id": "turn-2", "tool_name": "refund", "effect": "non_idempotent_write",
        "status": "succeeded", "idempotency_key": refund.idempotency_key})])

    assert sessions.send_user_message(session_id, THREE)
    sessions.wait_for_completed_turns(session_id, 2)
    seen = runner.calls_of("turn-2", session_id)[-1]
    assert not any("refund" in item or "Refunded" in item for item in seen.framework_items)
    assert any(THREE in item for item in seen.framework_items) and any("One." in item for item in seen.framework_items)
    assert _texts(sessions.snapshot(session_id)) == [ONE, "One.", THREE, "Three."]
    assert len(tool_log(tmp_path).entries()) == 2  # nothing ran again

    document = client.export(session_id)
    (stored,) = [v for v in document.values if v.name == "SessionRewinds"]
    assert stored.instance == run_before
    (removed,) = document.rewound_runs
    assert removed.run_id == run_before
    assert any(step.step_type == "CallSingleAttemptTool" for step in removed.steps)
    _replays_identically(sessions, session_id)


def test_a_rewind_across_a_pending_approval_drops_it_and_bad_input_changes_nothing(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow, _ = _flow(tmp_path)
    sessions = agent_sessions(agent_environment([flow]), flow)
    client = sessions.sessions
    session_id = new_session_id()
    after_turn_1 = _run_turn_1(sessions, session_id)
    with pytest.raises(SessionRewindError, match="nothing to rewind"):
        client.rewind(session_id, 1)
    assert sessions.send_user_message(session_id, APPROVED_REFUND)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "approved_refund")

    with pytest.raises(SessionRewindError, match="turn 2 has not ended: the session has ended 1 turns; turn-2 is"):
        client.rewind(session_id, 2)
    with pytest.raises(ValueError, match="to_turn"):
        client.rewind(session_id, -1)
    with pytest.raises(SessionNotFoundError):
        client.rewind(new_session_id(), 1)
    assert [i.interrupt_id for i in client.pending_interrupts(session_id)] == [interrupt.interrupt_id]

    audit = client.rewind(session_id, 1)
    assert list(audit.tool_calls) == [] and audit.removed_turn_count == 1  # it never ran: not named
    assert sessions.snapshot(session_id) == after_turn_1 and list(client.pending_interrupts(session_id)) == []
    assert client.resolve_interrupt(session_id, interrupt.interrupt_id, True) is False
    assert sessions.send_user_message(session_id, THREE)
    sessions.wait_for_completed_turns(session_id, 2)
    assert _texts(sessions.snapshot(session_id)) == [ONE, "One.", THREE, "Three."]
    assert tool_log(tmp_path).entries() == [f"lookup:{session_id}/turn-1/c-lookup"]
    _replays_identically(sessions, session_id)
    client.stop(session_id, "done")
    with pytest.raises(SessionStoppedError):
        client.rewind(session_id, 1)


def test_a_fork_goes_on_independently_of_its_original(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow, _ = _flow(tmp_path)
    sessions = agent_sessions(agent_environment([flow]), flow)
    client = sessions.sessions
    original, forked = new_session_id(), new_session_id()
    after_turn_1 = _run_turn_1(sessions, original)
    _run_refund_turn(sessions, original)
    before_fork = sessions.snapshot(original)
    with pytest.raises(SessionRewindError, match="turn 3 has not ended"):
        client.fork(original, 3, forked)

    client.fork(original, 1, forked)
    seeded = sessions.wait_for_status(forked, "waiting_for_user_message")
    assert seeded.completed_turn_count == 1 and seeded.turn_count == 1
    fork_snapshot = sessions.snapshot(forked)
    assert (fork_snapshot.messages, fork_snapshot.usage) == (after_turn_1.messages, after_turn_1.usage)
    assert list(fork_snapshot.pending_interrupts) == [] and fork_snapshot.queued_message_count == 0
    assert sessions.snapshot(original) == before_fork

    assert sessions.send_user_message(forked, THREE)
    assert sessions.send_user_message(original, FOUR)
    sessions.wait_for_completed_turns(forked, 2)
    sessions.wait_for_completed_turns(original, 3)
    assert _texts(sessions.snapshot(forked)) == [ONE, "One.", THREE, "Three."]
    assert _texts(sessions.snapshot(original)) == [ONE, "One.", REFUND, "Refunded.", FOUR, "Four."]
    assert client.fork(original, 1, forked) == client.describe(forked).run_id  # a repeat returns its run
    with pytest.raises(SessionExistsError):
        client.fork(original, 2, forked)  # another fork into a session that exists: refused, nothing changed
    assert _texts(sessions.snapshot(forked)) == [ONE, "One.", THREE, "Three."]
    _replays_identically(sessions, original)
    _replays_identically(sessions, forked)


def test_a_rewind_reaches_back_to_the_last_continue_as_new_and_a_fork_reaches_further(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow, _ = _flow(tmp_path)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    client = sessions.sessions
    session_id, forked = new_session_id(), new_session_id()
    after_turn_1 = _run_turn_1(sessions, session_id)
    environment.client.trigger_continue_as_new(session_id)
    assert sessions.send_user_message(session_id, THREE)
    sessions.wait_for_completed_turns(session_id, 2)
    after_turn_2 = sessions.snapshot(session_id)
    assert sessions.send_user_message(session_id, FOUR)
    sessions.wait_for_completed_turns(session_id, 3)
    before = sessions.snapshot(session_id)

    with pytest.raises(SessionRewindError, match="turn 1 ended in an earlier run of the session .* reaches back "
                                                 "to turn 2 at the earliest"):
        client.rewind(session_id, 1)
    assert sessions.snapshot(session_id) == before

    client.fork(session_id, 1, forked)  # from the run before the rollover
    sessions.wait_for_status(forked, "waiting_for_user_message")
    assert sessions.snapshot(forked).messages == after_turn_1.messages

    audit = client.rewind(session_id, 2)
    assert (audit.to_turn, audit.removed_turn_count, list(audit.tool_calls)) == (2, 1, [])
    assert sessions.snapshot(session_id) == after_turn_2
    assert sessions.send_user_message(session_id, FOUR)
    sessions.wait_for_completed_turns(session_id, 3)
    assert _texts(sessions.snapshot(session_id)) == [ONE, "One.", THREE, "Three.", FOUR, "Four."]
    _replays_identically(sessions, session_id)
    _replays_identically(sessions, forked)


def test_a_message_queued_at_the_turns_end_is_queued_again_and_starts_the_next_turn_at_once(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow, _ = _flow(tmp_path)
    sessions = agent_sessions(agent_environment([flow]), flow)
    client = sessions.sessions
    session_id = new_session_id()
    _run_turn_1(sessions, session_id)
    assert sessions.send_user_message(session_id, APPROVED_REFUND)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "approved_refund")
    assert sessions.send_user_message(session_id, THREE)  # queued while turn 2 waits
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, True)
    sessions.wait_for_completed_turns(session_id, 3)
    finished = sessions.snapshot(session_id)

    audit = client.rewind(session_id, 2, "again from turn 2")  # recorded although turn 3 starts at once

    assert (audit.to_turn, audit.removed_turn_count, list(audit.tool_calls)) == (2, 1, [])
    sessions.wait_for_completed_turns(session_id, 3)
    again = sessions.snapshot(session_id)
    assert _texts(again) == _texts(finished) == [ONE, "One.", APPROVED_REFUND, "Refunded after approval.", THREE,
                                                 "Three."]
    assert tool_log(tmp_path).entries() == [f"lookup:{session_id}/turn-1/c-lookup",
                                            f"approved_refund:{session_id}/turn-2/c-approved"]
    _replays_identically(sessions, session_id)


def test_a_rewind_whose_record_fails_says_the_session_was_rewound(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    flow, _ = _flow(tmp_path)
    sessions = agent_sessions(agent_environment([flow]), flow)
    client = sessions.sessions
    session_id = new_session_id()
    after_turn_1 = _run_turn_1(sessions, session_id)
    _run_refund_turn(sessions, session_id)
    previous_run = client.describe(session_id).run_id
    rpc = SessionClient._rpc

    def record_fails(self: SessionClient, method: Callable[..., object], *args: Any, **kwargs: Any) -> object:
        if getattr(method, "__name__", "") == "record_session_rewind":
            raise NoWorkerError(self.flow_type, self.server_address, 1)
        return rpc(self, method, *args, **kwargs)

    monkeypatch.setattr(SessionClient, "_rpc", record_fails)
    with pytest.raises(RewindNotRecordedError, match=f"session {session_id} was rewound to right after turn 1 "
                                                     rf"\(run .+\), but the session did not record the rewind: no "
                                                     rf"Worker serving .* the replaced run {previous_run} keeps") as raised:
        client.rewind(session_id, 1)
    assert isinstance(raised.value.__cause__, NoWorkerError) and raised.value.previous_run_id == previous_run
    monkeypatch.undo()
    assert sessions.snapshot(session_id) == after_turn_1
    document = client.export(session_id)
    assert [run.run_id for run in document.rewound_runs] == [previous_run]
    assert not [value for value in document.values if value.name == "SessionRewinds"]
