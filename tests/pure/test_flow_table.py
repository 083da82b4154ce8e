"""The flow table against the spec: one row per Step type and per RPC, the spec's inputs, waits, failure
routes, locks and loads (restated here from the spec text on purpose: the spec is the oracle), and the
typed persisted keys, whose value types mypy pins on every persistence effect."""

from __future__ import annotations

from typing import get_args

import pytest
from pyrsistent import pvector

from dex_agents.pure.machine.effects import (
    DeleteAttribute,
    PublishToChannel,
    PublishToChannelInstance,
    SetAttribute,
    SetMapInstance,
)
from dex_agents.pure.machine.endings import AnswerRpc, RpcOutput
from dex_agents.pure.flow.rows import (
    ForChildSession,
    ForInputCountMessages,
    ForOneMessage,
    ForResolutionOrDeadline,
    MethodAccess,
    NoWait,
    StepInputKind,
)
from dex_agents.pure.flow.rows import DEX_DEFAULT_METHOD_TIMEOUT_SECONDS
from dex_agents.pure.flow.table import (
    RPC_TABLE,
    START_INPUT_TYPE,
    STEP_TABLE,
    attempt_deadline_ms,
    method_timeout_seconds,
    steps_with_input,
)
from dex_agents.pure.machine.rpc_calls import SendUserMessageOnceCalled
from dex_agents.pure.values.rpc import SendUserMessageOnceInput
from dex_agents.pure.values.persistence import (
    AGENT_MESSAGES,
    AGENT_STATE,
    AGENT_USAGE,
    FRAMEWORK_RUN_STATE,
    INTERRUPT_RESOLUTIONS,
    PENDING_INTERRUPTS,
    PERSISTED_KEYS,
    QUEUED_USER_MESSAGES,
    TOOL_CALL_RESULTS,
    TURN_MODEL_CALL_COUNT,
    AttributeKey,
    AttributeName,
    ChannelMapName,
    ChannelName,
    MapName,
    RpcName,
    StepType,
    StreamName,
    holds,
)
from dex_agents.pure.machine.policies import tool_step_attempts
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentSessionStartInput,
    AgentUsage,
    AgentUserMessage,
    ToolCallCompleted,
    ToolEffect,
)
from dex_agents.pure.wire.schema import JSON_VALUE_TYPE

from tests.pure.scenario_support import Session, requested, started_session, tool_call

SPEC_PERSISTED_NAMES = [
    "AgentState",
    "AgentMessages",
    "FrameworkRunState",
    "AgentToolCalls",
    "PendingInterrupts",
    "AgentUsage",
    "QueuedUserMessages",
    "InterruptResolutions",
    "ToolCallResults",
    "AgentEvents",
]
"""The spec's persistence table, "Persistence name" column, in its order."""

ADDED_PERSISTED_NAMES = ["TurnModelCallCount", "UserMessageReceipts", "HistorySummary", "CompactionRequested",
                         "SessionRewinds", "UnknownToolOutcomes", "TurnCancellation", "ToolCallCancellations"]
"""Our additions, after the spec's (docs/wire.md): names an old reader never needs."""

SPEC_INPUTS = {
    StepType.START_AGENT_SESSION: StepInputKind.START_INPUT,
    StepType.AWAIT_USER_MESSAGE: StepInputKind.NONE,
    StepType.RUN_MODEL: StepInputKind.NONE,
    StepType.AWAIT_TOOL_APPROVAL: StepInputKind.TOOL_CALL_ID,
    StepType.CALL_TOOL: StepInputKind.TOOL_CALL_ID,
    StepType.CALL_SINGLE_ATTEMPT_TOOL: StepInputKind.TOOL_CALL_ID,
    StepType.RECORD_TOOL_FAILURE: StepInputKind.TOOL_CALL_ID,
    StepType.RECORD_TOOL_OUTCOME_UNKNOWN: StepInputKind.TOOL_CALL_ID,
    StepType.RESUME_TURN: StepInputKind.RESULT_COUNT,
    StepType.RECORD_TURN_FAILURE: StepInputKind.NONE,
}
"""The spec's Step table, "Input" column."""

ADDED_INPUTS = {StepType.COMPACT_HISTORY: StepInputKind.COMPACTION_TRIGGER,
                StepType.RECONCILE_TOOL_OUTCOME: StepInputKind.TOOL_CALL_ID,
                StepType.CANCEL_TURN: StepInputKind.NONE,
                StepType.RECORD_TOOL_CANCELLATION: StepInputKind.TOOL_CALL_ID,
                StepType.AWAIT_SUB_AGENT: StepInputKind.TOOL_CALL_ID}
