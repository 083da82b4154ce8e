"""Encoding: a value record (or another wire type) to plain JSON data and to canonical JSON text.

Canonical text is ``json.dumps(data, ensure_ascii=True, separators=(",", ":"), sort_keys=True,
allow_nan=False)``: compact, keys sorted by code point, every non-ASCII character escaped as ``\\uXXXX``
(lower-case hex, surrogate pairs above U+FFFF). That is byte for byte what the Dex SDK's ``JsonCodec``
writes for the same data, so the text a Step stores equals ``encode(value)``. Every record field is
always written, ``None`` as ``null``; enums as their value; ``PVector`` as an array; ``PMap`` as an object.
"""

from __future__ import annotations

import json
import math
from typing import TypeAlias, TypeVar, assert_never

import pyrsistent

from dex_agents.pure.wire.errors import WireEncodeError, WireFault, describe_found
from dex_agents.pure.wire.schema import (
    BoolNode,
    EnumNode,
    FloatNode,
    IntNode,
    JsonObjectNode,
    JsonValueNode,
    MapNode,
    OptionalNode,
    RecordNode,
    StrNode,
    VectorNode,
    WireNode,
    WireType,
    record_schema,
    record_type,
)

T = TypeVar("T")

JsonData: TypeAlias = "None | bool | int | float | str | list[JsonData] | dict[str, JsonData]"
"""Plain JSON data as ``json`` reads and writes it (``list`` for arrays, ``dict`` for objects)."""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def canonical_json(data: JsonData) -> str:
    """The canonical JSON text of plain data (see the module docstring). Raises ``ValueError`` for NaN/inf."""
    return json.dumps(data, ensure_ascii=True, separators=(",", ":"), sort_keys=True, allow_nan=False)


def encode(value: object) -> str:
    """The canonical JSON text of one value record.

    Raises:
        TypeError: ``value`` is not an instance of a supported record class.
        WireEncodeError: a field holds a value its declared type does not allow (a programmer error).
    """
    return encode_as(value, record_type(type(value)))


def encode_as(value: T, wire_type: WireType[T]) -> str:
    """The canonical JSON text of ``value`` as ``wire_type`` (for non-record top-level types)."""
    return canonical_json(to_json_data(value, wire_type))


def to_json_data(value: T, wire_type: WireType[T]) -> JsonData:
    """Plain JSON data of ``value``: what a Dex ``JsonCodec`` encoder returns.

    Raises:
        WireEncodeError: ``value`` does not match ``wire_type`` (wrong type, int outside int64,
            non-finite float, non-``str`` map key), with the JSON path of the offending value, or it is
            nested too deeply to encode.
    """
    try:
        return _encode_node(value, wire_type.node)
    except WireFault as fault:
        raise fault.to_encode_error(wire_type.name) from None
    except RecursionError:
        raise WireEncodeError(f"cannot encode {wire_type.name}: the value is nested too deeply") from None


def _encode_node(value: object, node: WireNode) -> JsonData:
    match node:
        case StrNode():
            if isinstance(value, str):
                return str.__str__(value)
        case IntNode():
            if isinstance(value, int) and not isinstance(value, bool):
                return _int64(value)
        case FloatNode():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return _finite(float(value))
        case BoolNode():
            if isinstance(value, bool):
                return value
        case EnumNode(enum=enum):
            if isinstance(value, enum):
                return str.__str__(value.value)
        case OptionalNode(inner=inner):
            return None if value is None else _encode_node(value, inner)
        case VectorNode(item=item):
            if isinstance(value, pyrsistent.PVector):
                return _encode_items(value, item)
        case MapNode(value=value_node):
            if isinstance(value, pyrsistent.PMap):
                return _encode_entries(value, value_node)
        case RecordNode(record=record):
            if type(value) is record:
                return _encode_record(value, record)
        case JsonValueNode():
            return _encode_json_value(value)
        case JsonObjectNode():
            if isinstance(value, pyrsistent.PMap):
                return _encode_entries(value, JsonValueNode())
        case _:
            assert_never(node)
    raise WireFault(_python_expectation(node), _describe_value(value))


def _describe_value(value: object) -> str:
    """Like ``describe_found``, but a plain ``list``/``dict`` is a Python value here, not JSON."""
    return f"Python {type(value).__name__}" if isinstance(value, (list, dict)) else describe_found(value)


def _encode_record(value: object, record: type[object]) -> JsonData:
    encoded: dict[str, JsonData] = {}
    for field in record_schema(record):
        try:
            encoded[field.name] = _encode_node(getattr(value, field.name), field.node)
        except WireFault as fault:
            raise fault.at_field(field.name) from None
    return encoded


def _encode_items(items: pyrsistent.PVector[object], item: WireNode) -> JsonData:
    encoded: list[JsonData] = []
    for index, element in enumerate(items):
        try:
            encoded.append(_encode_node(element, item))
        except WireFault as fault:
            raise fault.at_index(index) from None
    return encoded


def _encode_entries(entries: pyrsistent.PMap[object, object], value_node: WireNode) -> JsonData:
    encoded: dict[str, JsonData] = {}
    for key, entry in entries.items():
        if not isinstance(key, str):
            raise WireFault("object keys that are strings", f"key {describe_found(key)}")
        try:
            encoded[str.__str__(key)] = _encode_node(entry, value_node)
        except WireFault as fault:
            raise fault.at_key(key) from None
    return encoded


def _encode_json_value(value: object) -> JsonData:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, pyrsistent.PVector):
        return _encode_items(value, JsonValueNode())
    if isinstance(value, pyrsistent.PMap):
        return _encode_entries(value, JsonValueNode())
    raise WireFault("a JsonValue (None, bool, int, float, str, PVector or PMap)", _describe_value(value))


def _int64(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise WireFault("integer (int64)", f"{describe_found(value)} outside the int64 range")
    return int(value)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise WireFault("finite number", f"number {value!r}")
    return value


def _python_expectation(node: WireNode) -> str:
    match node:
        case VectorNode():
            return "PVector"
        case MapNode() | JsonObjectNode():
            return "PMap with str keys"
        case RecordNode(record=record):
            return f"{record.__name__} instance"
        case EnumNode(enum=enum):
            return f"{enum.__name__} member"
        case StrNode():
            return "str"
        case IntNode():
            return "int"
        case FloatNode():
            return "float"
        case BoolNode():
            return "bool"
        case OptionalNode() | JsonValueNode():
            return "a JSON-encodable value"
        case _:
            assert_never(node)


__all__ = ["INT64_MAX", "INT64_MIN", "JsonData", "canonical_json", "encode", "encode_as", "to_json_data"]

