"""The session Flow's shape as one table: one row per Step type and one per RPC. Everything else that
knows a Step's options, moves, failure route, wait, locks or loads, or an RPC's locks, loads and types,
reads it from here (Step options and movements, the flow-shape checks, tool policies, the shell's Dex
options, RPC decorators, gathering and codecs, and the tests). What a row says is ``flow.rows``.

```text
StartAgentSession -> RunModel (initial message) | AwaitUserMessage
AwaitUserMessage -> RunModel
RunModel -> AwaitUserMessage (final answer; or the turn failed in RunModel itself: a non-retryable
                              model error, or the model call cap reached)
         | CompactHistory(trigger) (the input exceeds the context window, or the proactive estimate)
         | one Step per tool call + ResumeTurn(n) (tool calls, all at once)
         | RecordTurnFailure -> AwaitUserMessage (retries exhausted)
AwaitToolApproval(id) -> CallTool(id) | CallSingleAttemptTool(id) (approved)
                       | AwaitToolApproval(id) (late or early Timer: wait again)
                       | dead end, after publishing to ToolCallResults (rejected or deadline)
CallTool(id), CallSingleAttemptTool(id), RecordToolFailure(id), RecordToolOutcomeUnknown(id)
    -> dead end, after publishing to ToolCallResults
RecordToolFailure(id), RecordToolOutcomeUnknown(id) -> ReconcileToolOutcome(id) (a write's outcome is
    unknown and its tool policy reconciles; ours)
ReconcileToolOutcome(id) -> dead end, after publishing to ToolCallResults
                          | RecordToolOutcomeUnknown(id) (retries exhausted: outcome_unknown)
RunModel, AwaitToolApproval(id) -> AwaitSubAgent(id) (a sub-agent's call; ours): waits for its child
    session (a Dex SubFlow) to close -> dead end, after publishing to ToolCallResults
                                     | RecordToolFailure(id) (retries exhausted)
ResumeTurn(n) -> RunModel | ResumeTurn(k) (k records still open)
CompactHistory(trigger) -> RunModel (summarized, or nothing left to summarize)
                         | AwaitUserMessage (the turn failed: a summary no retry can make)
                         | RecordTurnFailure -> AwaitUserMessage (retries exhausted)
cancel_turn (RPC; ours) -> CancelTurn -> AwaitUserMessage (the turn's Steps canceled by Dex)
cancel_tool_call (RPC; ours) -> RecordToolCancellation(id) -> dead end, after publishing to
    ToolCallResults (the call's Step canceled by Dex) | CallTool(id) (another call the cancellation
    of its Step type stopped, run again under its idempotency key)
```

Invariants:
    * Every Step type has exactly one row and every RPC name one row, in the spec's order.
    * A failure route is stated once, on the failing Step's row; a route's own row has no route.
    * Durations are whole seconds (Dex rejects anything else); every Step sets SYNC durability.
    * A tool Step loads only its own ``AgentToolCalls`` instance (``call_instances``).
    * Every method that reads ``AgentMessages`` reads it as a cached map (``cached_maps``), so the
      bytes Dex sends a Worker per turn do not grow with the session.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from dex_agents.pure.flow.rows import (
    DEX_DEFAULT_METHOD_TIMEOUT_SECONDS,
    ForChildSession,
    ForInputCountMessages,
    ForOneMessage,
    ForResolutionOrDeadline,
    MethodAccess,
    RetrySpec,
    RpcRow,
    StepInputKind,
    StepRow,
)
from dex_agents.pure.values.persistence import AttributeName, ChannelMapName, ChannelName, MapName, RpcName, StepType
from dex_agents.pure.values.rpc import (
    AgentMessagePage,
    AgentSnapshot,
    CancelToolCallInput,
    CancelTurnInput,
    ExtendInterruptDeadlineInput,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    ResolveToolOutcomeInput,
    SendUserMessageInput,
    SendUserMessageOnceInput,
)
from dex_agents.pure.values.session import AgentSessionStartInput
from dex_agents.pure.values.time_travel import RecordSessionRewindInput, SessionRewind

START_INPUT_TYPE: Final = AgentSessionStartInput
"""The record a ``START_INPUT`` Step (``StartAgentSession``) receives."""

_TOOL_STEPS: Final = frozenset({StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL, StepType.AWAIT_SUB_AGENT})
_OWN_CALL: Final = MethodAccess(call_instances=(MapName.AGENT_TOOL_CALLS,))
_RECORDING_RETRY: Final = RetrySpec(maximum_interval_seconds=5)
"""The recording Steps cap their retry backoff at 5 s."""
_MESSAGES: Final = (MapName.AGENT_MESSAGES,)
"""``AgentMessages``: read whole, served from a Worker's cache of committed messages (``cached_maps``)."""