"""Our Step types' inputs (docs/wire.md)."""

SPEC_FAILURE_ROUTES = {
    StepType.RUN_MODEL: StepType.RECORD_TURN_FAILURE,
    StepType.CALL_TOOL: StepType.RECORD_TOOL_FAILURE,
    StepType.CALL_SINGLE_ATTEMPT_TOOL: StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
}
"""The spec's Step table, "Options" column: the failure routes."""

ADDED_FAILURE_ROUTES = {StepType.COMPACT_HISTORY: StepType.RECORD_TURN_FAILURE,
                        StepType.RECONCILE_TOOL_OUTCOME: StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
                        StepType.AWAIT_SUB_AGENT: StepType.RECORD_TOOL_FAILURE}
"""Our Step types' failure routes: a compaction that cannot be made fails the turn; a reconcile that
cannot answer leaves the outcome unknown; a sub-agent call whose Step runs out of attempts is recorded
as a tool call that failed (its effect's crash status)."""


def test_every_step_type_and_rpc_has_one_row_under_its_own_name() -> None:
    assert list(STEP_TABLE) == list(StepType)
    assert all(row.step_type is step_type for step_type, row in STEP_TABLE.items())
    assert list(RPC_TABLE) == list(RpcName)
    assert all(row.rpc is name for name, row in RPC_TABLE.items())


def test_inputs_are_the_spec_step_tables() -> None:
    assert {step_type: row.input for step_type, row in STEP_TABLE.items()} == SPEC_INPUTS | ADDED_INPUTS
    assert START_INPUT_TYPE is AgentSessionStartInput
    assert steps_with_input(StepInputKind.START_INPUT) == {StepType.START_AGENT_SESSION}


def test_failure_routes_are_the_specs_and_a_route_has_no_route_of_its_own() -> None:
    routes = {step_type: row.failure_route for step_type, row in STEP_TABLE.items() if row.failure_route is not None}
    assert routes == SPEC_FAILURE_ROUTES | ADDED_FAILURE_ROUTES
    for route in routes.values():
        assert STEP_TABLE[route].failure_route is None


def test_waits_are_the_spec_step_tables() -> None:
    waits = {step_type: row.wait for step_type, row in STEP_TABLE.items() if not isinstance(row.wait, NoWait)}
    assert waits == {
        StepType.AWAIT_USER_MESSAGE: ForOneMessage(channel=ChannelName.QUEUED_USER_MESSAGES),
        StepType.RESUME_TURN: ForInputCountMessages(channel=ChannelName.TOOL_CALL_RESULTS),
        StepType.AWAIT_TOOL_APPROVAL: ForResolutionOrDeadline(channel_map=ChannelMapName.INTERRUPT_RESOLUTIONS),
        StepType.AWAIT_SUB_AGENT: ForChildSession(),
    }


def test_only_approvals_compactions_and_sub_agents_lock_in_execute() -> None:
    """A sub-agent's call adds its child's usage to ``AgentUsage``: two such calls of one round run at
    once, so each locks it."""
    locking = {step_type: row.execute.locks for step_type, row in STEP_TABLE.items() if row.execute.locks}
    assert locking == {StepType.AWAIT_TOOL_APPROVAL: (AttributeName.PENDING_INTERRUPTS,),
                       StepType.COMPACT_HISTORY: (AttributeName.HISTORY_SUMMARY,),
                       StepType.AWAIT_SUB_AGENT: (AttributeName.AGENT_USAGE,)}
    assert all(not row.wait_for.locks for row in STEP_TABLE.values())


def test_a_tool_call_step_loads_only_its_own_record() -> None:
    for step_type in steps_with_input(StepInputKind.TOOL_CALL_ID):
        row = STEP_TABLE[step_type]
        assert row.execute.maps == ()
        own = (MapName.AGENT_TOOL_CALLS, MapName.TOOL_CALL_CANCELLATIONS) if (
            step_type is StepType.RECORD_TOOL_CANCELLATION) else (MapName.AGENT_TOOL_CALLS,)
        assert row.execute.call_instances == own, "its own record (and its own cancellation request)"
        assert row.execute.instances("c1")[0].key == "c1"
    for step_type in set(StepType) - steps_with_input(StepInputKind.TOOL_CALL_ID):
        assert STEP_TABLE[step_type].execute.call_instances == ()


