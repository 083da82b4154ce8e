"""Decoding: JSON text (or data already parsed by the Dex SDK) back to the exact value type.

Decoding is total: any text gives ``Success(value)`` or ``Failure(WireError)`` naming the JSON path, what
the schema expected there and what the text held. Nothing is coerced silently, except that an integer is
accepted where a float is declared. Rejected: malformed JSON, ``NaN``/``Infinity``, duplicate object keys,
a missing required field, an unknown field, a wrong JSON type, an unknown enum value, ``true`` where an
integer is required (and ``1`` where a boolean is), ``1.0`` or an out-of-int64 number where an integer is
required. A field the record gives a default may be absent and then takes that default.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Protocol, TypeVar, assert_never, cast

from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector
from returns.result import Failure, Result, Success

from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.wire.encoder import INT64_MAX, INT64_MIN
from dex_agents.pure.wire.errors import WireError, WireFault, describe_found
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
    describe_node,
    record_schema,
    record_type,
)

T = TypeVar("T")


class _RecordConstructor(Protocol):
    """A record class seen as what it is: a callable taking every field as a keyword."""

    def __call__(self, **fields: object) -> object: ...


def decode(text: str, record: type[T]) -> Result[T, WireError]:
    """Decode the JSON text of one ``record`` value.

    Raises:
        TypeError: ``record`` is not a supported record class (a programmer error, not bad input).
    """
    return decode_as(text, record_type(record))


def decode_as(text: str, wire_type: WireType[T]) -> Result[T, WireError]:
    """Decode JSON text as ``wire_type``."""
    try:
        data = json.loads(text, object_pairs_hook=_object_without_duplicates, parse_constant=_reject_constant)
    except WireFault as fault:
        return Failure(fault.to_error(wire_type.name))
    except json.JSONDecodeError as error:
        got = f"malformed JSON ({error.msg} at line {error.lineno} column {error.colno})"
        return Failure(WireError(type_name=wire_type.name, path="$", expected="JSON text", got=got))
    except (RecursionError, ValueError) as error:
        got = f"unreadable JSON ({type(error).__name__}: {error})"
        return Failure(WireError(type_name=wire_type.name, path="$", expected="JSON text", got=got))
    return from_json_data(data, wire_type)


def from_json_data(data: object, wire_type: WireType[T]) -> Result[T, WireError]:
    """Decode plain JSON data (as ``json.loads`` returns it, e.g. inside a Dex ``JsonCodec`` decoder)."""
    try:
        decoded = _decode_node(data, wire_type.node)
    except WireFault as fault:
        return Failure(fault.to_error(wire_type.name))
    except RecursionError:
        error = WireError(type_name=wire_type.name, path="$", expected="JSON nested less deeply", got="too deep")
        return Failure(error)
    # The value was built by walking wire_type's own schema, which is what WireType[T] promises to be a T.
    return Success(cast(T, decoded))


def _decode_node(data: object, node: WireNode) -> object:
    match node:
        case StrNode():
            if isinstance(data, str):
                return data
        case IntNode():
            if isinstance(data, int) and not isinstance(data, bool):
                if INT64_MIN <= data <= INT64_MAX:
                    return data
                raise WireFault(describe_node(node), f"{describe_found(data)} outside the int64 range")
        case FloatNode():
            if isinstance(data, (int, float)) and not isinstance(data, bool):
                return _finite_float(data)
        case BoolNode():
            if isinstance(data, bool):
                return data
        case EnumNode(enum=enum):
            if isinstance(data, str):
                try:
                    return enum(data)
                except ValueError:
                    raise WireFault(describe_node(node), f"unknown value {describe_found(data)}") from None
        case OptionalNode(inner=inner):
            return None if data is None else _decode_node(data, inner)
        case VectorNode(item=item):
            if isinstance(data, list):
                return _decode_items(data, lambda element: _decode_node(element, item))
        case MapNode(value=value_node):
            if isinstance(data, dict):
                return _decode_entries(data, lambda entry: _decode_node(entry, value_node))
        case RecordNode(record=record):
            if isinstance(data, dict):
                return _decode_record(data, record)
        case JsonValueNode():
            return _decode_json_value(data)
        case JsonObjectNode():
            if isinstance(data, dict):
                return _decode_entries(data, _decode_json_value)
        case _:
            assert_never(node)
    raise WireFault(describe_node(node), describe_found(data))


def _decode_record(data: dict[object, object], record: type[object]) -> object:
    schema = record_schema(record)
    known = {field.name for field in schema}
    for key in data:
        if key not in known:
            fields = ", ".join(sorted(known))
            fault = WireFault(f"only the fields of {record.__name__} ({fields})", "an unknown field")
            raise fault.at_field(key) if isinstance(key, str) and key.isidentifier() else fault.at_key(str(key))
    arguments: dict[str, object] = {}
    for field in schema:
        if field.name not in data:
            if field.has_default:
                continue
            raise WireFault(describe_node(field.node), "nothing (the field is missing)").at_field(field.name)
        try:
            arguments[field.name] = _decode_node(data[field.name], field.node)
        except WireFault as fault:
            raise fault.at_field(field.name) from None
    # A dataclass record's __init__ takes its fields as keywords; record_schema checked it is a dataclass.
    constructor = cast(_RecordConstructor, record)
    try:
        return constructor(**arguments)
    except (TypeError, ValueError) as error:
        raise WireFault(f"a valid {record.__name__}", f"a value its constructor refused: {error}") from None


def _decode_items(data: list[object], decode_item: Callable[[object], T]) -> PVector[T]:
    items: list[T] = []
    for index, element in enumerate(data):
        try:
            items.append(decode_item(element))
        except WireFault as fault:
            raise fault.at_index(index) from None
    return pvector(items)


def _decode_entries(data: dict[object, object], decode_entry: Callable[[object], T]) -> PMap[str, T]:
    entries: dict[str, T] = {}
    for key, entry in data.items():
        if not isinstance(key, str):
            raise WireFault("object keys that are strings", f"key {describe_found(key)}")
        try:
            entries[key] = decode_entry(entry)
        except WireFault as fault:
            raise fault.at_key(key) from None
    return pmap(entries)


def _decode_json_value(data: object) -> JsonValue:
    if data is None or isinstance(data, (bool, int, str)):
        return data
    if isinstance(data, float):
        return _finite_float(data)
    if isinstance(data, list):
        return _decode_items(data, _decode_json_value)
    if isinstance(data, dict):
        return _decode_entries(data, _decode_json_value)
    raise WireFault("any JSON value", describe_found(data))


def _finite_float(data: int | float) -> float:
    try:
        value = float(data)
    except OverflowError:
        raise WireFault("number", f"{describe_found(data)} too large for a float") from None
    if not math.isfinite(value):
        raise WireFault("finite number", describe_found(data))
    return value


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise WireFault("JSON objects without duplicate keys", f"duplicate key {json.dumps(key)}")
        result[key] = value
    return result


def _reject_constant(name: str) -> object:
    raise WireFault("JSON text (NaN and Infinity are not JSON)", name)


__all__ = ["decode", "decode_as", "from_json_data"]
