"""Named decode error paths of the wire codec: every kind of bad input gives a ``WireError`` with the JSON
path, what was expected and what was found, and never an exception."""

from __future__ import annotations

import pytest
from pyrsistent import pmap, pvector
from returns.result import Success

from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.rpc import AgentSnapshot, ListAgentMessagesInput
from dex_agents.pure.values.session import (
    AgentEvent,
    AgentInterruptResolution,
    AgentSessionStartInput,
    AgentUsage,
    AgentUserMessage,
    ToolCallCompleted,
    ToolEffect,
)
from dex_agents.pure.wire import (
    INT64_MAX,
    JSON_VALUE_TYPE,
    WireError,
    decode,
    decode_as,
    encode,
    encode_as,
    from_json_data,
    record_type,
)
from tests.pure.golden_values import GOLDEN_DIRECTORY
from tests.pure.wire_test_records import Measurement, Percentage


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


def test_decoding_json_values_keeps_integers_and_floats_apart() -> None:
    assert decode_as("[1,1.0,-0.0,1e2]", JSON_VALUE_TYPE) == Success(pvector([1, 1.0, -0.0, 100.0]))
    numbers: JsonValue = pvector([1, 1.0, 100.0])
    assert encode_as(numbers, JSON_VALUE_TYPE) == "[1,1.0,100.0]"


def test_a_value_the_record_constructor_refuses_is_an_error_at_that_record() -> None:
    error = _error('{"value":140}', Percentage)
    assert (error.path, error.expected, error.got) == (
        "$",
        "a valid Percentage",
        "a value its constructor refused: percentage out of range: 140",
    )


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
