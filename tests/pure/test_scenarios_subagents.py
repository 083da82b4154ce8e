"""Sub-agents (issue 26, item 3): a call of a sub-agent tool runs in ``AwaitSubAgent``, whose wait
starts the child session (a Dex SubFlow) and whose ``execute`` records how it ended and adds its usage;
a child session ends its Flow with its turn's result (``CompleteSession``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dex_agents.pure.machine.endings import AnswerRpc, CompleteSession, SkipWait, WaitForChildSession
from dex_agents.pure.machine.reducers import SKIPPED, sub_agent_result_of
from dex_agents.pure.machine.reducers.subagents import MISSING_TASK, task_of
from dex_agents.pure.machine.rpc_calls import CancelToolCallCalled, CancelTurnCalled
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import (
    ModelAttemptsExhausted,
    SessionStarted,
    SubAgentEnded,
    SubAgentWaitStarted,
    ToolStepStarted,
    TurnCancelStarted,
)
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.rpc import CancelToolCallInput, CancelTurnInput
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import (
    AgentSessionStartInput,
    AgentStatus,
    AgentUsage,
    SubAgentResult,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.pure.wire import encode
from tests.pure.scenario_support import (
    FLOW_ID,
    Session,
    completed,
    event_types,
    events_of,
    is_dead_end,
    moves,
    recovery,
    requested,
    started_session,
    tool_call,
)

TASK = '{"task": "refund order 17"}'
CHILD_USAGE = AgentUsage(requests=2, input_tokens=30, output_tokens=7)


def delegating(arguments: str = TASK, effect: ToolEffect = ToolEffect.NON_IDEMPOTENT_WRITE,
               requires_approval: bool = False) -> Session:
    """A parent whose model called the sub-agent tool ``ask_billing`` (call ``b``)."""
    session = started_session()
    call = tool_call("b", effect, tool_name="ask_billing", arguments=arguments, requires_approval=requires_approval)
    session.model(requested(replace(call, policy=replace(call.policy, sub_agent="billing"))))
    return session


def ended(session: Session, result: SubAgentResult | None, status: str = "COMPLETED",
          child: str | None = "SubFlow:session-42-AwaitSubAgent-1-0") -> object:
    return session.run_step(SubAgentEnded(invocation=session.inv(), tool_call_id="b", child_session_id=child,
                                          child_status=status, result=result))


def test_the_call_moves_to_await_sub_agent_and_its_wait_starts_the_child_with_the_task() -> None:
    session = delegating()
    assert moves(session.last) == [(StepType.AWAIT_SUB_AGENT, "b"), (StepType.RESUME_TURN, 1)]  # type: ignore[arg-type]
    assert session.record["b"].sub_agent == "billing"
    waited = session.feed_wait(SubAgentWaitStarted(invocation=session.inv(), tool_call_id="b"))
    assert waited.ending == WaitForChildSession(flow_type="billing", start_input=AgentSessionStartInput(
        initial_message="refund order 17", parent_session_id=FLOW_ID, parent_tool_call_id="b"))
    assert waited.record is not None


def test_an_approved_sub_agent_call_moves_to_await_sub_agent() -> None:
    session = delegating(requires_approval=True)
    assert moves(session.last)[0] == (StepType.AWAIT_TOOL_APPROVAL, "b")  # type: ignore[arg-type]
    approved = session.resolution_arrives("b", True)
    assert moves(approved) == [(StepType.AWAIT_SUB_AGENT, "b")]


def test_the_child_result_is_the_calls_output_and_its_usage_rolls_up() -> None:
    session = delegating()
    before = session.state.usage
    t = ended(session, SubAgentResult(status="completed", text="Refunded (rf_881).", usage=CHILD_USAGE))
    record = session.record["b"]
    assert (record.status, record.output, record.child_session_id) == (
        ToolCallStatus.SUCCEEDED, "Refunded (rf_881).", "SubFlow:session-42-AwaitSubAgent-1-0")
    assert session.state.usage == replace(before, requests=before.requests + 2,
                                          input_tokens=before.input_tokens + 30, output_tokens=7)
    assert event_types(t) == ["tool_call_started", "usage_recorded", "dex_agents.sub_agent_ended",  # type: ignore[arg-type]
                              "tool_call_finished"]
    (subagent_event,) = [e for e in events_of(t) if e.type == "dex_agents.sub_agent_ended"]  # type: ignore[arg-type]
    assert subagent_event.payload["child_status"] == "COMPLETED"
    assert is_dead_end(t)  # type: ignore[arg-type]
    assert is_dead_end(ended(session, None))  # type: ignore[arg-type]  # a final record is left alone


def test_a_failed_child_turn_fails_the_call_with_its_error() -> None:
    session = delegating()
    ended(session, SubAgentResult(status="failed", text="the model is unavailable", usage=CHILD_USAGE))
    record = session.record["b"]
    assert (record.status, record.error) == (ToolCallStatus.FAILED, "the model is unavailable")


@pytest.mark.parametrize(("effect", "status"), [(ToolEffect.READ, ToolCallStatus.FAILED),
                                                (ToolEffect.NON_IDEMPOTENT_WRITE, ToolCallStatus.OUTCOME_UNKNOWN)])
def test_a_child_closed_without_a_result_is_the_effects_crash_status(effect: ToolEffect,
                                                                     status: ToolCallStatus) -> None:
    session = delegating(effect=effect)
    ended(session, None, status="CANCELED")
    record = session.record["b"]
    assert record.status is status and "ended CANCELED without a result" in (record.error or "")


@pytest.mark.parametrize("arguments", ["{}", '{"task": "  "}', "not json", '["task"]', '{"task": 3}'])
def test_a_call_without_a_task_skips_the_wait_and_fails(arguments: str) -> None:
    session = delegating(arguments=arguments)
    assert task_of(arguments) is None
    assert session.feed_wait(SubAgentWaitStarted(invocation=session.inv(), tool_call_id="b")).ending == SkipWait()
    ended(session, None, status=SKIPPED, child=None)
    record = session.record["b"]
    assert (record.status, record.error) == (ToolCallStatus.FAILED, MISSING_TASK)


def test_a_sub_agent_record_never_runs_in_a_tool_step_and_a_plain_one_never_in_await_sub_agent() -> None:
    session = delegating()
    refused = session.feed_step(ToolStepStarted(invocation=session.inv(), tool_call_id="b",
                                                step_type=StepType.CALL_SINGLE_ATTEMPT_TOOL))
    assert refused.is_rejection and "runs in AwaitSubAgent" in refused.ending.error  # type: ignore[union-attr]
    plain = started_session()
    plain.model(requested(tool_call("r", ToolEffect.READ)))
    assert plain.feed_wait(SubAgentWaitStarted(invocation=plain.inv(), tool_call_id="r")).ending == SkipWait()
    assert plain.feed_step(SubAgentEnded(invocation=plain.inv(), tool_call_id="r", child_session_id="c",
                                         child_status="COMPLETED", result=None)).is_rejection


def test_the_failure_route_records_a_sub_agent_call_by_its_effect() -> None:
    session = delegating()
    session.attempts_exhausted("b", "Worker lost")
    assert session.record["b"].status is ToolCallStatus.OUTCOME_UNKNOWN


def child_session() -> Session:
    session = Session(config=SessionConfig())
    start = AgentSessionStartInput(initial_message="refund order 17", parent_session_id="parent-1",
                                   parent_tool_call_id="b")
    session.run_step(SessionStarted(invocation=session.inv(), start_input=start))
    return session


def test_a_child_session_completes_its_flow_with_its_turns_result() -> None:
    session = child_session()
    assert session.state.agent_state is not None and session.state.agent_state.parent_session_id == "parent-1"
    assert session.state.agent_state.parent_tool_call_id == "b"
    t = session.model(completed("Looking.", "Refunded (rf_881).", usage=CHILD_USAGE))
    assert isinstance(t.ending, CompleteSession)
    assert t.ending.result == SubAgentResult(status="completed", text="Refunded (rf_881).", usage=session.state.usage)
    assert session.state.agent_state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    assert sub_agent_result_of(encode(t.ending.result)) == t.ending.result
    assert sub_agent_result_of("not a result") is None


def test_a_child_session_whose_turn_fails_completes_with_the_error() -> None:
    session = child_session()
    session.model_fails("boom", retryable=True)
    t = session.run_step(ModelAttemptsExhausted(invocation=session.inv(), recovery_error=recovery("boom")))
    assert isinstance(t.ending, CompleteSession) and t.ending.result.status == "failed"
    assert "boom" in t.ending.result.text


def test_a_session_without_a_parent_awaits_the_next_message() -> None:
    session = started_session()
    assert moves(session.model(completed("Hi."))) == [(StepType.AWAIT_USER_MESSAGE, None)]


def test_a_tool_policy_carries_its_sub_agent_into_the_resolved_policy() -> None:
    from dex_agents.pure.machine.policies import resolve_tool_policy

    policy = ToolPolicy(effect=ToolEffect.READ, requires_approval=False, sub_agent="billing")
    assert resolve_tool_policy("ask", None, {"ask": policy}, ToolEffect.UNCLASSIFIED).sub_agent == "billing"
    assert resolve_tool_policy("other", None, {"ask": policy}, ToolEffect.UNCLASSIFIED).sub_agent is None


def test_cancel_turn_cancels_a_waiting_sub_agent_call_and_a_childs_canceled_turn_completes_it() -> None:
    session = delegating()
    t = session.feed_rpc(CancelTurnCalled(input=CancelTurnInput(turn_id="turn-1", reason="hung up"),
                                          now_ms=session.now_ms))
    ending = t.ending
    assert isinstance(ending, AnswerRpc) and StepType.AWAIT_SUB_AGENT in ending.cancel_steps
    session.run_step(TurnCancelStarted(invocation=session.inv()))  # CancelTurn decides from a fresh read
    assert session.state.unknown_tool_outcomes["b"].status is ToolCallStatus.OUTCOME_UNKNOWN  # the child may have written
    child = child_session()
    assert child.state.agent_state is not None
    child.feed_rpc(CancelTurnCalled(input=CancelTurnInput(turn_id="turn-1", reason="hung up"), now_ms=child.now_ms))
    ended = child.run_step(TurnCancelStarted(invocation=child.inv()))
    assert isinstance(ended.ending, CompleteSession)
    assert (ended.ending.result.status, ended.ending.result.text) == ("canceled", "cancelled by the user: hung up")


def test_cancel_tool_call_of_a_sub_agent_beside_another_is_refused() -> None:
    session = started_session()
    calls = [tool_call(call_id, ToolEffect.READ, tool_name="ask_billing", arguments=TASK, requires_approval=False)
             for call_id in ("b1", "b2")]
    session.model(requested(*(replace(call, policy=replace(call.policy, sub_agent="billing")) for call in calls)))
    refused = session.feed_rpc(CancelToolCallCalled(input=CancelToolCallInput(tool_call_id="b1", reason="no"),
                                                    now_ms=session.now_ms))
    assert refused.is_rejection and "sub-agent" in refused.ending.error  # type: ignore[union-attr]
