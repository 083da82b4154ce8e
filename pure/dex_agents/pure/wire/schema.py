"""The wire schema: what shape a value record has on the wire, read once from its dataclass fields.

A schema is a closed union of nodes (``WireNode``). ``record_schema(cls)`` reads a record's field
annotations with ``typing.get_type_hints`` and maps each to a node; the encoder and the decoder walk the
same nodes, so what one writes the other reads back exactly.

Supported field types: ``str``, ``int`` (int64), ``float``, ``bool``, a ``StrEnum`` (its value is the wire
string), another record, ``X | None``, ``PVector[X]``, ``PMap[str, X]``, ``JsonValue`` and ``JsonObject``.
Anything else (a union of two records, ``list``, ``dict``, ``Any`` ...) is a programmer error: building
the schema raises ``TypeError`` naming the record and field, so an unsupported type never reaches the wire.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeAlias, TypeVar, final

from pyrsistent.typing import PMap, PVector

from dex_agents.pure.wire.json_value import JsonValue

T = TypeVar("T")


@final
class _JsonValueHint:
    """Stands in for the ``JsonValue`` alias while field annotations are resolved."""


@final
class _JsonObjectHint:
    """Stands in for the ``JsonObject`` alias while field annotations are resolved."""


_ALIAS_HINTS: dict[str, object] = {"JsonValue": _JsonValueHint, "JsonObject": _JsonObjectHint}


@final
@dataclass(frozen=True, slots=True)
class StrNode:
    """A JSON string."""


@final
@dataclass(frozen=True, slots=True)
class IntNode:
    """A JSON integer within the signed 64-bit range (never a boolean, never ``1.0``)."""


@final
@dataclass(frozen=True, slots=True)
class FloatNode:
    """A finite JSON number; an integer is accepted on decode and read as a float."""


@final
@dataclass(frozen=True, slots=True)
class BoolNode:
    """A JSON boolean (never ``0``/``1``)."""


@final
@dataclass(frozen=True, slots=True)
class EnumNode:
    """A ``StrEnum``: on the wire, one of the members' values."""

    enum: type[StrEnum]


@final
@dataclass(frozen=True, slots=True)
class OptionalNode:
    """``null`` or the inner node."""

    inner: WireNode


@final
@dataclass(frozen=True, slots=True)
class VectorNode:
    """A JSON array of items, held as a ``PVector``."""

    item: WireNode


@final
@dataclass(frozen=True, slots=True)
class MapNode:
    """A JSON object with arbitrary string keys, held as a ``PMap[str, value]``."""

    value: WireNode


@final
@dataclass(frozen=True, slots=True)
class RecordNode:
    """A value record: a JSON object with exactly the record's field names as keys."""

    record: type[object]


@final
@dataclass(frozen=True, slots=True)
class JsonValueNode:
    """Any JSON value, held as an immutable ``JsonValue``."""


@final
@dataclass(frozen=True, slots=True)
class JsonObjectNode:
    """Any JSON object, held as an immutable ``JsonObject``."""


WireNode: TypeAlias = (
    StrNode
    | IntNode
    | FloatNode
    | BoolNode
    | EnumNode
    | OptionalNode
    | VectorNode
    | MapNode
    | RecordNode
    | JsonValueNode
    | JsonObjectNode
)
"""Every shape a field can have on the wire."""


@final
@dataclass(frozen=True, slots=True)
class FieldSchema:
    """One record field: its wire name (the Python field name), its node, and whether the record gives
    it a default (such a field may be absent on decode and then takes the default)."""

    name: str
    node: WireNode
    has_default: bool


@final
@dataclass(frozen=True, slots=True)
class WireType(Generic[T]):
    """A typed handle on a top-level wire shape: ``T`` is what decoding it yields.

    Build it with ``record_type`` / ``vector_type`` (or use ``JSON_VALUE_TYPE``); the node is the schema
    the encoder and decoder walk, ``name`` names the type in errors and docs.
    """

    name: str
    node: WireNode


def record_type(record: type[T]) -> WireType[T]:
    """The wire type of one record class. Raises ``TypeError`` when ``record`` is not a supported record."""
    record_schema(record)
    return WireType(name=record.__name__, node=RecordNode(record))


def vector_type(record: type[T]) -> WireType[PVector[T]]:
    """The wire type of a JSON array of ``record`` values (e.g. the ``PendingInterrupts`` Attribute)."""
    record_schema(record)
    return WireType(name=f"PVector[{record.__name__}]", node=VectorNode(RecordNode(record)))


