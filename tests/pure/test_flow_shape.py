"""The Flow shape as data agrees with the spec and with the Step options."""

from __future__ import annotations

from pyrsistent import pvector

from dex_agents.pure.machine.flow_shape import allowed_next_steps, rpc_of, steps_producing
from dex_agents.pure.flow.table import STEP_TABLE
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ResolveInterruptCalled,
    SendUserMessageCalled,
)
from dex_agents.pure.values.persistence import RpcName, StepType
from dex_agents.pure.values.rpc import ListAgentMessagesInput, ResolveInterruptInput, SendUserMessageInput
from dex_agents.pure.machine.step_inputs import (
    CompactionStarted,
    HeartbeatSent,
    InitialMessage,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelStepStarted,
    QueuedMessage,
    ReconcileStarted,
    SessionStarted,
    SingleAttemptToolFailed,
    SubAgentEnded,
    SummarizationFailed,
    ToolAttemptsExhausted,
    ToolCancellationStarted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolOutcomeReconciled,
    ToolResultsArrived,
    ToolStepStarted,
    TurnCancelStarted,
    TurnFailureNote,
    UserMessageArrived,
    UserMessageBuilt,
)
from dex_agents.pure.values.session import AgentSessionStartInput
from dex_agents.pure.flow.step_options import step_options_for

from tests.pure.scenario_support import invocation, recovery, user_message


def test_every_step_has_its_next_steps() -> None:
    assert set(STEP_TABLE) == set(StepType)
    assert StepType.START_AGENT_SESSION not in set().union(*(row.next_steps for row in STEP_TABLE.values()))


def test_tool_steps_and_recording_steps_only_dead_end() -> None:
    """... or, for a write whose outcome is unknown and whose policy reconciles, move to the reconcile."""
    for step_type in (StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL, StepType.RECONCILE_TOOL_OUTCOME):
        assert STEP_TABLE[step_type].next_steps == frozenset()
    for step_type in (StepType.RECORD_TOOL_FAILURE, StepType.RECORD_TOOL_OUTCOME_UNKNOWN):
        assert STEP_TABLE[step_type].next_steps == frozenset({StepType.RECONCILE_TOOL_OUTCOME})


def test_failure_routes_match_the_step_options() -> None:
    for step_type in StepType:
        route = step_options_for(step_type, "c1").failure_route
        assert (route.step_type if route else None) == STEP_TABLE[step_type].failure_route


def test_a_tool_step_start_names_its_step_and_a_wrong_one_names_none() -> None:
    started = ToolStepStarted(invocation=invocation(), tool_call_id="c", step_type=StepType.CALL_TOOL)
    assert steps_producing(started) == {StepType.CALL_TOOL}
    assert allowed_next_steps(started) == frozenset()
    wrong = ToolStepStarted(invocation=invocation(), tool_call_id="c", step_type=StepType.RUN_MODEL)
    assert steps_producing(wrong) == frozenset()


def test_each_input_names_the_step_that_produces_it() -> None:
    inv = invocation()
    assert steps_producing(ToolCallSucceeded(invocation=inv, tool_call_id="c", output="o")) == {
        StepType.CALL_TOOL,
        StepType.CALL_SINGLE_ATTEMPT_TOOL,
    }
    assert steps_producing(ToolExecutionFailed(invocation=inv, tool_call_id="c", error="e")) == {
        StepType.CALL_TOOL,
        StepType.CALL_SINGLE_ATTEMPT_TOOL,
    }
    assert steps_producing(ToolAttemptsExhausted(invocation=inv, tool_call_id="c", recovery_error=recovery("e"))) == {
        StepType.RECORD_TOOL_FAILURE
    }
    assert steps_producing(SingleAttemptToolFailed(invocation=inv, tool_call_id="c", recovery_error=None)) == {
        StepType.RECORD_TOOL_OUTCOME_UNKNOWN
    }
    assert steps_producing(HeartbeatSent(invocation=inv, tool_call_id="c")) == {StepType.CALL_SINGLE_ATTEMPT_TOOL}
    assert steps_producing(ToolResultsArrived(invocation=inv, expected=1)) == {StepType.RESUME_TURN}
    assert steps_producing(ModelAttemptsExhausted(invocation=inv, recovery_error=None)) == {StepType.RECORD_TURN_FAILURE}
    assert steps_producing(ModelStepStarted(invocation=inv)) == {StepType.RUN_MODEL}
    start = AgentSessionStartInput(initial_message=None)
    assert steps_producing(SessionStarted(invocation=inv, start_input=start)) == {StepType.START_AGENT_SESSION}
    assert steps_producing(UserMessageArrived(invocation=inv, consumed=pvector())) == {StepType.AWAIT_USER_MESSAGE}
    assert steps_producing(ModelCallFailed(invocation=inv, error="e", retryable=True)) == {StepType.RUN_MODEL}
    assert steps_producing(SubAgentEnded(invocation=inv, tool_call_id="c", child_session_id=None,
                                         child_status="COMPLETED", result=None)) == {StepType.AWAIT_SUB_AGENT}
    assert steps_producing(ReconcileStarted(invocation=inv, tool_call_id="c")) == {StepType.RECONCILE_TOOL_OUTCOME}
    assert steps_producing(ToolOutcomeReconciled(invocation=inv, tool_call_id="c", status="unknown", text=None)) == {
        StepType.RECONCILE_TOOL_OUTCOME
    }
    assert steps_producing(CompactionStarted(invocation=inv, trigger="manual")) == {StepType.COMPACT_HISTORY}
    assert steps_producing(SummarizationFailed(invocation=inv, error="e", retryable=False)) == {
        StepType.COMPACT_HISTORY
    }
    assert steps_producing(TurnCancelStarted(invocation=inv)) == {StepType.CANCEL_TURN}
    assert steps_producing(ToolCancellationStarted(invocation=inv, tool_call_id="c")) == {
        StepType.RECORD_TOOL_CANCELLATION
    }


def test_a_built_user_message_names_the_steps_that_ask_for_its_purpose() -> None:
    def built(purpose: InitialMessage | QueuedMessage | TurnFailureNote) -> UserMessageBuilt:
        return UserMessageBuilt(invocation=invocation(), purpose=purpose, message=user_message("m"))

    assert steps_producing(built(InitialMessage())) == {StepType.START_AGENT_SESSION}
    assert steps_producing(built(QueuedMessage())) == {StepType.AWAIT_USER_MESSAGE}
    note = TurnFailureNote(error="e", recorded_usage=None)
    assert steps_producing(built(note)) == {StepType.RECORD_TURN_FAILURE, StepType.RUN_MODEL}


def test_each_rpc_call_names_its_rpc() -> None:
    assert rpc_of(SendUserMessageCalled(input=SendUserMessageInput(text="x"))) is RpcName.SEND_USER_MESSAGE
    resolve = ResolveInterruptInput(interrupt_id="i", approved=True, rejection_message=None)
    assert rpc_of(ResolveInterruptCalled(input=resolve, now_ms=0)) is RpcName.RESOLVE_INTERRUPT
    assert rpc_of(AgentSnapshotRequested()) is RpcName.GET_AGENT_SNAPSHOT
    listed = AgentMessagesListed(input=ListAgentMessagesInput(before_sequence=None, limit=None))
    assert rpc_of(listed) is RpcName.LIST_AGENT_MESSAGES