def test_every_reader_of_agent_messages_reads_them_as_a_cached_map() -> None:
    """``AgentMessages`` instances are written once, so every method that reads them may be served from a
    Worker's cache of committed messages (the bytes a turn moves do not grow with the session)."""
    accesses = [*(row.execute for row in STEP_TABLE.values()), *(row.wait_for for row in STEP_TABLE.values()),
                *(row.access for row in RPC_TABLE.values())]
    for access in accesses:
        assert (MapName.AGENT_MESSAGES in access.maps) == (MapName.AGENT_MESSAGES in access.cached_maps)
    assert STEP_TABLE[StepType.RUN_MODEL].execute.cached_maps == (MapName.AGENT_MESSAGES,)


def test_a_cached_map_must_be_loaded() -> None:
    with pytest.raises(ValueError, match="among the maps loaded"):
        MethodAccess(cached_maps=(MapName.AGENT_MESSAGES,))


def test_method_timeouts_are_the_rows_or_dexs_two_hour_default() -> None:
    """One statement of Dex's default method timeout (2 h); ``RunModel`` sets its own 15 minutes."""
    assert DEX_DEFAULT_METHOD_TIMEOUT_SECONDS == 2 * 60 * 60
    assert method_timeout_seconds(StepType.RUN_MODEL) == 15 * 60
    assert method_timeout_seconds(StepType.CALL_TOOL) == DEX_DEFAULT_METHOD_TIMEOUT_SECONDS
    assert attempt_deadline_ms(StepType.RUN_MODEL, 1_000) == 1_000 + 15 * 60 * 1000
    assert attempt_deadline_ms(StepType.CALL_SINGLE_ATTEMPT_TOOL, 0) == 2 * 60 * 60 * 1000


def test_tool_attempts_come_from_the_tool_steps_rows() -> None:
    assert tool_step_attempts(ToolEffect.READ) == 3
    assert tool_step_attempts(ToolEffect.UNCLASSIFIED) == 1


def test_rpc_rows_are_the_spec_rpc_tables() -> None:
    assert {name: row.access for name, row in RPC_TABLE.items()} == {
        RpcName.SEND_USER_MESSAGE: MethodAccess(),
        RpcName.RESOLVE_INTERRUPT: MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,)),
        RpcName.GET_AGENT_SNAPSHOT: MethodAccess(maps=(MapName.AGENT_MESSAGES, MapName.AGENT_TOOL_CALLS),
                                                 cached_maps=(MapName.AGENT_MESSAGES,)),
        RpcName.LIST_AGENT_MESSAGES: MethodAccess(maps=(MapName.AGENT_MESSAGES,), cached_maps=(MapName.AGENT_MESSAGES,)),
        RpcName.COMPACT_HISTORY: MethodAccess(maps=(MapName.AGENT_MESSAGES,), cached_maps=(MapName.AGENT_MESSAGES,)),
        RpcName.SEND_USER_MESSAGE_ONCE: MethodAccess(message_instances=(MapName.USER_MESSAGE_RECEIPTS,)),
        RpcName.EXTEND_INTERRUPT_DEADLINE: MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,)),
        RpcName.RECORD_SESSION_REWIND: MethodAccess(),
        RpcName.CANCEL_TURN: MethodAccess(),
        RpcName.CANCEL_TOOL_CALL: MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,),
                                               maps=(MapName.AGENT_TOOL_CALLS, MapName.TOOL_CALL_CANCELLATIONS)),
        RpcName.RESOLVE_TOOL_OUTCOME: MethodAccess(message_instances=(MapName.UNKNOWN_TOOL_OUTCOMES,
                                                                      MapName.AGENT_TOOL_CALLS)),
    }
    assert {name for name, row in RPC_TABLE.items() if row.writes} == {
        RpcName.SEND_USER_MESSAGE,
        RpcName.RESOLVE_INTERRUPT,
        RpcName.SEND_USER_MESSAGE_ONCE,
        RpcName.COMPACT_HISTORY,
        RpcName.EXTEND_INTERRUPT_DEADLINE,
        RpcName.RECORD_SESSION_REWIND,
        RpcName.CANCEL_TURN,
        RpcName.CANCEL_TOOL_CALL,
        RpcName.RESOLVE_TOOL_OUTCOME,
    }
    assert RPC_TABLE[RpcName.GET_AGENT_SNAPSHOT].input_type is None


