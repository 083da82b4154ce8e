"""Hypothesis strategies for whole sessions: the state machine's draws (``test_machine.py``), and every
Step input and RPC call with valid, odd and invalid values plus Flow configs (``test_totality.py``).
Session states are in ``state_strategies.py``.

Wire-value strategies live in ``strategies.py``; this module builds on them.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from pyrsistent import pmap, pvector

from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    CancelToolCallCalled,
    CancelTurnCalled,
    ResolveInterruptCalled,
    ResolveToolOutcomeCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
    SessionRewindRecorded,
)
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.rpc import (
    CancelToolCallInput,
    CancelTurnInput,
    ResolveInterruptInput,
    ResolveToolOutcomeInput,
    SendUserMessageInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.values.time_travel import RecordSessionRewindInput
from dex_agents.pure.values.runner import DeferredToolCall, ToolCallsRequested, ToolPolicy, TurnCompleted
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelNote,
    TurnCancelStarted,
    ApprovalWaitEnded,
    ApprovalWaitStarted,
    HeartbeatSent,
    InitialMessage,
    Invocation,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    QueuedMessage,
    RecoveryError,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailureNote,
    UserMessageArrived,
    UserMessageBuilt,
    UserMessagePurpose,
)
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentUsage,
    FrameworkMessage,
    MessageRole,
    ToolEffect,
)
from tests.pure.scenario_support import text_message
from tests.pure.strategies import (
    RESOLUTION_FIELDS,
    framework_messages,
    identifiers,
    int64s,
    list_agent_messages_inputs,
    resolved_policies,
    send_user_message_inputs,
    start_inputs,
    texts,
    tool_effects,
    tool_policies,
    usages,
    user_messages,
    vectors_of,
)


# -- the session state machine's draws (test_machine.py, test_totality.py) ---------------------------

user_texts: SearchStrategy[str] = st.sampled_from(["", "  \n", "Where is order 42?", "Merci 🙏", "cancel it", "x" * 300])
"""What users send: blank texts (refused) and real ones."""

small_usages: SearchStrategy[AgentUsage] = st.builds(
    AgentUsage,
    requests=st.integers(min_value=0, max_value=2),
    input_tokens=st.integers(min_value=0, max_value=5000),
    output_tokens=st.integers(min_value=0, max_value=800),
    cache_read_tokens=st.integers(min_value=0, max_value=4000),
    cache_write_tokens=st.integers(min_value=0, max_value=100),
)


def build_user_message(text: str) -> FrameworkMessage:
    """A runner's ``build_user_message``: deterministic, role ``user``."""
    return text_message(MessageRole.USER, text)


model_messages: SearchStrategy[FrameworkMessage] = st.one_of(
    st.builds(
        FrameworkMessage,
        role=st.just(MessageRole.ASSISTANT),
        text=st.sampled_from(["Order 42 has shipped.", "Done — charged 5 €.", ""]),
        tool_call_id=st.none(),
        tool_name=st.none(),
        tool_arguments=st.none(),
        tool_output=st.none(),
        framework_item=st.just('{"role":"assistant"}'),
    ),
    st.builds(
        FrameworkMessage,
        role=st.just(MessageRole.TOOL),
        text=st.none(),
        tool_call_id=st.just("call-1"),
        tool_name=st.just("search_orders"),
        tool_arguments=st.just('{"order_id":42}'),
        tool_output=st.just('{"status":"shipped"}'),
        framework_item=st.just('{"type":"function_call_output"}'),
    ),
)
"""Messages a final model call returns (``TurnCompleted.new_messages``)."""

tool_call_drafts: SearchStrategy[tuple[ToolEffect, bool]] = st.tuples(tool_effects, st.booleans())
"""One call with its resolved policy drawn directly: an effect and whether it requires approval."""

MACHINE_TOOL_POLICIES: dict[str, ToolPolicy] = {
    "search_orders": ToolPolicy(effect=ToolEffect.READ),
    "send_email": ToolPolicy(effect=ToolEffect.IDEMPOTENT_WRITE, requires_approval=True),
    "update_address": ToolPolicy(effect=ToolEffect.IDEMPOTENT_WRITE),
    "charge_card": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE),
    "refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
    "legacy_script": ToolPolicy(effect=ToolEffect.UNCLASSIFIED, requires_approval=False),
}
"""The state machine Flow's ``tool_policies``; tools not listed here resolve by framework effect or default."""

