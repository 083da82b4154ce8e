"""Effects: what a transition performs before its ending, named after the Dex verb each one becomes,
in closed unions by where they may appear. The shell interprets these and nothing else; how a
transition ends (a decision, a request, a wait, an RPC's answer) is in ``endings``.

| Union | Members | Where |
| --- | --- | --- |
| ``Write`` | ``SetAttribute``, ``DeleteAttribute``, ``SetMapInstance``, ``DeleteMapInstance``, ``PublishToChannel``, ``PublishToChannelInstance`` | Steps and RPCs, before the ending |
| ``StepEffect`` | ``Write``, ``WriteEvent`` | a Step's effects, before its ending |
| ``RecordInvocation`` | ``RecordInvocation`` | a transition's ``record``: a decision, a ``wait_for``, an RPC that writes and read a clock |

A transition holds its effects and its ending apart (``transition.StepTransition``,
``RpcTransition``, ``WaitTransition``), so an effect after the ending, a Stream write in an RPC, or
an RPC answer in a Step cannot be built: the types decide where an effect may appear.

Order matters: the shell performs a transition's effects in the order given, then its ending. Within
one Step invocation Dex stages writes and commits them atomically with the Step decision, so the order
only shows in the live event Stream.

The persistence effects are generic over the typed key they write (``persistence.AGENT_STATE`` and so
on): ``SetAttribute.of(AGENT_STATE, value)`` type-checks only when ``value`` is an ``AgentState``. Build
them with their ``of`` constructors, which pin the value type to the key's and return the effect as it
sits in the ``Write`` union (``SetAttribute[object]``): a bare constructor call inside a list of
effects would make mypy infer ``object`` and refuse the key, which is invariant in its type.

The invocation record (``RecordInvocation``) is the core's too: ``reducers.dispatch`` decides which
transitions carry one and what it holds (the clock of every input the invocation reduced, the Flow's
options); the shell stages it as a Dex history event with the invocation's writes.

Invariant: a persistence effect's value has its key's type (checked by mypy, and again on construction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar, final

from dex_agents.pure.values.persistence import AttributeKey, ChannelKey, ChannelMapKey, MapKey
from dex_agents.pure.machine.invocation_record import InvocationRecord
from dex_agents.pure.values.session import AgentEvent

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
"""The value type of a persistence effect's key (covariant, so every write of any value type fits ``Write``)."""


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


Write: TypeAlias = (
    SetAttribute[object]
    | DeleteAttribute[object]
    | SetMapInstance[object]
    | DeleteMapInstance[object]
    | PublishToChannel[object]
    | PublishToChannelInstance[object]
)
"""A staged write: Steps and RPCs both stage them; Dex commits them with the ending."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WriteEvent:
    """``Stream.write(context, event)`` on ``AgentEvents`` (Steps only; RPCs cannot write Streams)."""

    event: AgentEvent


StepEffect: TypeAlias = Write | WriteEvent
"""What a Step transition performs before its ending."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RecordInvocation:
    """Stage ``record`` as the Dex history event ``INVOCATION_RECORD_EVENT`` (its wire JSON), committed
    with the invocation's writes: an attempt that fails records nothing."""

    record: InvocationRecord


__all__ = [
    "DeleteAttribute",
    "DeleteMapInstance",
    "PublishToChannel",
    "PublishToChannelInstance",
    "RecordInvocation",
    "SetAttribute",
    "SetMapInstance",
    "StepEffect",
    "Write",
    "WriteEvent",
]
