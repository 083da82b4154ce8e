"""What a framework supplies to the turn template (``kit.turn``), and what the template hands it.

``TurnBinding[M]`` is the protocol a framework implements over its message type ``M``; the values it
receives and returns (``ModelCall``, ``ModelAnswer``, ``RequestedCall``, ``CallRef``, ``RoundAnswer``)
and the tool Step's view of a deferred call (``ToolRun``) are here, with the template's run state:
``{"messages": <the turn's messages so far>, "usage": <the turn's usage so far>, "contexts": {call ID:
<per-call framework context>}}`` in a ``kit.run_state`` envelope.

Invariant: ``ToolRun`` reads the run state only when asked, and a state it cannot read is a
``ToolExecutionError`` (the tool does not run: decoding cannot succeed on a retry).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Generic, Protocol, TypeVar, final

from dex_agents.adapters.kit.arguments import ArgumentsValidator
from dex_agents.adapters.kit.run_state import RunState, RunStateError, decode_run_state
from dex_agents.adapters.kit.tool_results import ToolOutcome
from dex_agents.pure.values.session import AgentUsage, FrameworkMessage, ToolEffect
from dex_agents.shell.runner import (
    AgentEventWriter,
    AgentTurnContext,
    DeferredToolExecution,
    HistorySummaryResult,
    ToolExecutionError,
)

M = TypeVar("M")

OUTPUT_NOT_PROCESSED: Final = (
    "Output not processed: this response also called function tools, which run first. "
    "Read their results, then give the final output again."
)
"""What the model reads for a call of a response that was not deferred (an output tool's call)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CallRef:
    """A call of a response: its ID and tool name, in the model's order."""

    tool_call_id: str
    tool_name: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RequestedCall:
    """A call the response asks the session to defer.

    Attributes:
        effect: The framework's effect for the tool (``None``: none given; ``READ`` for a tool the
            agent does not have or arguments that cannot be read, so it fails at once).
        requires_approval: The framework itself asks for an approval of this call.
        context: JSON data the tool Step gets back (``ToolRun.context``), e.g. a serialized run context.
    """

    tool_call_id: str
    tool_name: str
    arguments: str
    effect: ToolEffect | None
    requires_approval: bool = False
    context: object = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall(Generic[M]):
    """One model call's input.

    Attributes:
        turn: The session's view of the turn.
        history: The stored messages the model sees, parsed (a compaction summary first, when any).
        turn_messages: The turn so far after its user message (responses and the answers to their
            calls, ending with the answers to the latest round); empty on the turn's first call.
        turn_usage: The usage of the turn's model calls before this one.
    """

    turn: AgentTurnContext
    history: list[M]
    turn_messages: list[M]
    turn_usage: AgentUsage

    @property
    def messages(self) -> list[M]:
        """The whole model input: ``history`` then ``turn_messages``."""
        return [*self.history, *self.turn_messages]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelAnswer(Generic[M]):
    """What one model call produced.

    Attributes:
        messages: The messages to store (the response; when the turn completes, also any message
            answering an output call).
        calls: The calls to defer; empty: the turn completes with ``messages``.
        usage: This call's usage.
    """

    messages: Sequence[M]
    calls: Sequence[RequestedCall]
    usage: AgentUsage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RoundAnswer:
    """What the model reads about one call of its latest response."""

    tool_call_id: str
    tool_name: str
    text: str
    outcome: ToolOutcome


class TurnBinding(Protocol[M]):
    """What a framework supplies to the template (see the module docstring)."""

    @property
    def adapter(self) -> str:
        """The run-state envelope's adapter name (e.g. ``"langchain"``)."""
        ...

    @property
    def run_state_version(self) -> int:
        """The adapter's run-state format version."""
        ...

    def user_item(self, text: str) -> str:
        """The deterministic ``framework_item`` of a user message showing ``text``."""
        ...

    def parse_item(self, data: str | object) -> Sequence[M]:
        """The messages of one stored item (JSON text, or data with a long text put back); raises
        ``ValueError`` when it is not this framework's."""
        ...

    def copy_message(self, message: M) -> M:
        """A copy the framework may change (history messages are shared between calls)."""
        ...

    def dump_messages(self, messages: Sequence[M]) -> object:
        """``messages`` as JSON data."""
        ...

    def load_messages(self, data: object) -> list[M]:
        """Messages from ``dump_messages`` data; raises ``ValueError`` when they are not."""
        ...

    def to_framework_messages(self, messages: Sequence[M]) -> list[FrameworkMessage]:
        """The stored form of ``messages``."""
        ...

    def response_calls(self, message: M) -> Sequence[CallRef] | None:
        """Every call of a model response, in the model's order; ``None`` when ``message`` is not one."""
        ...

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[M]:
        """The messages answering every call of the latest response (one answer per call, in order)."""
        ...

    async def call_model(self, call: ModelCall[M]) -> ModelAnswer[M]:
        """Make exactly one model call (streamed when the model can stream, its deltas written to
        ``call.turn.events``; else plain, its text written after it); run no tool."""
        ...

    async def run_tool(self, run: ToolRun[M]) -> str:
        """Run one deferred call's tool; its output as text. Raise ``ToolExecutionError`` for a failure
        the model should see (``kit.unknown_tool_error``, ``kit.invalid_arguments_error``)."""
        ...

    async def arguments_validator(self, tool_name: str) -> ArgumentsValidator | None:
        """The framework's own validator of ``tool_name``'s arguments (from the tool's schema; see
        ``kit.arguments``), or ``None`` when the agent has no such tool. Checks an approver's edit."""
        ...

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        """One plain model call, no tools: ``instructions`` as the system prompt, ``transcript`` as the
        user message; the response's text and usage."""
        ...

    def is_non_retryable(self, error: BaseException) -> bool:
        """Whether no retry of the model call can succeed after ``error``."""
        ...

    def is_context_window_exceeded(self, error: BaseException) -> bool:
        """Whether ``error`` says the model input exceeds the model's context window."""
        ...


@final
@dataclass(slots=True)
class ToolRun(Generic[M]):
    """One deferred call as its tool Step sees it; the run state is read only when asked for.

    ``context``, ``turn_messages`` and ``turn_usage`` raise ``ToolExecutionError`` when the run state
    is missing or unreadable (the tool does not run: decoding cannot succeed on a retry).
    """

    call: DeferredToolExecution
    binding: TurnBinding[M]
    _decoded: tuple[RunState, dict[str, object]] | None = field(default=None)

    def _state(self) -> dict[str, object]:
        if self._decoded is None:
            record = self.call.tool_call
            if self.call.framework_run_state is None:
                raise ToolExecutionError(f"tool call {record.tool_call_id!r} has no run state")
            try:
                self._decoded = decode_turn_state(self.call.framework_run_state, self.binding)
            except RunStateError as error:
                raise ToolExecutionError(str(error)) from error
        return self._decoded[1]

    @property
    def context(self) -> object:
        """The ``RequestedCall.context`` of this call (``None`` when it had none)."""
        contexts = self._state()["contexts"]
        return contexts.get(self.call.tool_call.tool_call_id) if isinstance(contexts, dict) else None

    def turn_messages(self) -> list[M]:
        """The turn's messages up to the response that made this call."""
        try:
            return self.binding.load_messages(self._state()["messages"])
        except ValueError as error:
            raise ToolExecutionError(f"the turn's run state holds no readable messages: {error}") from error

    def turn_usage(self) -> AgentUsage:
        """The usage of the turn's model calls up to the one that made this call."""
        return usage_from_json(self._state()["usage"])


def usage_to_json(usage: AgentUsage) -> dict[str, int]:
    return {"requests": usage.requests, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens}


def usage_from_json(data: object) -> AgentUsage:
    """``usage_to_json`` data back (a missing or invalid count is 0)."""
    counts = data if isinstance(data, dict) else {}

    def count(name: str) -> int:
        value = counts.get(name)
        return value if type(value) is int and value > 0 else 0

    return AgentUsage(requests=count("requests"), input_tokens=count("input_tokens"),
                      output_tokens=count("output_tokens"), cache_read_tokens=count("cache_read_tokens"),
                      cache_write_tokens=count("cache_write_tokens"))


def decode_turn_state(text: str, binding: TurnBinding[M]) -> tuple[RunState, dict[str, object]]:
    """The envelope and the template's state in ``text``; ``RunStateError`` when it is not ``binding``'s."""
    decoded = decode_run_state(text, adapter=binding.adapter, version=binding.run_state_version)
    state = decoded.state
    if not isinstance(state, dict) or set(state) != {"messages", "usage", "contexts"}:
        raise RunStateError(f"the turn's run state is not this {binding.adapter} adapter's state")
    return decoded, state


__all__ = [
    "OUTPUT_NOT_PROCESSED",
    "CallRef",
    "ModelAnswer",
    "ModelCall",
    "RequestedCall",
    "RoundAnswer",
    "ToolRun",
    "TurnBinding",
    "decode_turn_state",
    "usage_from_json",
    "usage_to_json",
]