_OPERATOR_ACCESS: Final = MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,),
                                       maps=(MapName.AGENT_TOOL_CALLS, MapName.TOOL_CALL_CANCELLATIONS))
"""``cancel_tool_call`` reads the turn's records and locks ``PendingInterrupts`` (it may reject a pending
approval, as ``resolve_interrupt`` does). ``cancel_turn`` reads singletons only. Neither writes a value
a Step writes (their reads may be stale by the commit): the Steps they start decide from fresh reads."""


def _rows(*rows: StepRow) -> Mapping[StepType, StepRow]:
    return MappingProxyType({row.step_type: row for row in rows})


STEP_TABLE: Final[Mapping[StepType, StepRow]] = _rows(
    StepRow(
        step_type=StepType.START_AGENT_SESSION,
        input=StepInputKind.START_INPUT,
        next_steps=frozenset({StepType.RUN_MODEL, StepType.AWAIT_USER_MESSAGE}),
    ),
    StepRow(
        step_type=StepType.AWAIT_USER_MESSAGE,
        input=StepInputKind.NONE,
        wait=ForOneMessage(channel=ChannelName.QUEUED_USER_MESSAGES),
        next_steps=frozenset({StepType.RUN_MODEL}),
    ),
    StepRow(
        step_type=StepType.RUN_MODEL,
        input=StepInputKind.NONE,
        execute_method_timeout_seconds=15 * 60,
        heartbeat_timeout_seconds=2 * 60,
        execute_retry=RetrySpec(maximum_attempts=3, total_duration_seconds=30 * 60),
        execute=MethodAccess(maps=(MapName.AGENT_MESSAGES, MapName.AGENT_TOOL_CALLS), cached_maps=_MESSAGES),
        next_steps=frozenset({StepType.AWAIT_USER_MESSAGE, StepType.AWAIT_TOOL_APPROVAL, StepType.RESUME_TURN,
                              StepType.COMPACT_HISTORY})
        | _TOOL_STEPS,
        failure_route=StepType.RECORD_TURN_FAILURE,
    ),
    StepRow(
        step_type=StepType.AWAIT_TOOL_APPROVAL,
        input=StepInputKind.TOOL_CALL_ID,
        wait=ForResolutionOrDeadline(channel_map=ChannelMapName.INTERRUPT_RESOLUTIONS),
        wait_for=_OWN_CALL,
        execute=MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,), call_instances=(MapName.AGENT_TOOL_CALLS,)),
        next_steps=frozenset({StepType.AWAIT_TOOL_APPROVAL}) | _TOOL_STEPS,
    ),
    StepRow(
        step_type=StepType.CALL_TOOL,
        input=StepInputKind.TOOL_CALL_ID,
        execute_retry=RetrySpec(maximum_attempts=3),
        execute=_OWN_CALL,
        failure_route=StepType.RECORD_TOOL_FAILURE,
    ),
    StepRow(
        step_type=StepType.CALL_SINGLE_ATTEMPT_TOOL,
        input=StepInputKind.TOOL_CALL_ID,
        execute_retry=RetrySpec(maximum_attempts=1),
        execute=_OWN_CALL,
        failure_route=StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
    ),
    StepRow(
        step_type=StepType.RECORD_TOOL_FAILURE,
        input=StepInputKind.TOOL_CALL_ID,
        execute_retry=_RECORDING_RETRY,
        execute=_OWN_CALL,
        next_steps=frozenset({StepType.RECONCILE_TOOL_OUTCOME}),
    ),
    StepRow(
        step_type=StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
        input=StepInputKind.TOOL_CALL_ID,
        execute_retry=_RECORDING_RETRY,
        execute=_OWN_CALL,
        next_steps=frozenset({StepType.RECONCILE_TOOL_OUTCOME}),
    ),
    StepRow(
        step_type=StepType.RESUME_TURN,
        input=StepInputKind.RESULT_COUNT,
        wait=ForInputCountMessages(channel=ChannelName.TOOL_CALL_RESULTS),
        execute=MethodAccess(maps=(MapName.AGENT_TOOL_CALLS,)),
        next_steps=frozenset({StepType.RUN_MODEL, StepType.RESUME_TURN}),
    ),
    StepRow(
        step_type=StepType.RECORD_TURN_FAILURE,
        input=StepInputKind.NONE,
        execute_retry=_RECORDING_RETRY,
        execute=MethodAccess(maps=(MapName.AGENT_TOOL_CALLS,)),
        next_steps=frozenset({StepType.AWAIT_USER_MESSAGE}),
    ),
    StepRow(
        step_type=StepType.COMPACT_HISTORY,
        input=StepInputKind.COMPACTION_TRIGGER,
        execute_method_timeout_seconds=15 * 60,
        heartbeat_timeout_seconds=2 * 60,
        execute_retry=RetrySpec(maximum_attempts=3, total_duration_seconds=30 * 60),
        execute=MethodAccess(maps=_MESSAGES, cached_maps=_MESSAGES, locks=(AttributeName.HISTORY_SUMMARY,)),
        next_steps=frozenset({StepType.RUN_MODEL, StepType.AWAIT_USER_MESSAGE}),
        failure_route=StepType.RECORD_TURN_FAILURE,
    ),
    StepRow(
        step_type=StepType.RECONCILE_TOOL_OUTCOME,
        input=StepInputKind.TOOL_CALL_ID,
        execute_retry=RetrySpec(maximum_attempts=3),
        execute=_OWN_CALL,
        failure_route=StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
    ),
    StepRow(
        step_type=StepType.CANCEL_TURN,
        input=StepInputKind.NONE,
        execute_retry=_RECORDING_RETRY,
        execute=MethodAccess(maps=(MapName.AGENT_TOOL_CALLS, MapName.TOOL_CALL_CANCELLATIONS)),
        next_steps=frozenset({StepType.AWAIT_USER_MESSAGE, StepType.RUN_MODEL, StepType.AWAIT_TOOL_APPROVAL,
                              StepType.CALL_TOOL, StepType.RECONCILE_TOOL_OUTCOME, StepType.RECORD_TOOL_CANCELLATION,
                              StepType.RESUME_TURN}),
    ),
    StepRow(
        step_type=StepType.RECORD_TOOL_CANCELLATION,
        input=StepInputKind.TOOL_CALL_ID,
        execute_retry=_RECORDING_RETRY,
        execute=MethodAccess(call_instances=(MapName.AGENT_TOOL_CALLS, MapName.TOOL_CALL_CANCELLATIONS)),
    ),
    StepRow(
        step_type=StepType.AWAIT_SUB_AGENT,
        input=StepInputKind.TOOL_CALL_ID,
        wait=ForChildSession(),
        wait_for=_OWN_CALL,
        execute_retry=RetrySpec(maximum_attempts=3),
        execute=MethodAccess(locks=(AttributeName.AGENT_USAGE,), call_instances=(MapName.AGENT_TOOL_CALLS,)),
        failure_route=StepType.RECORD_TOOL_FAILURE,
    ),
)
"""Every Step type's row (the spec's Flow shape and Step table)."""

