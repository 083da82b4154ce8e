"""Effects: the closed union of everything a reducer asks the shell to do, named after the Dex verb
(or runner call) each one becomes. The shell interprets these and nothing else.

Order matters: the shell performs a transition's effects in the order given. Within one Step
invocation Dex stages writes and commits them atomically with the Step decision, so the order only
shows in the live event Stream and in the decision, which is always last.

Invariants:
    * A Step transition ends with exactly one decision (``GoToSteps``, ``DeadEnd``) or with
      ``FailAttempt`` (the shell raises so Dex retries the attempt; nothing else of that transition
      is performed), except a tool Step's ``ToolStepStarted`` transition, which ends with
      ``ExecuteDeferredToolCall`` (the shell runs the tool, then reports the outcome as a new input).
    * An RPC transition ends with exactly one ``AnswerRpc`` and never writes the event Stream.
    * ``SetAttribute.value`` has the type of its Attribute (checked on construction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

from pyrsistent import PVector as PVectorType
from pyrsistent.typing import PVector

from dex_agents.pure.persistence import AttributeName, ChannelMapName, ChannelName, MapName
from dex_agents.pure.rpc_values import AgentMessagePage, AgentSnapshot
from dex_agents.pure.step_options import StepMovement
from dex_agents.pure.values import (
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    ToolCallCompleted,
)

AttributeValue: TypeAlias = AgentState | str | PVector[AgentInterrupt] | AgentUsage
"""``AgentState`` -> ``AgentState``; ``FrameworkRunState`` -> ``str``; ``PendingInterrupts`` ->
``PVector[AgentInterrupt]``; ``AgentUsage`` -> ``AgentUsage``."""

_ATTRIBUTE_TYPES: dict[AttributeName, type] = {
    AttributeName.AGENT_STATE: AgentState,
    AttributeName.FRAMEWORK_RUN_STATE: str,
    AttributeName.AGENT_USAGE: AgentUsage,
}


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SetAttribute:
    """``Attribute.set(context, value)``."""

    name: AttributeName
    value: AttributeValue

    def __post_init__(self) -> None:
        if self.name is AttributeName.PENDING_INTERRUPTS:
            ok = isinstance(self.value, PVectorType) and all(isinstance(item, AgentInterrupt) for item in self.value)
        else:
            ok = isinstance(self.value, _ATTRIBUTE_TYPES[self.name])
        if not ok:
            raise ValueError(f"{self.name} cannot hold {type(self.value).__name__}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAttribute:
    """``Attribute.delete(context)``."""

    name: AttributeName


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SetMapInstance:
    """``AttributeMap.set(context, key, value)``: ``AgentMessages`` keyed by the 12-digit sequence key
    holds ``AgentMessage``; ``AgentToolCalls`` keyed by tool call ID holds ``AgentToolCall``."""

    name: MapName
    key: str
    value: AgentMessage | AgentToolCall

    def __post_init__(self) -> None:
        expected = AgentMessage if self.name is MapName.AGENT_MESSAGES else AgentToolCall
        if not isinstance(self.value, expected):
            raise ValueError(f"{self.name} cannot hold {type(self.value).__name__}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteMapInstance:
    """``AttributeMap.delete(context, key)``."""

    name: MapName
    key: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PublishToChannel:
    """``Channel.publish(context, value)``: ``QueuedUserMessages`` takes ``AgentUserMessage``,
    ``ToolCallResults`` takes ``ToolCallCompleted``."""

    name: ChannelName
    value: AgentUserMessage | ToolCallCompleted

    def __post_init__(self) -> None:
        expected = AgentUserMessage if self.name is ChannelName.QUEUED_USER_MESSAGES else ToolCallCompleted
        if not isinstance(self.value, expected):
            raise ValueError(f"{self.name} cannot carry {type(self.value).__name__}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PublishToChannelInstance:
    """``ChannelMap.publish(context, key, value)`` (``InterruptResolutions`` keyed by interrupt ID)."""

    name: ChannelMapName
    key: str
    value: AgentInterruptResolution


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WriteEvent:
    """``Stream.write(context, event)`` on ``AgentEvents`` (Steps only; RPCs cannot write Streams)."""

    event: AgentEvent


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """Send a heartbeat and wait until it is out, before the tool runs (the single-attempt guard)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExecuteDeferredToolCall:
    """Call ``runner.execute_deferred_tool_call`` with this record and idempotency key, then feed the
    outcome back as ``ToolCallSucceeded`` or ``ToolExecutionFailed`` (anything else the runner raises
    is raised to Dex, which retries or takes the failure route)."""

    tool_call: AgentToolCall
    idempotency_key: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class GoToSteps:
    """``go_to_many(*movements)``: start every movement at once (at least one)."""

    movements: PVector[StepMovement]

    def __post_init__(self) -> None:
        if len(self.movements) == 0:
            raise ValueError("GoToSteps needs at least one movement")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeadEnd:
    """``dead_end()``: end this branch of the Flow; the session keeps running."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class FailAttempt:
    """Raise so that Dex fails this attempt (retry, then the failure route). Nothing else of the
    transition is performed. ``error`` says what was wrong (a runner defect or an input that does not
    fit the state)."""

    error: str


RpcOutput: TypeAlias = bool | AgentSnapshot | AgentMessagePage
"""``send_user_message`` and ``resolve_interrupt`` answer ``bool``; the readers their records."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerRpc:
    """Return ``output`` from the RPC handler (with the writes of the same transition)."""

    output: RpcOutput


Effect: TypeAlias = (
    SetAttribute
    | DeleteAttribute
    | SetMapInstance
    | DeleteMapInstance
    | PublishToChannel
    | PublishToChannelInstance
    | WriteEvent
    | Heartbeat
    | ExecuteDeferredToolCall
    | GoToSteps
    | DeadEnd
    | FailAttempt
    | AnswerRpc
)
"""Every effect a reducer can ask for."""

__all__ = [
    "AnswerRpc",
    "AttributeValue",
    "DeadEnd",
    "DeleteAttribute",
    "DeleteMapInstance",
    "Effect",
    "ExecuteDeferredToolCall",
    "FailAttempt",
    "GoToSteps",
    "Heartbeat",
    "PublishToChannel",
    "PublishToChannelInstance",
    "RpcOutput",
    "SetAttribute",
    "SetMapInstance",
    "WriteEvent",
]
