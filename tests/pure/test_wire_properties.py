"""Hypothesis properties of the wire codec over generated values of every record type.

* Round trip: ``decode(encode(v)) == Success(v)`` and the text is canonical and stable.
* A removed field is an error at that field's path (or its default, when the record has one).
* A value of the wrong JSON type in any field is an error at that field's path, naming both sides.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent.typing import PVector
from returns.pipeline import is_successful
from returns.result import Success

from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.session import AgentInterrupt, AgentUserMessage
from dex_agents.pure.wire import (
    JSON_VALUE_TYPE,
    JsonData,
    canonical_json,
    decode,
    decode_as,
    encode,
    encode_as,
    from_json_data,
    to_json_data,
    vector_type,
)
from dex_agents.pure.wire.schema import (
    BoolNode,
    EnumNode,
    FieldSchema,
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
    record_schema,
)
from tests.pure.strategies import WIRE_RECORD_STRATEGIES, json_values, pending_interrupt_lists

RECORDS = sorted(WIRE_RECORD_STRATEGIES, key=lambda record: record.__name__)
RECORD_IDS = [record.__name__ for record in RECORDS]
PROPERTY_SETTINGS = settings(max_examples=25)


@pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_every_record_round_trips_through_canonical_text(record: type[object], data: st.DataObject) -> None:
    value = data.draw(WIRE_RECORD_STRATEGIES[record])
    text = encode(value)
    assert text.isascii()
    assert text == json.dumps(json.loads(text), ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    decoded = decode(text, record)
    assert decoded == Success(value)
    assert decoded.map(encode) == Success(text)


@pytest.mark.parametrize("record", RECORDS, ids=RECORD_IDS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_a_missing_field_is_an_error_at_its_path_unless_it_has_a_default(record: type[object], data: st.DataObject) -> None:
    value = data.draw(WIRE_RECORD_STRATEGIES[record])
    field = data.draw(st.sampled_from(record_schema(record)))
    encoded = json.loads(encode(value))
    del encoded[field.name]
    decoded = decode(json.dumps(encoded), record)
    if field.has_default:
        assert is_successful(decoded)
        assert dataclasses.is_dataclass(record)
        default = next(definition.default for definition in dataclasses.fields(record) if definition.name == field.name)
        assert getattr(decoded.unwrap(), field.name) == default
    else:
        error = decoded.failure()
        assert (error.path, error.got) == (f"$.{field.name}", "nothing (the field is missing)")
        assert error.type_name == record.__name__


def _wrong_json_for(node: WireNode) -> JsonData:
    """A JSON value the node rejects at its own level (``None`` only for nodes that accept everything)."""
    match node:
        case StrNode() | EnumNode() | VectorNode() | MapNode() | RecordNode() | JsonObjectNode():
            return True
        case IntNode():
            return 1.5
        case FloatNode():
            return "1.5"
        case BoolNode():
            return 1
        case OptionalNode(inner=inner):
            return _wrong_json_for(inner)
        case JsonValueNode():
            return None


def _typed_fields(record: type[object]) -> list[FieldSchema]:
    return [field for field in record_schema(record) if _wrong_json_for(field.node) is not None]


@pytest.mark.parametrize("record", [record for record in RECORDS if _typed_fields(record)], ids=lambda record: record.__name__)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_a_wrongly_typed_field_is_an_error_at_its_path(record: type[object], data: st.DataObject) -> None:
    value = data.draw(WIRE_RECORD_STRATEGIES[record])
    field = data.draw(st.sampled_from(_typed_fields(record)))
    encoded = json.loads(encode(value))
    encoded[field.name] = _wrong_json_for(field.node)
    error = decode(json.dumps(encoded), record).failure()
    assert error.path == f"$.{field.name}"
    assert error.expected and error.got
    assert error.message.startswith(f"cannot decode {record.__name__}: at $.{field.name}: expected ")


@PROPERTY_SETTINGS
@given(value=json_values)
def test_json_values_round_trip_and_keep_int_versus_float(value: JsonValue) -> None:
    text = encode_as(value, JSON_VALUE_TYPE)
    decoded = decode_as(text, JSON_VALUE_TYPE)
    assert decoded == Success(value)
    assert decoded.map(lambda again: encode_as(again, JSON_VALUE_TYPE)) == Success(text)
    assert canonical_json(to_json_data(value, JSON_VALUE_TYPE)) == text


@PROPERTY_SETTINGS
@given(value=pending_interrupt_lists)
def test_pending_interrupt_lists_round_trip(value: PVector[AgentInterrupt]) -> None:
    wire_type = vector_type(AgentInterrupt)
    assert decode_as(encode_as(value, wire_type), wire_type) == Success(value)
    assert from_json_data(to_json_data(value, wire_type), wire_type) == Success(value)


@PROPERTY_SETTINGS
@given(text=st.text(max_size=40))
def test_decoding_arbitrary_text_never_raises(text: str) -> None:
    for record in RECORDS:
        result = decode(text, record)
        assert is_successful(result) or result.failure().path.startswith("$")


def test_lone_surrogates_and_control_characters_round_trip_as_ascii_escapes() -> None:
    message = AgentUserMessage(text="\ud800 half a pair, \x00 and \u2028")
    text = encode(message)
    assert text == '{"text":"\\ud800 half a pair, \\u0000 and \\u2028"}'
    assert decode(text, AgentUserMessage) == Success(message)
