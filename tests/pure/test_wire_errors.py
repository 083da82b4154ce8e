"""Named error paths of the wire codec: every kind of bad input gives a ``WireError`` with the JSON path,
what was expected and what was found; bad values and unsupported record types fail loudly on encode."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector
from returns.result import Success

from dex_agents.pure.json_value import JsonObject, JsonValue
from dex_agents.pure.rpc_values import AgentSnapshot, ListAgentMessagesInput
from dex_agents.pure.values import (
    AgentEvent,
    AgentInterruptResolution,
    AgentSessionStartInput,
    AgentUsage,
    AgentUserMessage,
    MessageRole,
    ToolCallCompleted,
    ToolEffect,
)
from dex_agents.pure.wire import (
    INT64_MAX,
    JSON_VALUE_TYPE,
    WireEncodeError,
    WireError,
    decode,
    decode_as,
    encode,
    encode_as,
    from_json_data,
    record_type,
)
from dex_agents.pure.wire_schema import (
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
from tests.pure.golden_values import GOLDEN_DIRECTORY


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """A test-only record covering the field types no session record uses (float, PMap[str, X])."""

    ratio: float
    labels: PMap[str, int]
    effects: PVector[ToolEffect]
    extra: JsonValue = None


def _error(text: str, record: type[object]) -> WireError:
    return decode(text, record).failure()


def _snapshot_text() -> str:
    return (GOLDEN_DIRECTORY / "agent_snapshot.json").read_text("ascii")


@pytest.mark.parametrize(
    ("text", "got"),
    [
        ("", "malformed JSON (Expecting value at line 1 column 1)"),
        ('{"text":"a"', "malformed JSON (Expecting ',' delimiter at line 1 column 12)"),
        ('{"text":"a"} x', "malformed JSON (Extra data at line 1 column 14)"),
        ("{'text':'a'}", "malformed JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        ('{"text":"a\x01"}', "malformed JSON (Invalid control character at at line 1 column 11)"),
    ],
)
def test_malformed_json_is_an_error_at_the_root(text: str, got: str) -> None:
    assert _error(text, AgentUserMessage) == WireError(type_name="AgentUserMessage", path="$", expected="JSON text", got=got)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    error = _error(f'{{"ratio":{constant},"labels":{{}},"effects":[]}}', Measurement)
    assert (error.path, error.got) == ("$", constant)


def test_duplicate_keys_are_refused_rather_than_silently_keeping_one() -> None:
    error = _error('{"text":"keep me","text":"or me"}', AgentUserMessage)
    assert (error.expected, error.got) == ("JSON objects without duplicate keys", 'duplicate key "text"')


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    deep = '{"type":"x","turn_id":null,"attempt":1,"step_execution_id":"s","payload":{"a":' + "[" * 100_000 + "]" * 100_000 + "}}"
    error = _error(deep, AgentEvent)
    assert error.path == "$"


def test_a_top_level_array_where_an_object_belongs() -> None:
    assert _error("[]", AgentUserMessage).message == (
        "cannot decode AgentUserMessage: at $: expected AgentUserMessage object, got array of 0 items"
    )


def test_a_missing_nested_field_names_its_full_path() -> None:
    text = _snapshot_text().replace('"tool_call_id":"call_charge_2",', "", 1)
    error = _error(text, AgentSnapshot)
    assert (error.path, error.expected, error.got) == (
        "$.pending_interrupts[0].tool_call_id",
        "string",
        "nothing (the field is missing)",
    )


def test_an_unknown_field_is_refused_with_the_known_fields_listed() -> None:
    error = _error('{"tool_call_id":"c1","tool_call":"c1"}', ToolCallCompleted)
    assert (error.path, error.expected, error.got) == (
        "$.tool_call",
        "only the fields of ToolCallCompleted (tool_call_id)",
        "an unknown field",
    )
    odd = _error('{"tool_call_id":"c1","a b":1}', ToolCallCompleted)
    assert odd.path == '$["a b"]'


def test_an_unknown_enum_value_lists_the_allowed_values() -> None:
    text = _snapshot_text().replace('"effect":"unclassified"', '"effect":"dangerous"')
    error = _error(text, AgentSnapshot)
    assert error.path == "$.tool_calls[2].effect"
    assert error.expected == 'ToolEffect (one of "read", "idempotent_write", "non_idempotent_write", "unclassified")'
    assert error.got == 'unknown value string "dangerous"'


@pytest.mark.parametrize(
    ("replacement", "got"),
    [
        ('"queued_message_count":true', "boolean true"),
        ('"queued_message_count":1.0', "number 1.0"),
        ('"queued_message_count":"1"', 'string "1"'),
        ('"queued_message_count":null', "null"),
        ('"queued_message_count":9223372036854775808', "integer 9223372036854775808 outside the int64 range"),
    ],
)
def test_an_integer_field_accepts_only_int64_integers(replacement: str, got: str) -> None:
    error = _error(_snapshot_text().replace('"queued_message_count":1', replacement), AgentSnapshot)
    assert (error.path, error.expected, error.got) == ("$.queued_message_count", "integer (int64)", got)


def test_the_int64_bounds_themselves_decode() -> None:
    text = f'{{"before_sequence":{INT64_MAX},"limit":{-INT64_MAX - 1}}}'
    assert decode(text, ListAgentMessagesInput) == Success(ListAgentMessagesInput(before_sequence=INT64_MAX, limit=-INT64_MAX - 1))


def test_a_boolean_field_refuses_zero_and_one() -> None:
    refused = _error('{"interrupt_id":"i","approved":1,"rejection_message":null}', AgentInterruptResolution)
    assert (refused.path, refused.expected, refused.got) == ("$.approved", "boolean", "integer 1")


def test_a_null_in_a_non_nullable_field_is_refused_and_accepted_where_nullable() -> None:
    assert _error('{"text":null}', AgentUserMessage).got == "null"
    assert decode('{"initial_message":null}', AgentSessionStartInput) == Success(AgentSessionStartInput(initial_message=None))


def test_fields_with_a_record_default_may_be_absent() -> None:
    assert decode("{}", AgentSessionStartInput) == Success(AgentSessionStartInput())
    assert decode('{"requests":2}', AgentUsage) == Success(AgentUsage(requests=2))


def test_free_form_payload_errors_name_the_key_path() -> None:
    text = '{"type":"x","turn_id":null,"attempt":1,"step_execution_id":"s","payload":[]}'
    assert _error(text, AgentEvent).path == "$.payload"
    nested_nan = from_json_data({"a b": [1, float("nan")]}, JSON_VALUE_TYPE).failure()
    assert (nested_nan.path, nested_nan.expected) == ('$["a b"][1]', "finite number")


def test_a_float_field_accepts_integers_and_reads_them_as_floats() -> None:
    decoded = decode('{"ratio":2,"labels":{"a":1},"effects":["read"]}', Measurement).unwrap()
    assert decoded == Measurement(ratio=2.0, labels=pmap({"a": 1}), effects=pvector([ToolEffect.READ]))
    assert isinstance(decoded.ratio, float)
    assert encode(decoded) == '{"effects":["read"],"extra":null,"labels":{"a":1},"ratio":2.0}'


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ('{"ratio":true,"labels":{},"effects":[]}', "$.ratio", "number"),
        ('{"ratio":1e400,"labels":{},"effects":[]}', "$.ratio", "finite number"),
        ('{"ratio":1,"labels":{"x":"1"},"effects":[]}', '$.labels["x"]', "integer (int64)"),
        ('{"ratio":1,"labels":{},"effects":["read",7]}', "$.effects[1]", 'ToolEffect (one of "read", "idempotent_write", "non_idempotent_write", "unclassified")'),
    ],
)
def test_test_record_field_errors(text: str, path: str, expected: str) -> None:
    error = _error(text, Measurement)
    assert (error.path, error.expected) == (path, expected)


def test_a_huge_integer_in_a_float_field_is_an_error() -> None:
    error = from_json_data({"ratio": 10**400, "labels": {}, "effects": []}, record_type(Measurement)).failure()
    assert (error.path, error.expected) == ("$.ratio", "number")


def test_data_of_a_python_type_json_never_produces_is_refused() -> None:
    error = from_json_data({"text": b"bytes"}, record_type(AgentUserMessage)).failure()
    assert (error.path, error.got) == ("$.text", "Python bytes")
    assert from_json_data((1, 2), JSON_VALUE_TYPE).failure().got == "Python tuple"


# Encoding: a value that breaks its own declared type is a programmer error and raises, naming the path.


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


# Unsupported record types are refused when their schema is read, naming the field.


@dataclass(frozen=True)
class WithList:
    items: list[int]


@dataclass(frozen=True)
class WithUnion:
    choice: AgentUsage | ToolCallCompleted


@dataclass(frozen=True)
class WithIntKeys:
    table: PMap[int, str]


class NotARecord:
    pass


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


def test_decoding_json_values_keeps_integers_and_floats_apart() -> None:
    assert decode_as("[1,1.0,-0.0,1e2]", JSON_VALUE_TYPE) == Success(pvector([1, 1.0, -0.0, 100.0]))
    numbers: JsonValue = pvector([1, 1.0, 100.0])
    assert encode_as(numbers, JSON_VALUE_TYPE) == "[1,1.0,100.0]"


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentage:
    """A test-only record whose constructor validates its value."""

    value: int

    def __post_init__(self) -> None:
        if not 0 <= self.value <= 100:
            raise ValueError(f"percentage out of range: {self.value}")


@dataclass(frozen=True)
class WithDerivedField:
    base: int
    derived: int = field(init=False, default=0)


def test_a_value_the_record_constructor_refuses_is_an_error_at_that_record() -> None:
    error = _error('{"value":140}', Percentage)
    assert (error.path, error.expected, error.got) == (
        "$",
        "a valid Percentage",
        "a value its constructor refused: percentage out of range: 140",
    )


def test_fields_outside_init_are_refused() -> None:
    with pytest.raises(TypeError, match=r"WithDerivedField\.derived: fields outside __init__ are not supported"):
        record_type(WithDerivedField)


def test_deeply_nested_python_data_is_an_error_not_a_crash() -> None:
    deep: object = []
    for _ in range(100_000):
        deep = [deep]
    assert from_json_data(deep, JSON_VALUE_TYPE).failure().expected == "JSON nested less deeply"


def test_non_string_keys_in_python_data_are_refused() -> None:
    error = from_json_data({1: "a"}, JSON_VALUE_TYPE).failure()
    assert (error.path, error.expected, error.got) == ("$", "object keys that are strings", "key integer 1")


def test_a_wire_error_prints_as_its_message() -> None:
    error = _error('{"text":{"a":1}}', AgentUserMessage)
    assert str(error) == error.message == "cannot decode AgentUserMessage: at $.text: expected string, got object with 1 keys"


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
