"""``AgentSessionFlow`` and ``create_agent_session_flow``: one Dex Flow type per agent.

One Flow execution is one session; the Flow ID is the session ID. The Flow's Step types,
persistence names and RPC names are the spec's; several agents (Flow types) live in one Registry.

Invariants:
    * Each Flow owns its Step instances (holding its runner and options) and its own ``AgentEvents``
      Stream; the other persistence definitions are shared module-level objects.
    * The options are validated when the Flow is created; a bad option raises ``ValueError`` or
      ``TypeError`` with what was wrong.
    * ``session_flow_definition`` builds the same Flow without a runner, for Clients: its schema,
      RPC handles and codecs are those of every Flow of its type, ``serves_sessions`` is false, and
      a Step run by mistake on a Worker fails with an error naming the mistake.
    * The reading RPCs' bodies (gather, reduce, perform) run on a worker thread (``off_the_loop``): a
      snapshot of a long session builds every message (and may read the ones this Worker lacks from
      Dex), and the Worker's event loop must keep serving the heartbeats and event flushes of the
      Steps running beside it. ``send_user_message`` and ``resolve_interrupt`` read only singleton
      Attributes, so they run on the loop, without a thread hand-off. Each RPC owns its Context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, get_args, get_type_hints

from dex import Context, Flow, PersistenceSchema, RPCResult, Step, StepList, Stream

from dex_agents.pure.flow.rows import RetryPolicy
from dex_agents.pure.machine.compaction import CompactionPolicy
from dex_agents.pure.flow.table import RPC_TABLE
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    CancelToolCallCalled,
    CancelTurnCalled,
    CompactHistoryCalled,
    ExtendInterruptDeadlineCalled,
    ResolveInterruptCalled,
    ResolveToolOutcomeCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
    SessionRewindRecorded,
)
from dex_agents.pure.values.persistence import RpcName, StepType
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
from dex_agents.pure.values.runner import AgentTurnOutcome, ToolPolicy
from dex_agents.pure.machine.state import DEFAULT_MAX_MODEL_CALLS_PER_TURN, SessionConfig
from dex_agents.pure.machine.step_inputs import SessionInput
from dex_agents.pure.values.session import AgentEvent, AgentSessionStartInput, FrameworkMessage, ToolEffect
from dex_agents.pure.values.time_travel import RecordSessionRewindInput, SessionRewind
from dex_agents.shell.definitions import (
    AGENT_MESSAGES,
    AGENT_STATE,
    AGENT_TOOL_CALLS,
    AGENT_USAGE,
    COMPACTION_REQUESTED,
    FRAMEWORK_RUN_STATE,
    HISTORY_SUMMARY,
    INTERRUPT_RESOLUTIONS,
    PENDING_INTERRUPTS,
    QUEUED_USER_MESSAGES,
    SCHEMA_DEFINITIONS,
    TOOL_CALL_RESULTS,
    TURN_MODEL_CALL_COUNT,
    UNKNOWN_TOOL_OUTCOMES,
    USER_MESSAGE_RECEIPTS,
    event_stream,
)
from dex_agents.shell.driver import drive_rpc, off_the_loop
from dex_agents.shell.dex_options import session_rpc
from dex_agents.shell.flow_validation import (
    session_config,
    validate_flow_type,
    validate_runner,
    validate_stream_capacity,
)
from dex_agents.shell.runner import (
    AgentFrameworkRunner,
    AgentTurnContext,
    DeferredToolExecution,
    ToolExecutionResult,
)
from dex_agents.shell.runtime import SessionRuntime
from dex_agents.shell.step_base import SessionStep
from dex_agents.shell.subagents import SubAgentTool, sub_agent_policies
from dex_agents.shell.timing import SessionTiming
from dex_agents.shell.tool_steps import (
    AwaitSubAgent,
    AwaitToolApproval,
    CallSingleAttemptTool,
    CallTool,
    ReconcileToolOutcome,
    RecordToolFailure,
    RecordToolOutcomeUnknown,
)
from dex_agents.shell.turn_steps import (
    AwaitUserMessage,
    CompactHistory,
    RecordTurnFailure,
    ResumeTurn,
    RunModel,
    StartAgentSession,
)
from dex_agents.shell.cancel_steps import CancelTurn, RecordToolCancellation

DEFAULT_EVENT_STREAM_CAPACITY_BYTES: Final = 10 * 1024 * 1024
"""The ``AgentEvents`` Stream's byte budget by default (shared by every session of the Flow type)."""

