"""Crash tests of operator actions (issue 25): a Worker SIGKILLed inside a ``ReconcileToolOutcome`` Step
(the Step reruns, the write never does), and a Worker SIGKILLed right after an edited approval or
inside the edited call (the edited call runs exactly once, with the edited arguments).

The Worker runs in a child process, the Client stays in the test process; every wait is on a gate or
committed values, and the cross-process tool log counts real tool runs.
"""

from __future__ import annotations

from pathlib import Path

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.session import AgentInterrupt, MessageRole, ToolCallStatus
from dex_agents.testing import EXECUTE_COMPLETED, InvocationLog, KillableWorkerProcess
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.shell.agents import (
    GATED_REFUND_MESSAGE,
    LEDGER_GATE,
    LEDGER_REFUND_ANSWER,
    LEDGER_REFUND_CALL_ID,
    LEDGER_REFUND_MESSAGE,
    RECONCILE_GATE,
    RECONCILE_LOG,
    REFUND_ANSWER,
    REFUND_CALL_ID,
    REFUND_GATE,
    REFUND_MESSAGE,
)
from tests.shell.crashes import CRASH_TIMEOUT, CrashLab, completed, failed, new_session_id, tool_key


def _runs(lab: CrashLab, session_id: str) -> list[str]:
    return [entry for entry in lab.tools.entries() if f":{session_id}/" in entry]


def _approved_with_an_edit(lab: CrashLab, session_id: str, message: str, edited: str, *, approver: str,
                           reason: str | None = None) -> tuple[KillableWorkerProcess, AgentInterrupt]:
    """A Worker child started and a session started with ``message``, whose ``refund`` approval is given
    with the arguments ``edited`` (bound to the arguments the approver saw): the Worker and the interrupt."""
    worker = lab.start_worker()
    lab.sessions.start_session(session_id, message)
    interrupt = lab.sessions.wait_for_pending_interrupt(session_id, "refund")
    assert lab.sessions.sessions.resolve_interrupt(
        session_id, interrupt.interrupt_id, True, edited_arguments=edited, arguments_sha256=interrupt.arguments_sha256,
        approver=approver, reason=reason) is True
    return worker, interrupt


def test_a_worker_killed_in_the_reconcile_step_reruns_it_and_the_write_never_runs_again(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    session_id = new_session_id()
    first = lab.start_worker()
    lab.sessions.start_session(session_id, LEDGER_REFUND_MESSAGE)
    ledger = lab.gate(LEDGER_GATE)
    ledger.wait_until_reached(timeout=CRASH_TIMEOUT)  # the write took effect; its Worker dies before reporting
    second = lab.kill_at(first, ledger)
    reconcile = lab.gate(RECONCILE_GATE)
    reconcile.wait_until_reached(timeout=CRASH_TIMEOUT)  # ReconcileToolOutcome asks the policy's reconcile
    lab.kill_at(second, reconcile)
    lab.sessions.wait_for_completed_turns(session_id, 1)

    key = f"{session_id}/turn-1/{LEDGER_REFUND_CALL_ID}"
    assert _runs(lab, session_id) == [tool_key(session_id, "ledger_refund", LEDGER_REFUND_CALL_ID)]  # once, ever
    assert InvocationLog(lab.state_directory, RECONCILE_LOG).entries() == [key, key]  # asked, killed, asked again
    executions = lab.executions(session_id)
    assert executions[:2] == [completed(StepType.START_AGENT_SESSION), completed(StepType.RUN_MODEL)]
    assert failed(StepType.CALL_SINGLE_ATTEMPT_TOOL) in executions
    outcomes = {(step, outcome) for step, outcome, _attempt in executions}
    assert (StepType.CALL_SINGLE_ATTEMPT_TOOL.value, EXECUTE_COMPLETED) not in outcomes  # the write's Step never reran
    reconciles = [outcome for step, outcome, _attempt in executions if step == StepType.RECONCILE_TOOL_OUTCOME.value]
    assert reconciles.count(EXECUTE_COMPLETED) == 1 and reconciles[-1] == EXECUTE_COMPLETED
    assert executions[-2:] == [completed(StepType.RESUME_TURN), completed(StepType.RUN_MODEL)]

    messages = lab.sessions.snapshot(session_id).messages
    (told,) = [m.tool_output or "" for m in messages if m.role is MessageRole.TOOL]
    assert told.startswith("[Dex] The outcome was unknown (")
    assert told.endswith(f"the tool's reconcile check settled it as succeeded.\nthe ledger holds the refund {key}")
    assert messages[-1].text == LEDGER_REFUND_ANSWER
    settled = [e for e in lab.events(session_id) if e.type == "dex_agents.tool_outcome_settled"]
    assert {(e.payload["status"], e.payload["settled_by"]) for e in settled} == {("succeeded", "reconcile")}


def test_a_worker_killed_right_after_an_edited_approval_runs_the_edited_call_once(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    session_id = new_session_id()
    edited = '{"order_id":7}'
    worker, interrupt = _approved_with_an_edit(lab, session_id, REFUND_MESSAGE, edited, approver="ana",
                                               reason="wrong order")
    worker.kill()  # right after the approval committed: before, during or after AwaitToolApproval honoured it
    assert worker.returncode == -9
    lab.start_worker()
    lab.sessions.wait_for_completed_turns(session_id, 1)

    assert _runs(lab, session_id) == [tool_key(session_id, "refund", REFUND_CALL_ID)]  # exactly once
    messages = lab.sessions.snapshot(session_id).messages
    (told,) = [m.tool_output or "" for m in messages if m.role is MessageRole.TOOL]
    assert told == (f"[Dex] ana edited this call's arguments before approving it; it ran with {edited} instead of "
                    f"{interrupt.arguments}. Reason: wrong order.\norder 7 refunded")  # ran with the edit
    assert messages[-1].text == REFUND_ANSWER
    assert lab.sessions.sessions.resolve_interrupt(session_id, interrupt.interrupt_id, True) is False  # used once


def test_a_worker_killed_inside_the_edited_call_never_runs_it_again(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    session_id = new_session_id()
    edited = '{"gate":"refund","order_id":7}'
    worker, interrupt = _approved_with_an_edit(lab, session_id, GATED_REFUND_MESSAGE, edited, approver="ana")
    gate = lab.gate(REFUND_GATE)
    gate.wait_until_reached(timeout=CRASH_TIMEOUT)
    lab.kill_at(worker, gate)
    lab.sessions.wait_for_completed_turns(session_id, 1)

    assert _runs(lab, session_id) == [tool_key(session_id, "refund", REFUND_CALL_ID)]  # once: never rerun
    kept = lab.sessions.sessions.unknown_outcome(session_id, REFUND_CALL_ID)
    assert kept is not None and kept.approval is not None
    assert (kept.status, kept.arguments, kept.approval.original_arguments, kept.approval.approver) == (
        ToolCallStatus.OUTCOME_UNKNOWN, edited, interrupt.arguments, "ana")  # what ran: the edit, and by whom
    assert lab.executions(session_id).count(failed(StepType.CALL_SINGLE_ATTEMPT_TOOL)) == 1