runner_tool_requests: SearchStrategy[tuple[str, ToolEffect | None]] = st.tuples(
    st.sampled_from([*MACHINE_TOOL_POLICIES, "lookup", "mcp_tool"]), st.none() | tool_effects
)
"""What a runner asks for: a tool name and the framework effect it passes (``None``: no metadata)."""
"""One requested call: its effect and whether it requires approval."""


# -- arbitrary sessions and inputs for the totality property (test_totality.py) ---------------------

call_ids: SearchStrategy[str] = st.one_of(st.sampled_from(["call-1", "call-2", "call-3"]), identifiers, st.sampled_from(["", "a/b"]))
"""Tool call IDs: the few a state holds (so inputs hit records), others, and invalid ones."""

times_ms: SearchStrategy[int] = st.one_of(
    st.integers(min_value=1_767_323_000_000, max_value=1_767_324_000_000), int64s, st.just(0)
)

_valid_attempts = st.integers(min_value=1, max_value=3)
invocations: SearchStrategy[Invocation] = st.builds(
    Invocation,
    flow_id=st.one_of(st.just("session-42"), st.just("session-42"), texts),
    step_execution_id=texts,
    attempt=st.one_of(_valid_attempts, _valid_attempts, _valid_attempts, int64s),
    now_ms=times_ms,
)
"""Mostly usable invocations (so inputs reach the reducers' logic), sometimes empty IDs or bad attempts."""

any_messages: SearchStrategy[FrameworkMessage] = st.one_of(framework_messages, user_texts.map(build_user_message))
usages_any: SearchStrategy[AgentUsage] = st.one_of(small_usages, usages, st.builds(AgentUsage, requests=int64s))
deferred_calls_any: SearchStrategy[DeferredToolCall] = st.builds(
    DeferredToolCall, tool_call_id=call_ids, tool_name=identifiers, arguments=texts, policy=resolved_policies
)
outcomes_any: SearchStrategy[TurnCompleted | ToolCallsRequested] = st.one_of(
    st.builds(TurnCompleted, new_messages=vectors_of(any_messages), usage=usages_any),
    st.builds(
        ToolCallsRequested,
        framework_run_state=st.one_of(st.just(""), texts),
        tool_calls=vectors_of(deferred_calls_any),
        usage=usages_any,
    ),
)
_TURN_1_RESOLUTION_FIELDS: dict[str, SearchStrategy[object]] = {
    **RESOLUTION_FIELDS,
    "interrupt_id": st.one_of(call_ids.map(lambda c: f"turn-1:{c}"), texts),
}
"""Resolution fields whose interrupt ID often names a turn-1 call, so some resolutions match."""

