"""Effects: the closed union of everything a reducer asks the shell to do, named after the Dex verb
(or runner call) each one becomes. The shell interprets these and nothing else.

Order matters: the shell performs a transition's effects in the order given. Within one Step
invocation Dex stages writes and commits them atomically with the Step decision, so the order only
shows in the live event Stream and in the decision, which is always last.

The persistence effects are generic over the typed key they write (``persistence.AGENT_STATE`` and so
on): ``SetAttribute.of(AGENT_STATE, value)`` type-checks only when ``value`` is an ``AgentState``. Build
them with their ``of`` constructors, which pin the value type to the key's and return the effect as it
sits in the ``Effect`` union (``SetAttribute[object]``): a bare constructor call inside a list of
``Effect`` would make mypy infer ``object`` and refuse the key, which is invariant in its type.

Invariants:
    * A Step transition ends with exactly one decision (``GoToSteps``, ``DeadEnd``), except a
      transition that asks the shell for work and a follow-up input: a tool Step's
      ``ToolStepStarted`` ends with ``ExecuteDeferredToolCall`` (the shell runs the tool), and
      ``RunModel`` failing its turn ends with ``BuildTurnFailureNote`` (the runner builds the note).
    * ``FailAttempt`` is always last. A rejection is ``FailAttempt`` alone (state unchanged); only a
      failed model call (``ModelCallFailed``) puts a ``WriteEvent`` before it: the shell raises at
      ``FailAttempt``, Dex keeps the Stream writes of the failed attempt and commits nothing else.
    * An RPC transition ends with exactly one ``AnswerRpc`` (or is a rejection: the caller gets an
      error) and never writes the event Stream.
    * A persistence effect's value has its key's type (checked by mypy, and again on construction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar, final

from pyrsistent.typing import PVector

from dex_agents.pure.persistence import AttributeKey, ChannelKey, ChannelMapKey, MapKey
from dex_agents.pure.rpc_values import AgentMessagePage, AgentSnapshot
from dex_agents.pure.step_options import StepMovement
from dex_agents.pure.values import AgentEvent, AgentToolCall

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
"""The value type of a persistence effect's key (covariant, so every effect fits ``Effect``)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SetAttribute(Generic[T_co]):
    """``Attribute.set(context, value)``."""

    attribute: AttributeKey[T_co]
    value: T_co

    def __post_init__(self) -> None:
        if not self.attribute.holds(self.value):
            raise ValueError(f"{self.attribute.name} cannot hold {type(self.value).__name__}")

    @staticmethod
    def of(attribute: AttributeKey[T], value: T) -> SetAttribute[object]:
        """Set ``attribute`` to ``value`` (which must be of the Attribute's type)."""
        effect = SetAttribute(attribute=attribute, value=value)
        return effect


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAttribute(Generic[T_co]):
    """``Attribute.delete(context)``."""

    attribute: AttributeKey[T_co]

    @staticmethod
    def of(attribute: AttributeKey[T]) -> DeleteAttribute[object]:
        """Delete ``attribute``."""
        effect = DeleteAttribute(attribute=attribute)
        return effect


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SetMapInstance(Generic[T_co]):
    """``AttributeMap.set(context, key, value)``: ``AgentMessages`` keyed by the 12-digit sequence key
    holds ``AgentMessage``; ``AgentToolCalls`` keyed by tool call ID holds ``AgentToolCall``."""

    map: MapKey[T_co]
    key: str
    value: T_co

    def __post_init__(self) -> None:
        if not self.map.holds(self.value):
            raise ValueError(f"{self.map.name} cannot hold {type(self.value).__name__}")

    @staticmethod
    def of(attribute_map: MapKey[T], key: str, value: T) -> SetMapInstance[object]:
        """Set the instance ``key`` of ``attribute_map`` to ``value`` (of the map's type)."""
        effect = SetMapInstance(map=attribute_map, key=key, value=value)
        return effect


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteMapInstance(Generic[T_co]):
    """``AttributeMap.delete(context, key)``."""

    map: MapKey[T_co]
    key: str

    @staticmethod
    def of(attribute_map: MapKey[T], key: str) -> DeleteMapInstance[object]:
        """Delete the instance ``key`` of ``attribute_map``."""
        effect = DeleteMapInstance(map=attribute_map, key=key)
        return effect


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PublishToChannel(Generic[T_co]):
    """``Channel.publish(context, value)``: ``QueuedUserMessages`` takes ``AgentUserMessage``,
    ``ToolCallResults`` takes ``ToolCallCompleted``."""

    channel: ChannelKey[T_co]
    value: T_co

    def __post_init__(self) -> None:
        if not self.channel.holds(self.value):
            raise ValueError(f"{self.channel.name} cannot carry {type(self.value).__name__}")

    @staticmethod
    def of(channel: ChannelKey[T], value: T) -> PublishToChannel[object]:
        """Publish ``value`` (of the Channel's type) on ``channel``."""
        effect = PublishToChannel(channel=channel, value=value)
        return effect


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PublishToChannelInstance(Generic[T_co]):
    """``ChannelMap.publish(context, key, value)`` (``InterruptResolutions`` keyed by interrupt ID)."""

    channel_map: ChannelMapKey[T_co]
    key: str
    value: T_co

    def __post_init__(self) -> None:
        if not self.channel_map.holds(self.value):
            raise ValueError(f"{self.channel_map.name} cannot carry {type(self.value).__name__}")

    @staticmethod
    def of(channel_map: ChannelMapKey[T], key: str, value: T) -> PublishToChannelInstance[object]:
        """Publish ``value`` (of the ChannelMap's type) on the instance ``key`` of ``channel_map``."""
        effect = PublishToChannelInstance(channel_map=channel_map, key=key, value=value)
        return effect


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
    """Call ``runner.execute_deferred_tool_call`` with this record, idempotency key and the turn's
    ``framework_run_state`` (that of the ``ToolCallsRequested`` that deferred the call), then feed the
    outcome back as ``ToolCallSucceeded`` or ``ToolExecutionFailed`` (anything else the runner raises
    is raised to Dex, which retries or takes the failure route)."""

    tool_call: AgentToolCall
    idempotency_key: str
    framework_run_state: str | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class BuildTurnFailureNote:
    """``RunModel`` fails its turn after tool calls finished: call ``runner.build_user_message(note)``,
    then feed back ``TurnFailed(recovery_error, that message)`` (``note`` is ``turn_failure_note``)."""

    note: str
    recovery_error: str


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
    """Raise so that Dex fails this attempt (retry, then the failure route); in an RPC, the call fails
    and its caller gets an error with this text. Nothing staged is committed (events written before it
    stay in the Stream). ``error`` says what was wrong (a runner defect, a failed model call, an input
    that does not fit the state or cannot be encoded)."""

    error: str


RpcOutput: TypeAlias = bool | AgentSnapshot | AgentMessagePage
"""``send_user_message`` and ``resolve_interrupt`` answer ``bool``; the readers their records."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerRpc:
    """Return ``output`` from the RPC handler (with the writes of the same transition)."""

    output: RpcOutput


Effect: TypeAlias = (
    SetAttribute[object]
    | DeleteAttribute[object]
    | SetMapInstance[object]
    | DeleteMapInstance[object]
    | PublishToChannel[object]
    | PublishToChannelInstance[object]
    | WriteEvent
    | Heartbeat
    | ExecuteDeferredToolCall
    | BuildTurnFailureNote
    | GoToSteps
    | DeadEnd
    | FailAttempt
    | AnswerRpc
)
"""Every effect a reducer can ask for."""

__all__ = [
    "AnswerRpc",
    "BuildTurnFailureNote",
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
