"""The session state the reducers decide over, the session's configuration, and read-only queries.

``SessionState`` mirrors the Flow's persisted state. The shell builds it from what one invocation
loaded: singleton Attributes (``AgentState``, ``FrameworkRunState``, ``PendingInterrupts``,
``AgentUsage``, ``TurnModelCallCount``) and Channel sizes reach every invocation, while AttributeMaps reach only the Steps
that load them (a tool Step loads only its own ``AgentToolCalls`` instance). Each reducer documents
which parts it reads; the parts a Step did not load are empty and never read.

Invariants (of a state reached by the reducers from ``SessionState.initial()``):
    * ``messages`` are in sequence order, sequences 1..``agent_state.message_count`` with no gaps.
    * ``tool_calls`` holds only the running turn's records (empty while waiting for a user message).
    * ``pending_interrupts`` holds one interrupt per ``awaiting_approval`` record not yet resolved by
      ``resolve_interrupt``, in deferral order.
    * ``framework_run_state`` is set only between a turn's model calls; ``turn_model_call_count`` counts
      the running turn's model calls that deferred tool calls (0 outside a turn).
    * ``usage`` is the sum of every recorded model call's usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from dex_agents.pure.flow.rows import RetryPolicy, RetrySpec
from dex_agents.pure.flow.step_options import RetryOverrides
from dex_agents.pure.flow.table import MODEL_CALL_STEPS, execute_attempts
from dex_agents.pure.machine.compaction import CompactionPolicy
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.policies import resolve_tool_policy
from dex_agents.pure.values.runner import ResolvedToolPolicy, ToolPolicy
from dex_agents.pure.values.session import (
    ToolCallCancellation,
    TurnCancellation,
    AgentInterrupt,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    HistorySummary,
    ToolEffect,
    UserMessageReceipt,
)


DEFAULT_MAX_MODEL_CALLS_PER_TURN: Final = 50
"""The per-turn cap on model calls of ``create_agent_session_flow`` by default."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionConfig:
    """The Flow's options (``create_agent_session_flow``); input to reducers, never persisted.

    Attributes:
        tool_policies: ``ToolPolicy`` by tool name; overrides framework metadata and the default effect.
        default_tool_effect: Effect of a tool without a policy or framework metadata.
        interrupt_deadline_ms: Milliseconds after which a pending approval is rejected with
            ``"approval deadline passed"``; ``None`` means approvals never expire.
        max_model_calls_per_turn: The most model calls one turn makes (>= 1): the call that reaches
            it and still asks for tools fails the turn instead of deferring them.
        compaction: When and how the history is compacted; ``None``: never (the spec's behaviour).
        model_retry: The Dex retry options of the model calls (``RunModel``, ``CompactHistory``);
            ``None``: their flow table rows' (3 attempts, Dex's default backoff, 30 minutes).
    """

    tool_policies: PMap[str, ToolPolicy] = pmap()
    default_tool_effect: ToolEffect = ToolEffect.UNCLASSIFIED
    interrupt_deadline_ms: int | None = None
    max_model_calls_per_turn: int = DEFAULT_MAX_MODEL_CALLS_PER_TURN
    compaction: CompactionPolicy | None = None
    model_retry: RetryPolicy | None = None

    def __post_init__(self) -> None:
        if self.interrupt_deadline_ms is not None and self.interrupt_deadline_ms < 0:
            raise ValueError(f"interrupt_deadline_ms must be >= 0, got {self.interrupt_deadline_ms}")
        if self.max_model_calls_per_turn < 1:
            raise ValueError(f"max_model_calls_per_turn must be >= 1, got {self.max_model_calls_per_turn}")

    @property
    def model_attempts(self) -> int | None:
        """How many attempts one model call has: ``model_retry``'s, else ``RunModel``'s row's."""
        return execute_attempts(StepType.RUN_MODEL) if self.model_retry is None else self.model_retry.max_attempts

    def retry_overrides(self) -> RetryOverrides:
        """The retry options that replace the rows' (``model_retry`` on the model call Steps), by Step type."""
        if self.model_retry is None:
            return {}
        spec: RetrySpec = self.model_retry.spec()
        return {step_type: spec for step_type in MODEL_CALL_STEPS}

    def reconciles(self, tool_name: str) -> bool:
        """Whether ``tool_name``'s policy has a ``reconcile`` (asked when a call's outcome is unknown)."""
        policy = self.tool_policies.get(tool_name)
        return policy is not None and policy.reconcile is not None

    def resolve_tool_policy(self, tool_name: str, framework_effect: ToolEffect | None = None) -> ResolvedToolPolicy:
        """The effective policy of a call of ``tool_name`` under this configuration: what the runner's
        ``turn.resolve_tool_policy(name, framework_effect)`` answers. The reducers store the policy each
        ``DeferredToolCall`` carries; this is where ``tool_policies`` and ``default_tool_effect`` apply."""
        return resolve_tool_policy(tool_name, framework_effect, self.tool_policies, self.default_tool_effect)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionState:
    """Everything the reducers decide over.

    Attributes:
        agent_state: The ``AgentState`` Attribute; ``None`` before ``StartAgentSession``.
        messages: The loaded ``AgentMessages`` instances, in sequence order.
        framework_run_state: The ``FrameworkRunState`` Attribute (``None`` when absent).
        tool_calls: The loaded ``AgentToolCalls`` instances, by tool call ID.
        pending_interrupts: The ``PendingInterrupts`` Attribute.
        usage: The cumulative ``AgentUsage`` Attribute.
        queued_message_count: Messages waiting in ``QueuedUserMessages`` (the Channel's size). The
            reducers keep it for replay and the snapshot (``send_user_message`` adds one,
            ``AwaitUserMessage`` takes one, never below 0); no effect ever writes it, because Dex
            keeps the real count.
        turn_model_call_count: The ``TurnModelCallCount`` Attribute (0 when absent).
        user_message_receipts: The loaded ``UserMessageReceipts`` instances, by message ID (only
            ``send_user_message_once`` loads one: its message's).
        history_summary: The ``HistorySummary`` Attribute (``None`` before the first compaction).
        compaction_requested: Whether ``CompactionRequested`` is set (``compact_history`` was called and
            no compaction ran since).
        turn_cancellation: The ``TurnCancellation`` Attribute: ``cancel_turn`` asked to cancel the turn.
        tool_call_cancellations: The loaded ``ToolCallCancellations`` instances, by tool call ID.
        unknown_tool_outcomes: The loaded ``UnknownToolOutcomes`` instances, by tool call ID (only
            ``resolve_tool_outcome`` loads one: its call's), and each a reducer stored in this invocation
            (so the state ``replay`` folds holds every one, as Dex does).
    """

    agent_state: AgentState | None
    messages: PVector[AgentMessage]
    framework_run_state: str | None
    tool_calls: PMap[str, AgentToolCall]
    pending_interrupts: PVector[AgentInterrupt]
    usage: AgentUsage
    queued_message_count: int
    turn_model_call_count: int = 0
    user_message_receipts: PMap[str, UserMessageReceipt] = pmap()
    history_summary: HistorySummary | None = None
    compaction_requested: bool = False
    unknown_tool_outcomes: PMap[str, AgentToolCall] = pmap()
    turn_cancellation: TurnCancellation | None = None
    tool_call_cancellations: PMap[str, ToolCallCancellation] = pmap()

    @staticmethod
    def initial() -> SessionState:
        """Return the state of a Flow that has not started: nothing stored, nothing queued."""
        return SessionState(
            agent_state=None,
            messages=pvector(),
            framework_run_state=None,
            tool_calls=pmap(),
            pending_interrupts=pvector(),
            usage=AgentUsage(),
            queued_message_count=0,
        )

    @property
    def current_turn_id(self) -> str | None:
        """The running turn's ID, or ``None`` before the session starts and between turns."""
        return None if self.agent_state is None else self.agent_state.current_turn_id

    @property
    def model_view(self) -> PVector[AgentMessage]:
        """The stored messages the model sees: those after the history summary's boundary (``messages``
        hold sequences 1..n in order, so the view is a slice: its cost does not grow with the session)."""
        summary = self.history_summary
        if summary is None:
            return self.messages
        start = summary.through_sequence
        if start < len(self.messages) and self.messages[start].sequence == start + 1:
            return self.messages[start:]
        return pvector(message for message in self.messages if message.sequence > start)

    def records_in_deferral_order(self) -> tuple[AgentToolCall, ...]:
        """The loaded tool call records in the order the model made them."""
        return tuple(sorted(self.tool_calls.values(), key=lambda record: record.deferral_order))

    def open_record_count(self) -> int:
        """How many loaded records are not final yet (``awaiting_approval`` or ``pending``)."""
        return sum(1 for record in self.tool_calls.values() if not record.status.is_final)

    def pending_interrupt(self, interrupt_id: str) -> AgentInterrupt | None:
        """The pending interrupt with this ID, or ``None`` when it is not pending."""
        for interrupt in self.pending_interrupts:
            if interrupt.interrupt_id == interrupt_id:
                return interrupt
        return None

    def without_interrupt(self, interrupt_id: str) -> PVector[AgentInterrupt]:
        """``pending_interrupts`` without the interrupt with this ID (unchanged when absent)."""
        return pvector(i for i in self.pending_interrupts if i.interrupt_id != interrupt_id)


__all__ = ["DEFAULT_MAX_MODEL_CALLS_PER_TURN", "SessionConfig", "SessionState"]