resolutions_any: SearchStrategy[AgentInterruptResolution] = st.builds(AgentInterruptResolution, **_TURN_1_RESOLUTION_FIELDS)
recovery_errors: SearchStrategy[RecoveryError | None] = st.none() | st.builds(RecoveryError, detail=texts, error_type=texts)
purposes: SearchStrategy[UserMessagePurpose] = st.one_of(
    st.builds(InitialMessage),
    st.builds(QueuedMessage),
    st.builds(TurnFailureNote, error=texts, recorded_usage=st.none() | usages_any),
    st.builds(TurnCancelNote),
)
step_inputs_any: SearchStrategy[SessionInput] = st.one_of(
    st.builds(SessionStarted, invocation=invocations, start_input=start_inputs),
    st.builds(UserMessageArrived, invocation=invocations, consumed=vectors_of(user_messages)),
    st.builds(UserMessageBuilt, invocation=invocations, purpose=purposes, message=any_messages),
    st.builds(ModelStepStarted, invocation=invocations),
    st.builds(ModelCallFinished, invocation=invocations, outcome=outcomes_any),
    st.builds(ModelCallFailed, invocation=invocations, error=texts, retryable=st.booleans()),
    st.builds(ApprovalWaitStarted, invocation=invocations, tool_call_id=call_ids),
    st.builds(
        ApprovalWaitEnded,
        invocation=invocations,
        tool_call_id=call_ids,
        timer_fired=st.booleans(),
        resolutions=vectors_of(resolutions_any),
    ),
    st.builds(ToolStepStarted, invocation=invocations, tool_call_id=call_ids, step_type=st.sampled_from(StepType)),
    st.builds(HeartbeatSent, invocation=invocations, tool_call_id=call_ids),
    st.builds(ToolCallSucceeded, invocation=invocations, tool_call_id=call_ids, output=texts),
    st.builds(ToolExecutionFailed, invocation=invocations, tool_call_id=call_ids, error=texts),
    st.builds(ToolAttemptsExhausted, invocation=invocations, tool_call_id=call_ids, recovery_error=recovery_errors),
    st.builds(SingleAttemptToolFailed, invocation=invocations, tool_call_id=call_ids, recovery_error=recovery_errors),
    st.builds(ToolResultsArrived, invocation=invocations, expected=st.one_of(st.integers(min_value=-1, max_value=4), int64s)),
    st.builds(ModelAttemptsExhausted, invocation=invocations, recovery_error=recovery_errors),
    st.builds(TurnCancelStarted, invocation=invocations),
    st.builds(ToolCancellationStarted, invocation=invocations, tool_call_id=call_ids),
)
rpc_calls_any: SearchStrategy[SessionInput] = st.one_of(
    st.builds(SendUserMessageCalled, input=send_user_message_inputs | user_texts.map(lambda t: SendUserMessageInput(text=t))),
    st.builds(
        ResolveInterruptCalled,
        input=st.builds(ResolveInterruptInput, **_TURN_1_RESOLUTION_FIELDS),
        now_ms=times_ms,
    ),
    st.builds(AgentSnapshotRequested),
    st.builds(SessionRewindRecorded, now_ms=times_ms, input=st.builds(
        RecordSessionRewindInput, to_turn=st.integers(min_value=-1, max_value=3), reason=st.none() | texts,
        previous_run_id=st.sampled_from(["run-1", "", "a/b"]), removed_turn_count=st.integers(min_value=-1, max_value=3),
        tool_calls=st.just(pvector()))),
    st.builds(AgentMessagesListed, input=list_agent_messages_inputs),
    st.builds(SendUserMessageOnceCalled, input=st.builds(
        SendUserMessageOnceInput, message_id=st.sampled_from(["m-1", "m-2", "", " ", "a/b", "m-\ud800", "x" * 201]),
        text=user_texts)),
    st.builds(CancelTurnCalled, input=st.builds(CancelTurnInput, turn_id=st.sampled_from(["turn-1", "turn-2", ""]),
                                                reason=st.one_of(st.just("stop"), texts)), now_ms=times_ms),
    st.builds(CancelToolCallCalled, input=st.builds(CancelToolCallInput, tool_call_id=call_ids,
                                                    reason=st.one_of(st.just("stop"), texts)), now_ms=times_ms),
    st.builds(ResolveToolOutcomeCalled, input=st.builds(
        ResolveToolOutcomeInput, tool_call_id=call_ids | st.sampled_from(["", " "]),
        status=st.sampled_from(["succeeded", "failed", "outcome_unknown", ""]), output_or_message=texts,
        resolver=st.sampled_from(["bo@ops", "", " ", "x\ud800"]), reason=st.none() | texts), now_ms=times_ms),
)
session_inputs_any: SearchStrategy[SessionInput] = step_inputs_any | rpc_calls_any
"""Every Step input, ``wait_for`` input and RPC call, with valid, odd and invalid field values."""

session_configs: SearchStrategy[SessionConfig] = st.builds(
    SessionConfig,
    tool_policies=st.dictionaries(identifiers, tool_policies, max_size=3).map(pmap),
    default_tool_effect=tool_effects,
    interrupt_deadline_ms=st.none() | st.integers(min_value=0, max_value=10**15),
    max_model_calls_per_turn=st.sampled_from([1, 2, 3, 50]),
)