JSON_VALUE_TYPE: WireType[JsonValue] = WireType(name="JsonValue", node=JsonValueNode())
"""The wire type of a free-form JSON value (decoding yields a ``JsonValue``)."""


_RECORD_SCHEMAS: dict[type[object], tuple[FieldSchema, ...]] = {}
"""Memo of ``record_schema``: a class's annotations never change, so its schema is read once."""


def record_schema(record: type[object]) -> tuple[FieldSchema, ...]:
    """The fields of a record class in declaration order, read from its annotations (memoized per class).

    Raises:
        TypeError: ``record`` is not a dataclass, or one of its fields has an unsupported type.
    """
    known = _RECORD_SCHEMAS.get(record)
    if known is None:
        known = _RECORD_SCHEMAS[record] = _read_record_schema(record)
    return known


def _read_record_schema(record: type[object]) -> tuple[FieldSchema, ...]:
    if not dataclasses.is_dataclass(record):
        raise TypeError(f"{record.__name__} is not a dataclass record")
    hints: dict[str, object] = typing.get_type_hints(record, localns=_ALIAS_HINTS)
    schema: list[FieldSchema] = []
    for definition in dataclasses.fields(record):
        if definition.metadata.get("wire") is False:  # in memory only (a function), never on the wire
            continue
        if not definition.init:
            raise TypeError(f"{record.__name__}.{definition.name}: fields outside __init__ are not supported")
        where = f"{record.__name__}.{definition.name}"
        has_default = (
            definition.default is not dataclasses.MISSING or definition.default_factory is not dataclasses.MISSING
        )
        schema.append(FieldSchema(name=definition.name, node=node_for_hint(hints[definition.name], where), has_default=has_default))
    return tuple(schema)


def node_for_hint(hint: object, where: str) -> WireNode:
    """The node of one resolved type hint; ``where`` names the field in the ``TypeError`` for an unsupported hint."""
    simple = _SIMPLE_NODES.get(hint)
    if simple is not None:
        return simple
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        others = [argument for argument in arguments if argument is not type(None)]
        if len(others) == 1 and len(arguments) == 2:
            return OptionalNode(node_for_hint(others[0], where))
        raise TypeError(f"{where}: only 'X | None' unions are supported on the wire, got {hint}")
    if origin is PVector and len(arguments) == 1:
        return VectorNode(node_for_hint(arguments[0], where))
    if origin is PMap and len(arguments) == 2:
        if arguments[0] is not str:
            raise TypeError(f"{where}: map keys must be str on the wire, got {hint}")
        return MapNode(node_for_hint(arguments[1], where))
    if isinstance(hint, type):
        if issubclass(hint, StrEnum):
            return EnumNode(hint)
        if dataclasses.is_dataclass(hint):
            return RecordNode(hint)
    raise TypeError(f"{where}: unsupported wire type {hint}")


_SIMPLE_NODES: dict[object, WireNode] = {
    str: StrNode(),
    int: IntNode(),
    float: FloatNode(),
    bool: BoolNode(),
    _JsonValueHint: JsonValueNode(),
    _JsonObjectHint: JsonObjectNode(),
}


def describe_node(node: WireNode) -> str:
    """A short human description of what a node expects, used as ``expected`` in decode errors."""
    match node:
        case StrNode():
            return "string"
        case IntNode():
            return "integer (int64)"
        case FloatNode():
            return "number"
        case BoolNode():
            return "boolean"
        case EnumNode(enum=enum):
            allowed = ", ".join(f'"{member.value}"' for member in enum)
            return f"{enum.__name__} (one of {allowed})"
        case OptionalNode(inner=inner):
            return f"null or {describe_node(inner)}"
        case VectorNode(item=item):
            return f"array of {describe_node(item)}"
        case MapNode(value=value):
            return f"object of {describe_node(value)}"
        case RecordNode(record=record):
            return f"{record.__name__} object"
        case JsonValueNode():
            return "any JSON value"
        case JsonObjectNode():
            return "JSON object"
        case _:
            typing.assert_never(node)


__all__ = [
    "JSON_VALUE_TYPE",
    "BoolNode",
    "EnumNode",
    "FieldSchema",
    "FloatNode",
    "IntNode",
    "JsonObjectNode",
    "JsonValueNode",
    "MapNode",
    "OptionalNode",
    "RecordNode",
    "StrNode",
    "VectorNode",
    "WireNode",
    "WireType",
    "describe_node",
    "node_for_hint",
    "record_schema",
    "record_type",
    "vector_type",
]