_STEP_CLASSES: Final[tuple[type[SessionStep[Any]], ...]] = (
    StartAgentSession,
    AwaitUserMessage,
    RunModel,
    AwaitToolApproval,
    CallTool,
    CallSingleAttemptTool,
    RecordToolFailure,
    RecordToolOutcomeUnknown,
    ResumeTurn,
    RecordTurnFailure,
    CompactHistory,
    ReconcileToolOutcome,
    CancelTurn,
    RecordToolCancellation,
    AwaitSubAgent,
)


class AgentSessionFlow(Flow[AgentSessionStartInput]):
    """The session Flow of one agent (build it with ``create_agent_session_flow``).

    The persistence definitions are properties (``flow.agent_state``, ``flow.agent_events``, ...);
    the RPCs are ``flow.send_user_message``, ``flow.resolve_interrupt``, ``flow.get_agent_snapshot``,
    ``flow.list_agent_messages`` and ours, ``flow.send_user_message_once`` (pass them to
    ``Client.invoke_rpc``).
    """

    def __init__(
        self,
        runner: AgentFrameworkRunner,
        flow_type: str,
        config: SessionConfig,
        timing: SessionTiming,
        event_stream_capacity_bytes: int,
        fact_observer: Callable[[SessionInput], None] | None = None,
        sub_agents: Sequence[SubAgentTool] = (),
    ) -> None:
        """Use ``create_agent_session_flow``, which validates the options first."""
        self._flow_type = flow_type
        self.serves_sessions: Final = not isinstance(runner, _NoRunner)
        """Whether a Worker can serve this Flow (``False`` for ``session_flow_definition``)."""
        self.agent_events: Stream[AgentEvent] = event_stream(event_stream_capacity_bytes)
        step_classes: dict[StepType, type[Step[Any]]] = {cls.step_type: cls for cls in _STEP_CLASSES}
        self.runtime = SessionRuntime(
            runner=runner,
            config=config,
            timing=timing,
            events=self.agent_events,
            step_classes=step_classes,
            fact_observer=fact_observer,
            sub_agents={tool.child_flow_type: _session_flow(tool.child) for tool in sub_agents},
        )
        self.sub_agent_tools: Final = tuple(sub_agents)
        """The sub-agent tools this Flow's calls delegate through (``create_agent_session_flow``'s ``sub_agents``)."""
        self._steps = tuple(cls(self.runtime) for cls in _STEP_CLASSES)

    agent_state: Final = AGENT_STATE
    agent_messages: Final = AGENT_MESSAGES
    framework_run_state: Final = FRAMEWORK_RUN_STATE
    agent_tool_calls: Final = AGENT_TOOL_CALLS
    pending_interrupts: Final = PENDING_INTERRUPTS
    agent_usage: Final = AGENT_USAGE
    queued_user_messages: Final = QUEUED_USER_MESSAGES
    interrupt_resolutions: Final = INTERRUPT_RESOLUTIONS
    tool_call_results: Final = TOOL_CALL_RESULTS
    turn_model_call_count: Final = TURN_MODEL_CALL_COUNT
    user_message_receipts: Final = USER_MESSAGE_RECEIPTS
    unknown_tool_outcomes: Final = UNKNOWN_TOOL_OUTCOMES
    history_summary: Final = HISTORY_SUMMARY
    compaction_requested: Final = COMPACTION_REQUESTED

    def get_flow_type(self) -> str:
        return self._flow_type

    def get_steps(self) -> StepList[AgentSessionStartInput]:
        start, *others = self._steps
        return StepList.start_step(start).other_steps(*others)

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(*SCHEMA_DEFINITIONS, self.agent_events)

    @session_rpc(RpcName.SEND_USER_MESSAGE)
    def send_user_message(self, context: Context, input: SendUserMessageInput) -> RPCResult[bool]:
        """Queue a user message: ``False`` for blank text; sent during a turn, it starts the next turn."""
        return drive_rpc(self.runtime, context, SendUserMessageCalled(input=input), bool)

    @session_rpc(RpcName.RESOLVE_INTERRUPT)
    def resolve_interrupt(self, context: Context, input: ResolveInterruptInput) -> RPCResult[bool]:
        """Approve or reject a pending interrupt: ``False`` when not pending or past its deadline.
        May raise ``RpcLockConflictError``, which is safe to retry."""
        called = ResolveInterruptCalled(input=input, now_ms=self.runtime.timing.now_ms())
        return drive_rpc(self.runtime, context, called, bool)

    @session_rpc(RpcName.EXTEND_INTERRUPT_DEADLINE)
    def extend_interrupt_deadline(self, context: Context, input: ExtendInterruptDeadlineInput) -> RPCResult[bool]:
        """Move a pending interrupt's deadline to ``deadline_ms`` after now: ``False`` when it is not
        pending, has no deadline, has passed it, or the new one is not later. Ours."""
        called = ExtendInterruptDeadlineCalled(input=input, now_ms=self.runtime.timing.now_ms())
        return drive_rpc(self.runtime, context, called, bool)

    @session_rpc(RpcName.RECORD_SESSION_REWIND)
    def record_session_rewind(self, context: Context, input: RecordSessionRewindInput) -> RPCResult[SessionRewind]:
        """Keep the audit of the rewind that just replaced the run ``input.previous_run_id``
        (``SessionClient.rewind`` calls it); answers the stored record. Ours."""
        called = SessionRewindRecorded(input=input, now_ms=self.runtime.timing.now_ms())
        return drive_rpc(self.runtime, context, called, SessionRewind)

    @session_rpc(RpcName.CANCEL_TURN)
    def cancel_turn(self, context: Context, input: CancelTurnInput) -> RPCResult[bool]:
        """Cancel the running turn ``turn_id`` (Dex cancels its Steps; ``CancelTurn`` ends it): ``False``
        unless it is the running turn. Ours."""
        called = CancelTurnCalled(input=input, now_ms=self.runtime.timing.now_ms())
        return off_the_loop(lambda: drive_rpc(self.runtime, context, called, bool))

    @session_rpc(RpcName.CANCEL_TOOL_CALL)
    def cancel_tool_call(self, context: Context, input: CancelToolCallInput) -> RPCResult[bool]:
        """Cancel one open tool call of the running turn (Dex cancels its Step; the model reads
        ``cancelled by the user: <reason>`` and the turn goes on): ``False`` unless it is open. Ours."""
        called = CancelToolCallCalled(input=input, now_ms=self.runtime.timing.now_ms())
        return off_the_loop(lambda: drive_rpc(self.runtime, context, called, bool))

    @session_rpc(RpcName.RESOLVE_TOOL_OUTCOME)
    def resolve_tool_outcome(self, context: Context, input: ResolveToolOutcomeInput) -> RPCResult[bool]:
        """Settle a call whose outcome is unknown as ``succeeded`` or ``failed``; ``True``, or refused
        with the reason. Invoke it with the call's ``UnknownToolOutcomes`` instance locked and loaded and
        its ``AgentToolCalls`` instance loaded (``SessionClient.resolve_tool_outcome`` does). Ours."""
        called = ResolveToolOutcomeCalled(input=input, now_ms=self.runtime.timing.now_ms())
        return off_the_loop(lambda: drive_rpc(self.runtime, context, called, bool))

    @session_rpc(RpcName.GET_AGENT_SNAPSHOT)
    def get_agent_snapshot(self, context: Context) -> RPCResult[AgentSnapshot]:
        """The session's state, messages, pending interrupts, tool calls, usage and queued message count."""
        return off_the_loop(lambda: drive_rpc(self.runtime, context, AgentSnapshotRequested(), AgentSnapshot))

    @session_rpc(RpcName.LIST_AGENT_MESSAGES)
    def list_agent_messages(self, context: Context, input: ListAgentMessagesInput) -> RPCResult[AgentMessagePage]:
        """One page of stored messages, oldest first (``limit`` clamped to 1..200, default 50)."""
        return off_the_loop(lambda: drive_rpc(self.runtime, context, AgentMessagesListed(input=input), AgentMessagePage))

    @session_rpc(RpcName.SEND_USER_MESSAGE_ONCE)
    def send_user_message_once(self, context: Context, input: SendUserMessageOnceInput) -> RPCResult[bool]:
        """Queue a user message under its ``message_id`` once: a resend answers ``True`` and queues
        nothing. Invoke it with the message's ``UserMessageReceipts`` instance locked and loaded
        (``SessionClient.send`` does); it is refused otherwise."""
        called = SendUserMessageOnceCalled(input=input)
        return off_the_loop(lambda: drive_rpc(self.runtime, context, called, bool))


    @session_rpc(RpcName.COMPACT_HISTORY)
    def compact_history(self, context: Context) -> RPCResult[bool]:
        """Ask the session's next model call to compact the history first: ``True`` when there is something
        to summarize (older than the kept recent turns), ``False`` when not. Refused when the Flow has no
        compaction policy. Ours, not the spec's."""
        return off_the_loop(lambda: drive_rpc(self.runtime, context, CompactHistoryCalled(), bool))


