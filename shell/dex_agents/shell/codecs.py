"""Dex codecs of every top-level session value, built from the pure wire module.

The Dex SDK's automatic dataclass JSON cannot hold the session's values (they use ``PVector``,
``PMap`` and nullable nested records), so every type a Step, an RPC or a persisted name carries is
registered here with a codec that writes the spec's canonical JSON (``dex_agents.pure.wire``).

Invariants:
    * A stored text that cannot be decoded raises ``StoredValueError`` naming the type and the JSON
      path; it never decodes to a partial value.
    * The Client and every Worker must use ``SESSION_CODECS`` (``session_registry`` does this).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, final

from dex import Codec, CodecRegistry, Value, WireKind
from pyrsistent.typing import PVector
from returns.pipeline import is_successful

from dex_agents.pure.rpc_values import (
    AgentMessagePage,
    AgentSnapshot,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
)
from dex_agents.pure.values import (
    AgentEvent,
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessage,
    AgentSessionStartInput,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    ToolCallCompleted,
)
from dex_agents.pure.wire import WireType, decode_as, encode_as, record_type, vector_type

T = TypeVar("T")


@final
class StoredValueError(ValueError):
    """A value Dex handed over cannot be decoded as its declared type (corrupt or foreign JSON).

    Deterministic: decoding the same text again fails the same way, so retrying cannot help.
    """


@final
@dataclass(frozen=True, slots=True)
class WireTextCodec(Generic[T]):
    """A Dex ``Codec`` that stores ``wire_type`` as the spec's canonical JSON text."""

    wire_type: WireType[T]

    @property
    def type_name(self) -> str:
        return self.wire_type.name

    @property
    def wire_kind(self) -> WireKind:
        return WireKind.JSON

    def encode(self, value: T) -> Value:
        return Value(WireKind.JSON, encode_as(value, self.wire_type))

    def decode(self, value: Value) -> T:
        if value.kind is not WireKind.JSON or not isinstance(value.data, str):
            raise StoredValueError(f"cannot decode {self.type_name}: expected a JSON value, got {value.kind.name}")
        result = decode_as(value.data, self.wire_type)
        if not is_successful(result):
            raise StoredValueError(result.failure().message)
        return result.unwrap()


PENDING_INTERRUPTS_TYPE: Final = vector_type(AgentInterrupt)
"""Wire type of the ``PendingInterrupts`` Attribute (a JSON array of ``AgentInterrupt``)."""

PendingInterrupts = PVector[AgentInterrupt]
"""The Python type of the ``PendingInterrupts`` Attribute; also its codec key."""

_RECORDS: Final[tuple[type[object], ...]] = (
    AgentEvent,
    AgentInterruptResolution,
    AgentMessage,
    AgentMessagePage,
    AgentSessionStartInput,
    AgentSnapshot,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    ListAgentMessagesInput,
    ResolveInterruptInput,
    SendUserMessageInput,
    ToolCallCompleted,
)


def _session_codecs() -> dict[object, Codec[Any]]:
    codecs: dict[object, Codec[Any]] = {record: WireTextCodec(record_type(record)) for record in _RECORDS}
    codecs[PendingInterrupts] = WireTextCodec(PENDING_INTERRUPTS_TYPE)
    return codecs


SESSION_CODECS: Final[Mapping[object, Codec[Any]]] = _session_codecs()
"""Codec of every top-level session type, keyed by the type hint the definitions use."""


def session_codec_registry(extra: Mapping[object, Codec[Any]] | None = None) -> CodecRegistry:
    """A ``CodecRegistry`` with the session's codecs (plus ``extra`` for an application's own types)."""
    return CodecRegistry({**SESSION_CODECS, **(extra or {})})


__all__ = [
    "PENDING_INTERRUPTS_TYPE",
    "SESSION_CODECS",
    "PendingInterrupts",
    "StoredValueError",
    "WireTextCodec",
    "session_codec_registry",
]