RPC_TABLE: Final[Mapping[RpcName, RpcRow]] = MappingProxyType(
    {
        row.rpc: row
        for row in (
            RpcRow(rpc=RpcName.SEND_USER_MESSAGE, input_type=SendUserMessageInput, output_type=bool, writes=True),
            RpcRow(
                rpc=RpcName.RESOLVE_INTERRUPT,
                input_type=ResolveInterruptInput,
                output_type=bool,
                access=MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,)),
                writes=True,
            ),
            RpcRow(
                rpc=RpcName.GET_AGENT_SNAPSHOT,
                input_type=None,
                output_type=AgentSnapshot,
                access=MethodAccess(maps=(MapName.AGENT_MESSAGES, MapName.AGENT_TOOL_CALLS), cached_maps=_MESSAGES),
                writes=False,
            ),
            RpcRow(
                rpc=RpcName.LIST_AGENT_MESSAGES,
                input_type=ListAgentMessagesInput,
                output_type=AgentMessagePage,
                access=MethodAccess(maps=_MESSAGES, cached_maps=_MESSAGES),
                writes=False,
            ),
            RpcRow(
                rpc=RpcName.SEND_USER_MESSAGE_ONCE,
                input_type=SendUserMessageOnceInput,
                output_type=bool,
                access=MethodAccess(message_instances=(MapName.USER_MESSAGE_RECEIPTS,)),
                writes=True,
            ),
            RpcRow(
                rpc=RpcName.COMPACT_HISTORY,
                input_type=None,
                output_type=bool,
                access=MethodAccess(maps=_MESSAGES, cached_maps=_MESSAGES),
                writes=True,
            ),
            RpcRow(
                rpc=RpcName.EXTEND_INTERRUPT_DEADLINE,
                input_type=ExtendInterruptDeadlineInput,
                output_type=bool,
                access=MethodAccess(locks=(AttributeName.PENDING_INTERRUPTS,)),
                writes=True,
            ),
            RpcRow(rpc=RpcName.RECORD_SESSION_REWIND, input_type=RecordSessionRewindInput, output_type=SessionRewind,
                   writes=True),
            RpcRow(rpc=RpcName.CANCEL_TURN, input_type=CancelTurnInput, output_type=bool, writes=True),
            RpcRow(
                rpc=RpcName.CANCEL_TOOL_CALL,
                input_type=CancelToolCallInput,
                output_type=bool,
                access=_OPERATOR_ACCESS,
                writes=True,
            ),
            RpcRow(
                rpc=RpcName.RESOLVE_TOOL_OUTCOME,
                input_type=ResolveToolOutcomeInput,
                output_type=bool,
                access=MethodAccess(message_instances=(MapName.UNKNOWN_TOOL_OUTCOMES, MapName.AGENT_TOOL_CALLS)),
                writes=True,
            ),
        )
    }
)
"""Every RPC's row (the spec's RPC table, then ours, with the locks and loads its handler declares)."""


