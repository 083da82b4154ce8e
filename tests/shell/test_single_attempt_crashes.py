"""The spec's crash tests for single-attempt tools (``CallSingleAttemptTool``): a crash while the tool
runs records ``outcome_unknown`` and never runs the tool a second time, also under an ASYNC step
durability FlowConfig, and also when the tool stops and kills its own Worker before anything else
happens.

The Worker runs in a child process, the Client stays in the test process; every test asserts in
Step history and in committed values, and counts real tool runs with the cross-process tool log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
from dex import FlowConfig, StartFlowOptions, StepDurability, WorkerTarget
from dex.dexpb import dex_pb2 as pb

from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.texts import outcome_unknown_tool_result
from dex_agents.pure.values.session import MessageRole
from dex_agents.testing import KillableWorkerProcess, poll_until
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.shell.agents import (
    GATED_REFUND_MESSAGE,
    REFUND_ANSWER,
    REFUND_CALL_ID,
    REFUND_GATE,
    SELF_DESTRUCT_ANSWER,
    SELF_DESTRUCT_GATE,
    STALLED_SELF_DESTRUCT_CALL_ID,
    STALLED_SELF_DESTRUCT_MESSAGE,
)
from tests.shell.crashes import (
    CRASH_TIMEOUT,
    CrashLab,
    completed,
    execute_failure_details,
    failed,
    new_session_id,
    raw_history,
    step_method_durabilities,
    tool_key,
)

STREAM_LOSS_SECONDS: Final = 9.0
"""How soon the engine must fail the attempt of a SIGKILLed Worker with no Worker running: less than
Dex's 10 s minimum heartbeat timeout, so only the closed stream can have told it."""

SELF_DESTRUCT_ROUNDS: Final = 5

OUTPUT_SECONDS: Final = 10.0
"""How long a frame the Worker wrote before its tool ran may take to be committed (milliseconds in practice)."""


def _wait_for_exit(worker: KillableWorkerProcess) -> int:
    return poll_until(lambda: worker.returncode, timeout=CRASH_TIMEOUT,
                      description=f"Worker child {worker.pid} to exit")


def _assert_outcome_unknown(lab: CrashLab, session_id: str, tool_name: str, tool_call_id: str,
                            answer: str, before_tool: list[tuple[str, str, int]]) -> None:
    """The tool ran once, its attempt failed, ``RecordToolOutcomeUnknown`` recorded it, the model was
    told with the outcome_unknown text of the failure Dex recorded, and the turn completed."""
    runs = [entry for entry in lab.tools.entries() if f":{session_id}/" in entry]
    assert runs == [tool_key(session_id, tool_name, tool_call_id)]
    assert lab.executions(session_id) == [
        *before_tool, failed(StepType.CALL_SINGLE_ATTEMPT_TOOL), completed(StepType.RECORD_TOOL_OUTCOME_UNKNOWN),
        completed(StepType.RESUME_TURN), completed(StepType.RUN_MODEL)]
    details = execute_failure_details(raw_history(lab.server_address, session_id), StepType.CALL_SINGLE_ATTEMPT_TOOL)
    assert len(details) == 1 and details[0].strip() != ""

    messages = lab.sessions.snapshot(session_id).messages
    assert [(m.role, m.tool_call_id, m.tool_output) for m in messages if m.role is MessageRole.TOOL] == [
        (MessageRole.TOOL, tool_call_id, outcome_unknown_tool_result(details[0]))]
    assert messages[-1].role is MessageRole.ASSISTANT and messages[-1].text == answer
    finished = [e for e in lab.events(session_id) if e.type == "tool_call_finished"]
    assert [(e.step_execution_id, e.payload["status"]) for e in finished] == [
        ("RecordToolOutcomeUnknown-1", "outcome_unknown")]


