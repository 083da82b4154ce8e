"""The runner contract's values: what a framework runner returns from a model call, and the tool
policies it applies. They live in the core, which reads them; the contract itself (the protocol, what
the runner receives, its errors) is ``dex_agents.shell.runner``, which re-exports these. The shell
checks a runner's objects into these values before any reducer sees them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias, final

from pyrsistent.typing import PVector

from dex_agents.pure.values.session import AgentUsage, FrameworkMessage, ToolEffect


@final
class ReconciledStatus(StrEnum):
    """What a ``reconcile`` found became of a call whose outcome was unknown."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReconciledOutcome:
    """A ``reconcile``'s answer: ``succeeded(output)``, ``failed(message)`` or ``still_unknown()``."""

    status: ReconciledStatus
    text: str | None = None

    @staticmethod
    def succeeded(output: str) -> ReconciledOutcome:
        """The call took effect; the model reads ``output`` as its result."""
        return ReconciledOutcome(status=ReconciledStatus.SUCCEEDED, text=output)

    @staticmethod
    def failed(message: str) -> ReconciledOutcome:
        """The call did not take effect; the model reads it failed with ``message``."""
        return ReconciledOutcome(status=ReconciledStatus.FAILED, text=message)

    @staticmethod
    def still_unknown() -> ReconciledOutcome:
        """It cannot be told; the call stays ``outcome_unknown``."""
        return ReconciledOutcome(status=ReconciledStatus.UNKNOWN)


Reconcile: TypeAlias = Callable[[str, str, str, str], "ReconciledOutcome | Awaitable[ReconciledOutcome]"]
"""``reconcile(tool_name, arguments, idempotency_key, error)``, sync or async: what became of a write
whose outcome is unknown (looked up by its idempotency key). What it raises is retried."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """A tool's configured policy. ``requires_approval`` ``None`` means: the effect's default.

    ``reconcile`` (ours, never on the wire): asked by ``ReconcileToolOutcome`` when a write's outcome
    becomes unknown; its answer replaces ``outcome_unknown`` before the model sees the result.
    """

    effect: ToolEffect
    requires_approval: bool | None = None
    reconcile: Reconcile | None = field(default=None, compare=False, metadata={"wire": False})
    sub_agent: str | None = None
    """Ours: the child agent's Flow type when the tool is a sub-agent (``kit.subagent_tool``)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedToolPolicy:
    """The effective policy of one tool call (``sub_agent``: the child agent's Flow type of a sub-agent
    tool, from its ``ToolPolicy``; ours)."""

    effect: ToolEffect
    requires_approval: bool
    sub_agent: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class McpToolAnnotations:
    """The MCP tool annotation hints that classify a tool's effect (``None`` when the server sent none)."""

    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeferredToolCall:
    """One tool call the model asked for, deferred to its own Step."""

    tool_call_id: str
    tool_name: str
    arguments: str
    policy: ResolvedToolPolicy


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCompleted:
    """The model gave its final answer. ``new_messages``: every message the turn produced after its
    user message, across all model calls, in order. ``usage``: this model call's usage only."""

    new_messages: PVector[FrameworkMessage]
    usage: AgentUsage


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallsRequested:
    """The model asked for tools. ``framework_run_state`` is non-empty and opaque; ``tool_calls`` holds at
    least one call, in the order the model made them. ``usage``: this model call's usage only."""

    framework_run_state: str
    tool_calls: PVector[DeferredToolCall]
    usage: AgentUsage


AgentTurnOutcome: TypeAlias = TurnCompleted | ToolCallsRequested
"""What ``run_model_step`` returns."""

__all__ = [
    "Reconcile",
    "ReconciledOutcome",
    "ReconciledStatus",
    "AgentTurnOutcome",
    "DeferredToolCall",
    "McpToolAnnotations",
    "ResolvedToolPolicy",
    "ToolCallsRequested",
    "ToolPolicy",
    "TurnCompleted",
]
