"""Encoding errors and schema errors of the wire codec: a value that breaks its own declared type is a
programmer error and raises ``WireEncodeError`` naming the JSON path; a record type the wire cannot
represent is refused with ``TypeError`` naming the field when its schema is first read."""

from __future__ import annotations

import pytest
from pyrsistent import pmap, pvector
from returns.result import Success

from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterruptResolution,
    AgentUsage,
    AgentUserMessage,
    MessageRole,
    ToolEffect,
)
from dex_agents.pure.wire import (
    JSON_VALUE_TYPE,
    WireEncodeError,
    decode,
    encode,
    encode_as,
    record_type,
)
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
    describe_node,
)
from tests.pure.wire_test_records import Measurement, NotARecord, WithDerivedField, WithIntKeys, WithList, WithUnion



def test_encoding_a_wrongly_typed_field_raises_with_the_path() -> None:
    with pytest.raises(WireEncodeError, match=r"cannot encode AgentUsage: at \$\.requests: expected int, got string \"3\""):
        encode(AgentUsage(requests="3"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Measurement(ratio=float("nan"), labels=pmap(), effects=pvector()), r"at \$\.ratio: expected finite number"),
        (Measurement(ratio=1.0, labels=pmap({"a": 2**63}), effects=pvector()), r'at \$\.labels\["a"\]: expected integer \(int64\)'),
        # The type: ignore comments below mark values that break their declared types on purpose.
        (Measurement(ratio=1.0, labels=pmap({1: 1}), effects=pvector()), r"at \$\.labels: expected object keys that are strings"),  # type: ignore[arg-type]
        (Measurement(ratio=1.0, labels=pmap(), effects=[ToolEffect.READ]), r"at \$\.effects: expected PVector, got Python list"),  # type: ignore[arg-type]
        (Measurement(ratio=1.0, labels=pmap(), effects=pvector(["read"])), r"at \$\.effects\[0\]: expected ToolEffect member"),  # type: ignore[list-item]
        (Measurement(ratio=1.0, labels=pmap(), effects=pvector(), extra={"a": 1}), r"at \$\.extra: expected a JsonValue"),  # type: ignore[arg-type]
        (Measurement(ratio=True, labels=pmap(), effects=pvector()), r"at \$\.ratio: expected float, got boolean true"),
    ],
)
def test_encoding_invalid_values_raises_with_the_path(value: Measurement, message: str) -> None:
    with pytest.raises(WireEncodeError, match=message):
        encode(value)


def test_encoding_a_record_in_place_of_another_raises() -> None:
    event_type = record_type(AgentEvent)
    wrong: object = AgentUsage()
    with pytest.raises(WireEncodeError, match=r"at \$: expected AgentEvent instance, got Python AgentUsage"):
        encode_as(wrong, event_type)  # type: ignore[misc]


def test_str_subclasses_encode_as_plain_strings() -> None:
    payload: JsonObject = pmap({"effect": ToolEffect.READ})
    event = AgentEvent(type=ToolEffect.READ, turn_id=None, attempt=1, step_execution_id="s", payload=payload)
    assert encode(event) == '{"attempt":1,"payload":{"effect":"read"},"step_execution_id":"s","turn_id":null,"type":"read"}'
    assert decode(encode(event), AgentEvent) == Success(event)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (WithList, r"WithList\.items: unsupported wire type list\[int\]"),
        (WithUnion, r"WithUnion\.choice: only 'X \| None' unions are supported"),
        (WithIntKeys, r"WithIntKeys\.table: map keys must be str"),
        (NotARecord, r"NotARecord is not a dataclass record"),
    ],
)
def test_unsupported_record_types_are_refused_with_the_field_named(record: type[object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        record_type(record)


def test_encode_refuses_a_non_record() -> None:
    with pytest.raises(TypeError, match="str is not a dataclass record"):
        encode("text")


def test_fields_outside_init_are_refused() -> None:
    with pytest.raises(TypeError, match=r"WithDerivedField\.derived: fields outside __init__ are not supported"):
        record_type(WithDerivedField)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (AgentUserMessage(text=5), r"at \$\.text: expected str, got integer 5"),  # type: ignore[arg-type]
        (AgentInterruptResolution(interrupt_id="i", approved="yes", rejection_message=None), r"at \$\.approved: expected bool"),  # type: ignore[arg-type]
        (Measurement(ratio=1.0, labels={"a": 1}, effects=pvector()), r"at \$\.labels: expected PMap with str keys, got Python dict"),  # type: ignore[arg-type]
        (AgentEvent(type="t", turn_id=None, attempt=1, step_execution_id="s", payload={}), r"at \$\.payload: expected PMap with str keys"),  # type: ignore[arg-type]
    ],
)
def test_encoding_python_values_of_the_wrong_kind_raises(value: object, message: str) -> None:
    with pytest.raises(WireEncodeError, match=message):
        encode(value)


@pytest.mark.parametrize(
    ("node", "description"),
    [
        (StrNode(), "string"),
        (IntNode(), "integer (int64)"),
        (FloatNode(), "number"),
        (BoolNode(), "boolean"),
        (EnumNode(MessageRole), 'MessageRole (one of "user", "assistant", "tool")'),
        (OptionalNode(VectorNode(RecordNode(AgentUsage))), "null or array of AgentUsage object"),
        (MapNode(JsonValueNode()), "object of any JSON value"),
        (JsonObjectNode(), "JSON object"),
    ],
)
def test_node_descriptions(node: WireNode, description: str) -> None:
    assert describe_node(node) == description


def test_a_value_nested_too_deeply_raises_a_clear_encode_error() -> None:
    deep: JsonValue = pvector()
    for _ in range(100_000):
        deep = pvector([deep])
    with pytest.raises(WireEncodeError, match="cannot encode JsonValue: the value is nested too deeply"):
        encode_as(deep, JSON_VALUE_TYPE)