@pytest.mark.parametrize("step_durability", [None, StepDurability.ASYNC], ids=["default-config", "async-config"])
def test_a_sigkill_during_a_single_attempt_tool_records_outcome_unknown(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path, step_durability: StepDurability | None) -> None:
    """The approved refund is held inside the tool, after its run was logged, and its Worker is
    SIGKILLed. The engine fails the attempt as soon as the stream is lost (no Worker running), the
    failure route records ``outcome_unknown``, and the next Worker finishes the turn without running
    the refund again. Under an ASYNC ``step_durability`` FlowConfig every Step method still runs
    SYNC (each sets it explicitly), so the same holds."""
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    worker = lab.start_worker()
    session_id = new_session_id()
    gate = lab.gate(REFUND_GATE)
    options = None if step_durability is None else StartFlowOptions(
        config_override=FlowConfig(step_durability=step_durability, worker_target=WorkerTarget(pull=True)))

    lab.sessions.start_session(session_id, GATED_REFUND_MESSAGE, options=options)
    interrupt = lab.sessions.wait_for_pending_interrupt(session_id, "refund")
    assert lab.sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True) is True
    gate.wait_until_reached()
    assert lab.tools.entries() == [tool_key(session_id, "refund", REFUND_CALL_ID)]
    lab.wait_for_event(session_id, lambda e: e.type == "tool_call_started", "the refund's tool_call_started")
    worker.kill()
    assert worker.returncode == -9
    poll_until(lambda: True if failed(StepType.CALL_SINGLE_ATTEMPT_TOOL) in lab.executions(session_id) else None,
               timeout=STREAM_LOSS_SECONDS, description="the engine to fail the SIGKILLed Worker's tool attempt")
    gate.release()
    lab.start_worker()

    lab.sessions.wait_for_completed_turns(session_id, 1)
    before_tool = [completed(StepType.START_AGENT_SESSION), completed(StepType.RUN_MODEL),
                   completed(StepType.AWAIT_TOOL_APPROVAL)]
    _assert_outcome_unknown(lab, session_id, "refund", REFUND_CALL_ID, REFUND_ANSWER, before_tool)

    history = raw_history(lab.server_address, session_id)
    started = history[0].flow_started_or_continued
    expected_config = pb.STEP_DURABILITY_UNSPECIFIED if step_durability is None else pb.STEP_DURABILITY_ASYNC
    assert started.flow_config.step_durability == expected_config
    assert step_method_durabilities(history) == {pb.STEP_DURABILITY_SYNC}


def _self_destruct_round(lab: CrashLab, worker: KillableWorkerProcess, round_number: int, message: str,
                         tool_name: str, tool_call_id: str,
                         while_held: Callable[[str], None] = lambda _session_id: None) -> KillableWorkerProcess:
    """One session whose tool kills ``worker``: start it, let ``while_held`` act while the tool holds
    (if it does), reap the dead Worker, start the next one and check the session. Returns the new Worker."""
    session_id = new_session_id()
    key = tool_key(session_id, tool_name, tool_call_id)
    lab.sessions.start_session(session_id, message)
    while_held(session_id)
    assert _wait_for_exit(worker) == -9
    worker.kill()  # reap it and its process group
    assert lab.tools.count(key) == 1  # recorded before the kill
    worker = lab.start_worker()

    # A re-delivered attempt would run the tool again (and kill this Worker too): stop waiting then.
    def turn_ended_or_tool_rerun() -> bool | None:
        state = lab.sessions.read_agent_state(session_id)
        ended = state is not None and state.completed_turn_count + state.failed_turn_count >= 1
        return True if ended or lab.tools.count(key) > 1 else None

    poll_until(turn_ended_or_tool_rerun, timeout=CRASH_TIMEOUT,
               description=f"round {round_number}: the turn to end or the tool to run again")
    assert lab.tools.count(key) == 1, f"round {round_number}: the tool ran again after its Worker died"
    assert worker.returncode is None
    state = lab.sessions.wait_for_completed_turns(session_id, 1)
    assert state.failed_turn_count == 0 and state.message_count == 4
    _assert_outcome_unknown(lab, session_id, tool_name, tool_call_id, SELF_DESTRUCT_ANSWER,
                            [completed(StepType.START_AGENT_SESSION), completed(StepType.RUN_MODEL)])
    started = [e for e in lab.events(session_id) if e.type == "tool_call_started"]
    assert [(e.step_execution_id, e.attempt) for e in started] == [("CallSingleAttemptTool-1", 1)]
    return worker


def test_a_tool_that_stops_its_worker_and_then_sigkills_it_runs_once(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    """The deterministic regression test of the heartbeat proof. ``stalled_self_destruct_refund``
    stops its Worker's event loop as its first instruction (a synchronous gate), so nothing the SDK
    still held in its frame queue can leave the process; only frames the tool Step wrote to the
    gRPC stream before calling the tool can. Dex must still commit the call's ``tool_call_started``
    while the tool holds, and after the SIGKILL the attempt fails (-> ``outcome_unknown``) instead of
    being re-delivered: the tool runs once per session.

    Without the proof (a bare ``await context.heartbeat()``, which only queues the frame under
    ``AsyncWorker``), ``tool_call_started`` never reaches Dex while the tool holds and this test fails
    waiting for it; a re-delivered attempt would also show as a second run in the tool log."""
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    gate = lab.gate(SELF_DESTRUCT_GATE)

    def sigkill_once_output_is_committed(session_id: str) -> None:
        gate.wait_until_reached(timeout=CRASH_TIMEOUT)
        lab.wait_for_event(session_id, lambda e: e.type == "tool_call_started",
                           "tool_call_started, written before the tool stopped the Worker", timeout=OUTPUT_SECONDS)
        gate.release()

    worker = lab.start_worker()
    for round_number in range(1, SELF_DESTRUCT_ROUNDS + 1):
        worker = _self_destruct_round(lab, worker, round_number, STALLED_SELF_DESTRUCT_MESSAGE,
                                      "stalled_self_destruct_refund", STALLED_SELF_DESTRUCT_CALL_ID,
                                      sigkill_once_output_is_committed)
        gate.reset()
    assert len(lab.tools.entries()) == SELF_DESTRUCT_ROUNDS