def test_the_rpc_output_union_is_the_tables_output_types() -> None:
    assert set(get_args(RpcOutput)) == {row.output_type for row in RPC_TABLE.values()}


def test_an_rpc_that_does_not_write_only_answers() -> None:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.UNCLASSIFIED)))
    transitions = {
        RpcName.GET_AGENT_SNAPSHOT: session.snapshot(),
        RpcName.LIST_AGENT_MESSAGES: session.list_messages(),
        RpcName.SEND_USER_MESSAGE: session.send("x"),
        RpcName.RESOLVE_INTERRUPT: session.resolve("turn-1:w", True),
        RpcName.SEND_USER_MESSAGE_ONCE: session.feed_rpc(
            SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m", text="x"))),
    }
    for name, transition in transitions.items():
        only_answers = all(isinstance(effect, AnswerRpc) for effect in transition.effects)
        assert only_answers is not RPC_TABLE[name].writes, name


def test_there_is_one_typed_key_per_persisted_name_in_the_spec_order() -> None:
    assert [key.name for key in PERSISTED_KEYS] == SPEC_PERSISTED_NAMES + ADDED_PERSISTED_NAMES
    names = {*AttributeName, *MapName, *ChannelName, *ChannelMapName, *StreamName}
    assert {key.name for key in PERSISTED_KEYS} == names
    assert FRAMEWORK_RUN_STATE.value_type is str
    assert TURN_MODEL_CALL_COUNT.value_type is int


def test_keys_hold_their_own_type_only() -> None:
    assert PENDING_INTERRUPTS.holds(pvector())
    assert not PENDING_INTERRUPTS.holds(pvector([AgentUsage()]))
    assert not PENDING_INTERRUPTS.holds([])
    assert AGENT_USAGE.holds(AgentUsage()) and not AGENT_USAGE.holds("x")
    assert TURN_MODEL_CALL_COUNT.holds(3) and not TURN_MODEL_CALL_COUNT.holds(True)
    assert not TURN_MODEL_CALL_COUNT.holds("3")
    assert QUEUED_USER_MESSAGES.holds(AgentUserMessage(text="x"))
    assert not TOOL_CALL_RESULTS.holds(AgentUserMessage(text="x"))
    with pytest.raises(TypeError, match="no persisted name holds"):
        holds(JSON_VALUE_TYPE, 1)


def test_effects_built_from_keys_carry_them() -> None:
    resolution = AgentInterruptResolution(interrupt_id="i", approved=True, rejection_message=None)
    published = PublishToChannelInstance.of(INTERRUPT_RESOLUTIONS, "i", resolution)
    assert published == PublishToChannelInstance(channel_map=INTERRUPT_RESOLUTIONS, key="i", value=resolution)
    assert DeleteAttribute.of(FRAMEWORK_RUN_STATE) == DeleteAttribute(attribute=FRAMEWORK_RUN_STATE)
    with pytest.raises(ValueError, match="InterruptResolutions cannot carry"):
        PublishToChannelInstance(
            channel_map=INTERRUPT_RESOLUTIONS, key="i", value=ToolCallCompleted(tool_call_id="c")  # type: ignore[misc]
        )


def _a_value_of_the_wrong_type_is_a_mypy_error(attribute: AttributeKey[object]) -> None:
    """Never called: mypy checks it, and every ``type: ignore`` here must stay needed (an unused
    ignore is an error), so each line pins one mismatch that mypy refuses."""
    SetAttribute.of(AGENT_STATE, AgentUsage())  # type: ignore[misc]
    SetAttribute.of(FRAMEWORK_RUN_STATE, 1)  # type: ignore[misc]
    SetAttribute.of(PENDING_INTERRUPTS, pvector([AgentUsage()]))  # type: ignore[misc]
    SetAttribute(attribute=AGENT_USAGE, value="x")  # type: ignore[misc]
    SetMapInstance.of(AGENT_MESSAGES, "k", AgentUsage())  # type: ignore[misc]
    PublishToChannel.of(TOOL_CALL_RESULTS, AgentUserMessage(text="x"))  # type: ignore[misc]
    PublishToChannelInstance.of(INTERRUPT_RESOLUTIONS, "i", ToolCallCompleted(tool_call_id="c"))  # type: ignore[misc]
    SetAttribute.of(attribute, "anything")


def test_a_session_starts_through_typed_effects() -> None:
    t = Session().start(None)
    assert SetAttribute(attribute=PENDING_INTERRUPTS, value=pvector()) in t.effects
