"""Dex codecs of every top-level session value, built from the pure core's tables.

The Dex SDK's automatic dataclass JSON cannot hold the session's values (they use ``PVector``,
``PMap`` and nullable nested records), so every type a persisted name (its typed key in
``dex_agents.pure.values.persistence``), a Step input or an RPC (``dex_agents.pure.flow.table``) carries is
registered here with a codec that writes the spec's canonical JSON (``dex_agents.pure.wire``).

Invariants:
    * The codecs are derived from the keys' wire types and the tables' records; nothing here names a
      session type.
    * A stored text that cannot be decoded raises ``StoredValueError`` naming the type and the JSON
      path; it never decodes to a partial value.
    * The Client and every Worker must use ``SESSION_CODECS`` (``session_registry`` does this).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar, cast, final

from dex import Codec, CodecRegistry, Value, WireKind
from pyrsistent.typing import PVector
from returns.pipeline import is_successful

from dex_agents.pure.flow.table import RPC_TABLE, START_INPUT_TYPE
from dex_agents.pure.values.persistence import PERSISTED_KEYS
from dex_agents.pure.wire import WireType, decode_as, encode_as, record_type
from dex_agents.pure.wire.schema import RecordNode, VectorNode, WireNode

T = TypeVar("T")


@final
class StoredValueError(ValueError):
    """A value Dex handed over cannot be decoded as its declared type (corrupt or foreign JSON).

    Deterministic: decoding the same text again fails the same way, so retrying cannot help.
    """


DECODE_MEMO_CHARACTERS: Final = 32 * 1024 * 1024
"""Budget of one codec's decode memo, in characters of remembered text (cleared when exceeded)."""


@final
class _DecodeMemo(Generic[T]):
    """Decoded values by their stored text. Sound because decoding is a pure function of the text and
    the values are immutable; it keeps a long session's model calls from decoding the same history
    again and again. Holds at most ``DECODE_MEMO_CHARACTERS`` characters of text."""

    __slots__ = ("characters", "values")

    def __init__(self) -> None:
        self.values: dict[str, T] = {}
        self.characters = 0

    def remember(self, text: str, value: T) -> None:
        if self.characters + len(text) > DECODE_MEMO_CHARACTERS:
            self.values.clear()
            self.characters = 0
        if len(text) <= DECODE_MEMO_CHARACTERS:
            self.values[text] = value
            self.characters += len(text)


@final
@dataclass(frozen=True, slots=True)
class WireTextCodec(Generic[T]):
    """A Dex ``Codec`` that stores ``wire_type`` as the spec's canonical JSON text."""

    wire_type: WireType[T]
    _memo: _DecodeMemo[T] = field(default_factory=_DecodeMemo, compare=False, repr=False)

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
        remembered = self._memo.values.get(value.data)
        if remembered is not None:
            return remembered
        result = decode_as(value.data, self.wire_type)
        if not is_successful(result):
            raise StoredValueError(result.failure().message)
        decoded = result.unwrap()
        self._memo.remember(value.data, decoded)
        return decoded


def _type_hint_of(node: WireNode) -> object:
    match node:
        case RecordNode(record=record):
            return record
        case VectorNode(item=item):
            return cast(Any, PVector)[_type_hint_of(item)]
        case _:
            raise TypeError(f"no session value is a {type(node).__name__}")


def value_type_of(value_type: WireType[T] | type[T]) -> type[T]:
    """The type hint Dex knows a value type by (a definition's ``value_type``, a codec's key): the
    record class, ``PVector[record]`` for a vector, or the plain Python type itself."""
    if isinstance(value_type, WireType):
        return cast(type[T], _type_hint_of(value_type.node))
    return value_type


def _session_wire_types() -> Iterator[WireType[Any]]:
    for key in PERSISTED_KEYS:
        if isinstance(key.value_type, WireType):
            yield key.value_type
    records: list[type[object]] = [START_INPUT_TYPE]
    for row in RPC_TABLE.values():
        records.extend(record for record in (row.input_type, row.output_type) if record is not None)
    for record in records:
        if dataclasses.is_dataclass(record):
            yield record_type(record)


SESSION_CODECS: Final[Mapping[object, Codec[Any]]] = {
    value_type_of(wire_type): WireTextCodec(wire_type) for wire_type in _session_wire_types()
}
"""Codec of every top-level session type (persisted values, the start input, RPC inputs and outputs),
keyed by the type hint the definitions and handlers use."""


def session_codec_registry(extra: Mapping[object, Codec[Any]] | None = None) -> CodecRegistry:
    """A ``CodecRegistry`` with the session's codecs (plus ``extra`` for an application's own types)."""
    return CodecRegistry({**SESSION_CODECS, **(extra or {})})


__all__ = [
    "SESSION_CODECS",
    "StoredValueError",
    "WireTextCodec",
    "session_codec_registry",
    "value_type_of",
]