MODEL_CALL_STEPS: Final = frozenset({StepType.RUN_MODEL, StepType.COMPACT_HISTORY})
"""The Steps that call the model: a Flow's ``model_retry`` (``RetryPolicy``) replaces their rows' retry
options (``step_options.with_retries``); their rows' are the default."""


def steps_with_input(kind: StepInputKind) -> frozenset[StepType]:
    """The Step types whose input is of ``kind``."""
    return frozenset(step_type for step_type, row in STEP_TABLE.items() if row.input is kind)


def execute_attempts(step_type: StepType) -> int | None:
    """How many ``execute`` attempts the Step's row allows (``None``: Dex's default, no count)."""
    retry = STEP_TABLE[step_type].execute_retry
    return None if retry is None else retry.maximum_attempts


def method_timeout_seconds(step_type: StepType) -> int:
    """How long one ``execute`` attempt of the Step may run: its row's method timeout, else Dex's default."""
    timeout = STEP_TABLE[step_type].execute_method_timeout_seconds
    return DEX_DEFAULT_METHOD_TIMEOUT_SECONDS if timeout is None else timeout


def attempt_deadline_ms(step_type: StepType, started_ms: int) -> int:
    """When an ``execute`` attempt of the Step that started at ``started_ms`` reaches its method
    timeout, in epoch milliseconds (the runner's ``deadline``)."""
    return started_ms + method_timeout_seconds(step_type) * 1000


__all__ = [
    "MODEL_CALL_STEPS",
    "RPC_TABLE",
    "START_INPUT_TYPE",
    "STEP_TABLE",
    "attempt_deadline_ms",
    "execute_attempts",
    "method_timeout_seconds",
    "steps_with_input",
]