def _check_rpc_handlers() -> None:
    """Each RPC handler's annotated input and result are its row's types: Dex reads the annotations,
    the codecs read the row, so the two must agree (checked once, when the module loads)."""
    for name, row in RPC_TABLE.items():
        hints = get_type_hints(getattr(AgentSessionFlow, name.value))
        found = (hints.get("input"), get_args(hints["return"]))
        if found != (row.input_type, (row.output_type,)):
            raise TypeError(f"the {name} handler takes and answers {found}, its row says {row}")


_check_rpc_handlers()


DEFAULT_COMPACTION: Final = CompactionPolicy()
"""``create_agent_session_flow``'s compaction unless one is given: reactive, the last 2 turns kept."""


def create_agent_session_flow(
    runner: AgentFrameworkRunner,
    flow_type: str,
    *,
    tool_policies: Mapping[str, ToolPolicy] | None = None,
    default_tool_effect: ToolEffect | str = ToolEffect.UNCLASSIFIED,
    event_stream_capacity_bytes: int = DEFAULT_EVENT_STREAM_CAPACITY_BYTES,
    interrupt_deadline_ms: int | None = None,
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    timing: SessionTiming | None = None,
    fact_observer: Callable[[SessionInput], None] | None = None,
    compaction: CompactionPolicy | None = DEFAULT_COMPACTION,
    model_retry: RetryPolicy | None = None,
    sub_agents: Sequence[SubAgentTool] = (),
) -> AgentSessionFlow:
    """A new session Flow of type ``flow_type`` driven by ``runner``.

    Args:
        runner: The framework runner (``AgentFrameworkRunner``).
        flow_type: The Dex Flow type (non-empty, no ``/``); unique on the Dex server.
        tool_policies: ``ToolPolicy`` by tool name; overrides framework metadata and the default effect.
        default_tool_effect: Effect of a tool without a policy or framework metadata.
        event_stream_capacity_bytes: Byte budget of the ``AgentEvents`` Stream (> 0), shared by every
            session of the Flow type.
        interrupt_deadline_ms: Milliseconds after which a pending approval is rejected with
            ``"approval deadline passed"``; ``None``: approvals never expire. Must fit a Dex Timer.
        max_model_calls_per_turn: The most model calls one turn makes (an int >= 1): the call that
            reaches it and still asks for tools fails the turn (``last_turn_error`` says so) instead
            of deferring them.
        timing: The clock and heartbeat period (tests inject a clock; default the Worker's wall clock).
        fact_observer: Called in the Worker with every input (``SessionInput``: a Step's started input,
            each request's follow-up, a ``wait_for`` input, an RPC call) the session reduces (RPC
            calls on a worker thread, the others on the event loop), before its effects are
            performed, including inputs of attempts that later fail. For recording a session to
            ``dex_agents.pure.offline.replay`` it offline, and for tests.
        compaction: When and how the session compacts its history (``CompactionPolicy``; by default
            reactively, when the model refuses an input longer than its context window). ``None``:
            never, as the spec's sessions. A runner without ``summarize_history`` gets no compaction
            by default, and a ``TypeError`` when one is asked for.
        model_retry: How a failed model call is retried (``RetryPolicy(max_attempts, initial_backoff,
            max_backoff, total_duration)``): the Dex retry options of ``RunModel`` and
            ``CompactHistory``. ``None``: their flow table rows' (3 attempts; Dex's default backoff
            waits 1 s, then 2 s; 30 minutes in all). A model error with a retry-after
            (``ModelRetryAfterError``, a ``Retry-After`` header) waits that long instead.
        sub_agents: Tools whose calls run as child sessions of other agents (``subagent_tool``); their
            policies join ``tool_policies``. Serve each child's Flow on the same Workers.

    Raises:
        ValueError: an option is out of range (a blank Flow type, a capacity <= 0, a deadline that does
            not fit a Timer, a model call cap < 1, a policy with an unknown effect).
        TypeError: an option has the wrong type (a runner without the contract's methods).
    """
    validate_runner(runner)
    validate_flow_type(flow_type)
    validate_stream_capacity(event_stream_capacity_bytes)
    if not callable(getattr(runner, "summarize_history", None)):
        if compaction is not DEFAULT_COMPACTION and compaction is not None:
            raise TypeError(f"runner {type(runner).__name__} has no summarize_history, which compaction needs")
        compaction = None
    config = session_config(sub_agent_policies(sub_agents, tool_policies or {}), default_tool_effect, interrupt_deadline_ms, max_model_calls_per_turn,
                            compaction, model_retry)
    return AgentSessionFlow(
        runner, flow_type, config, timing or SessionTiming(), event_stream_capacity_bytes, fact_observer, sub_agents
    )


