"""The runner contract, whole: what an agent framework adapter implements, what the session hands it,
and the values it returns.

An adapter implements ``AgentFrameworkRunner`` and passes it to ``create_agent_session_flow``. The
session owns Steps, persistence, RPCs, events, approvals and crash recovery; the runner only turns
stored messages into one model call, and one deferred tool call into its output. The values a runner
returns (``TurnCompleted``, ``ToolCallsRequested``, ``DeferredToolCall``, the tool policies) are
re-exported here from ``dex_agents.pure.values.runner``, where the core that reads them defines them.
The session calls the runner from one module only, ``dex_agents.shell.requests``.

Rules the session enforces (a violation fails the attempt with a clear error, nothing is stored):
    * ``build_user_message`` is synchronous, deterministic and free of side effects; it returns a
      ``FrameworkMessage`` with role ``user``.
    * ``run_model_step`` makes at most one model call and runs no tool. ``ToolCallsRequested`` holds a
      non-empty ``framework_run_state`` and at least one call; tool call IDs are non-empty, contain no
      ``/``, are unique within the turn and have no record yet. Usage is this model call's only.
    * ``run_model_step`` raises for a failed model call. The session writes
      ``dex_agents.model_call_failed`` before the attempt fails; ``RunModel`` reruns up to 3 attempts,
      then the turn fails. Raise ``NonRetryableModelError`` for a failure no retry can fix (a refused
      request, an invalid key, a context that is too long): the turn fails at once, in that attempt,
      with its message as the turn's error.
    * A turn makes at most ``max_model_calls_per_turn`` model calls (default 50): the call that reaches
      the cap and still asks for tools fails the turn instead of deferring them.
    * ``execute_deferred_tool_call`` runs the real tool. ``ToolExecutionError`` is a failure the model
      should see (recorded ``failed``, not retried); any other exception is unexpected (retried by the
      tool Step's policy, then recorded ``failed`` or ``outcome_unknown``). It receives the turn's
      ``framework_run_state`` (that of the response that deferred the call), to carry per-call
      framework context (a serialized run context) to the tool Step.
    * A runner keeps no state between calls: a later call may run in another Worker process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol, final

from dex_agents.pure.values.runner import AgentTurnOutcome as AgentTurnOutcome
from dex_agents.pure.values.runner import DeferredToolCall as DeferredToolCall
from dex_agents.pure.values.runner import McpToolAnnotations as McpToolAnnotations
from dex_agents.pure.values.runner import ResolvedToolPolicy as ResolvedToolPolicy
from dex_agents.pure.values.runner import ToolCallsRequested as ToolCallsRequested
from dex_agents.pure.values.runner import ToolPolicy as ToolPolicy
from dex_agents.pure.values.runner import TurnCompleted as TurnCompleted
from dex_agents.pure.values.session import (
    AgentMessage,
    AgentToolCall,
    AgentUsage,
    FrameworkMessage,
    ToolCallStatus,
    ToolEffect,
)
from dex_agents.shell.error_chain import error_chain


class AgentEventWriter(Protocol):
    """Live events of one Step attempt, bound to its turn and attempt.

    Text and reasoning deltas are coalesced (up to 100 ms or 1,024 characters); every write after the
    Step handler returns is dropped. Events are best effort: a write never fails the Step.
    """

    @property
    def turn_id(self) -> str | None: ...

    @property
    def attempt(self) -> int: ...

    def write_text_delta(self, text: str) -> None: ...

    def write_reasoning_delta(self, text: str) -> None: ...

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None: ...

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: ToolCallStatus) -> None: ...

    def write_event(self, event_type: str, payload: Mapping[str, object]) -> None:
        """Write an adapter event; give it a prefix (``"pydantic_ai.step_finished"``). ``payload`` is a
        JSON object of plain Python values (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``)."""
        ...


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTurnContext:
    """What ``run_model_step`` receives.

    Attributes:
        flow_id: The session ID.
        turn_id: ``turn-<n>``.
        attempt: One-based ``RunModel`` attempt (a crash before any output re-delivers the same attempt).
        messages: Every stored message in sequence order, including this turn's user message.
        framework_run_state: Run state from this turn's last ``ToolCallsRequested``; ``None`` for the
            turn's first model call.
        tool_calls: This turn's tool call records in deferral order; all final when the model runs.
        events: The event writer of this attempt.
        deadline: When this attempt's method timeout ends (Worker clock, UTC).
        resolve_tool_policy: The effective policy of a tool: ``resolve_tool_policy(name, framework_effect)``.
        is_cancellation_requested: True once Dex cancelled the attempt.
        heartbeat: Send an extra heartbeat (the session already sends one regularly).
        history_summary: The summary of the messages before ``messages`` once the session compacted
            its history (``messages`` then start after the summary's boundary); ``None`` before. A
            runner that summarizes (``summarize_history``) puts it first in the model input.
    """

    flow_id: str
    turn_id: str
    attempt: int
    messages: Sequence[AgentMessage]
    framework_run_state: str | None
    tool_calls: Sequence[AgentToolCall]
    events: AgentEventWriter
    deadline: datetime
    resolve_tool_policy: Callable[[str, ToolEffect | None], ResolvedToolPolicy]
    is_cancellation_requested: Callable[[], bool]
    heartbeat: Callable[[], Awaitable[None]]
    history_summary: str | None = None

    @property
    def is_resuming(self) -> bool:
        """True when the turn continues after tool calls (``framework_run_state`` is set)."""
        return self.framework_run_state is not None

    def recorded_tool_call(self, tool_call_id: str) -> AgentToolCall | None:
        """This turn's record of ``tool_call_id``, or ``None``."""
        for record in self.tool_calls:
            if record.tool_call_id == tool_call_id:
                return record
        return None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeferredToolExecution:
    """What ``execute_deferred_tool_call`` receives.

    Attributes:
        flow_id: The session ID.
        tool_call: The call's record (``status`` is ``pending``).
        idempotency_key: ``<flow_id>/<turn_id>/<tool_call_id>``, the same on every attempt.
        framework_run_state: The turn's run state: that of the ``ToolCallsRequested`` that deferred
            this call (every call of one response gets the same); read-only context for the tool.
        attempt: One-based attempt of the tool Step.
        events: The event writer of this attempt.
        deadline: When this attempt's method timeout ends (Worker clock, UTC).
        is_cancellation_requested: True once Dex cancelled the attempt.
        heartbeat: Send an extra heartbeat (the session already sends one regularly).
    """

    flow_id: str
    tool_call: AgentToolCall
    idempotency_key: str
    framework_run_state: str | None = None
    attempt: int
    events: AgentEventWriter
    deadline: datetime
    is_cancellation_requested: Callable[[], bool]
    heartbeat: Callable[[], Awaitable[None]]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionResult:
    """A tool's output text: recorded and shown to the model."""

    output: str


class ToolExecutionError(Exception):
    """A tool failure the model should see: the call is recorded ``failed`` with ``message``, not retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NonRetryableModelError(Exception):
    """A model call failure no retry can fix: ``RunModel`` writes ``dex_agents.model_call_failed``
    (``retrying`` false) and fails the turn at once with ``message`` as the turn's error (the turn
    failure note included when tool calls of the turn finished); the session then waits for the next
    user message. Any other exception from ``run_model_step`` fails the attempt and is retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ModelRetryAfterError(Exception):
    """A retryable model call failure that says when to try again (an HTTP 429 or 503 with a
    ``Retry-After``): the attempt fails, and Dex waits ``retry_after_seconds`` (rounded up to whole
    seconds, at least 1) before the next attempt instead of the backoff of the Flow's ``model_retry``.
    Any exception with a numeric ``retry_after_seconds`` attribute, or with a ``Retry-After`` header on
    its ``response`` (an ``openai`` or ``httpx`` status error) anywhere in its cause chain, does the
    same (``retry_after_of``); the attempt limit and total duration still apply."""

    def __init__(self, message: str, retry_after_seconds: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_seconds = retry_after_seconds


MAX_RETRY_AFTER_SECONDS: Final = 24 * 60 * 60
"""The longest retry-after honoured (a longer one waits this long)."""


def _seconds_of(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, str):  # an HTTP Retry-After in delta-seconds (an HTTP date is not read)
        try:
            return _seconds_of(float(value.strip()))
        except ValueError:
            return None
    return None


def _header_retry_after(error: BaseException) -> float | None:
    headers = getattr(getattr(error, "response", None), "headers", None)
    get = getattr(headers, "get", None)
    if not callable(get):
        return None
    try:
        milliseconds = _seconds_of(get("retry-after-ms"))
        return milliseconds / 1000 if milliseconds is not None else _seconds_of(get("retry-after"))
    except Exception:  # noqa: BLE001 - a header object we cannot read says nothing
        return None


def retry_after_of(error: BaseException) -> int | None:
    """The whole seconds ``error`` asks to wait before the next attempt (rounded up, at least 1, at most
    ``MAX_RETRY_AFTER_SECONDS``), from a ``retry_after_seconds`` attribute or a ``Retry-After`` header of
    its ``response``, in ``error`` or its causes; ``None`` when none says."""
    for current in error_chain(error):
        seconds = _seconds_of(getattr(current, "retry_after_seconds", None))
        if seconds is None:
            seconds = _header_retry_after(current)
        if seconds is not None:
            return min(MAX_RETRY_AFTER_SECONDS, max(1, math.ceil(seconds)))
    return None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HistorySummaryRequest:
    """What ``summarize_history`` receives: one summarization call over the oldest messages.

    Attributes:
        flow_id: The session ID.
        turn_id: The running turn (``None``: a compaction requested between turns).
        attempt: One-based attempt of the ``CompactHistory`` Step.
        previous_summary: The summary this one replaces (it covers the messages before ``messages``).
        messages: The span to summarize, in sequence order (never empty; no tool call without its result).
        instructions: What the summary must keep (``CompactionPolicy.instructions``).
        events: The event writer of this attempt.
        deadline: When this attempt's method timeout ends (Worker clock, UTC).
        is_cancellation_requested: True once Dex cancelled the attempt.
        heartbeat: Send an extra heartbeat (the session already sends one regularly).
    """

    flow_id: str
    turn_id: str | None
    attempt: int
    previous_summary: str | None
    messages: Sequence[AgentMessage]
    instructions: str
    events: AgentEventWriter
    deadline: datetime
    is_cancellation_requested: Callable[[], bool]
    heartbeat: Callable[[], Awaitable[None]]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HistorySummaryResult:
    """A summarization call's result: the summary text (non-blank) and that call's usage."""

    text: str
    usage: AgentUsage


class ContextWindowExceededError(NonRetryableModelError):
    """The model refused the call because its input exceeds the model's context window.

    Without compaction it fails the turn at once, as any ``NonRetryableModelError``; with compaction
    (``CompactionPolicy``) the session summarizes the oldest messages in a ``CompactHistory`` Step and
    runs the model call again. Adapters map their framework's error to it (Pydantic AI's
    ``ModelContextWindowExceededError``, OpenAI's ``context_length_exceeded``, "prompt is too long")."""


class AgentFrameworkRunner(Protocol):
    """The contract between the session and an agent framework (see the module docstring)."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        """The framework's user message for ``text`` (role ``user``); synchronous and deterministic."""
        ...

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        """Make at most one model call and return ``TurnCompleted`` or ``ToolCallsRequested``; raise
        ``NonRetryableModelError`` for a failure no retry can fix."""
        ...

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        """Run one deferred tool call; raise ``ToolExecutionError`` for a failure the model should see."""
        ...


class SummarizingRunner(AgentFrameworkRunner, Protocol):
    """A runner that can compact a session's history: one summarization call with the session's own
    model, no tool run. The adapters of ``dex_agents.adapters`` all are; a runner without
    ``summarize_history`` gets no compaction (the spec's behaviour)."""

    async def summarize_history(self, request: HistorySummaryRequest) -> HistorySummaryResult:
        """Summarize ``request.messages`` (after ``request.previous_summary``) in one model call."""
        ...


__all__ = [
    "AgentEventWriter",
    "AgentFrameworkRunner",
    "AgentTurnContext",
    "AgentTurnOutcome",
    "ContextWindowExceededError",
    "DeferredToolCall",
    "DeferredToolExecution",
    "HistorySummaryRequest",
    "HistorySummaryResult",
    "MAX_RETRY_AFTER_SECONDS",
    "McpToolAnnotations",
    "ModelRetryAfterError",
    "NonRetryableModelError",
    "ResolvedToolPolicy",
    "SummarizingRunner",
    "ToolCallsRequested",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolPolicy",
    "TurnCompleted",
    "retry_after_of",
]