class _NoRunner:
    """The runner of a Client's definition: a Worker that serves it by mistake fails each Step."""

    def __init__(self, flow_type: str) -> None:
        self._refusal = (f"Flow type {flow_type!r} here is a Client's definition (session_flow_definition), "
                         f"which has no runner; serve the agent's Flow from create_agent_session_flow")

    def build_user_message(self, text: str) -> FrameworkMessage:
        raise RuntimeError(self._refusal)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        raise RuntimeError(self._refusal)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        raise RuntimeError(self._refusal)


def session_flow_definition(
    flow_type: str, *, event_stream_capacity_bytes: int = DEFAULT_EVENT_STREAM_CAPACITY_BYTES
) -> AgentSessionFlow:
    """The session Flow of type ``flow_type`` as a Client needs it, without a runner.

    Its persistence definitions, RPC handles (``flow.send_user_message``, ...) and codecs are those
    of the Flow a Worker serves, so ``session_registry([definition])`` is a Client's Registry and
    ``Client.invoke_rpc(definition.get_agent_snapshot, session_id)`` reaches that Worker. It does not
    serve sessions (``serves_sessions`` is false): ``dex-agents worker`` refuses it.

    Args:
        flow_type: The agent's Dex Flow type (non-empty, no ``/``).
        event_stream_capacity_bytes: The ``AgentEvents`` budget (> 0); only Workers use it.

    Raises:
        ValueError, TypeError: a bad Flow type or capacity, as ``create_agent_session_flow`` raises.
    """
    validate_flow_type(flow_type)
    validate_stream_capacity(event_stream_capacity_bytes)
    return AgentSessionFlow(_NoRunner(flow_type), flow_type, SessionConfig(), SessionTiming(),
                            event_stream_capacity_bytes)


def _session_flow(child: object) -> AgentSessionFlow:
    """A sub-agent tool's child, checked to be a session Flow (``subagent_tool`` checked its shape)."""
    if not isinstance(child, AgentSessionFlow):
        raise TypeError(f"a sub-agent's child must be an AgentSessionFlow, got {type(child).__name__}")
    return child


__all__ = ["DEFAULT_EVENT_STREAM_CAPACITY_BYTES", "AgentSessionFlow", "create_agent_session_flow",
           "session_flow_definition"]
