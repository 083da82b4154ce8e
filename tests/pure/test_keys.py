"""Keys and ids: exact formats, ordering, edges, and clear errors for invalid input."""

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dex_agents.pure.machine import keys
from dex_agents.pure.machine.keys import (
    MAX_MESSAGE_SEQUENCE,
    MIN_MESSAGE_SEQUENCE,
    idempotency_key,
    interrupt_id_for,
    message_sequence_key,
    turn_id_for,
    turn_number_of,
)

sequences = st.integers(min_value=MIN_MESSAGE_SEQUENCE, max_value=MAX_MESSAGE_SEQUENCE)
segments = st.text(min_size=1).filter(lambda s: "/" not in s)


@pytest.mark.parametrize(
    ("sequence", "key"),
    [
        (1, "000000000001"),
        (42, "000000000042"),
        (1_000, "000000001000"),
        (123_456_789_012, "123456789012"),
        (MAX_MESSAGE_SEQUENCE, "999999999999"),
    ],
)
def test_message_sequence_key_is_twelve_digits_zero_padded(sequence: int, key: str) -> None:
    assert message_sequence_key(sequence) == key


@pytest.mark.parametrize("sequence", [0, -1, MAX_MESSAGE_SEQUENCE + 1, 10**20])
def test_message_sequence_key_rejects_out_of_range(sequence: int) -> None:
    with pytest.raises(ValueError, match="message sequence must be in 1..999999999999"):
        message_sequence_key(sequence)


def test_message_sequence_key_rejects_bool() -> None:
    with pytest.raises(ValueError, match="sequence must be an int"):
        message_sequence_key(True)


@given(sequences, sequences)
def test_message_sequence_keys_sort_like_sequences(a: int, b: int) -> None:
    key_a, key_b = message_sequence_key(a), message_sequence_key(b)
    assert len(key_a) == 12 and key_a.isdigit()
    assert (key_a < key_b) == (a < b)
    assert int(key_a) == a


@pytest.mark.parametrize(("number", "turn_id"), [(1, "turn-1"), (2, "turn-2"), (10, "turn-10"), (12345, "turn-12345")])
def test_turn_id_for(number: int, turn_id: str) -> None:
    assert turn_id_for(number) == turn_id


@pytest.mark.parametrize("number", [0, -3])
def test_turn_id_for_rejects_non_positive(number: int) -> None:
    with pytest.raises(ValueError, match="turn number must be >= 1"):
        turn_id_for(number)


@given(st.integers(min_value=1, max_value=10**12))
def test_turn_number_of_inverts_turn_id_for(number: int) -> None:
    assert turn_number_of(turn_id_for(number)) == number


@pytest.mark.parametrize("turn_id", ["turn-0", "turn-", "turn-x", "3", "turn--1", "turn-\u0663", "Turn-3"])
def test_turn_number_of_rejects_what_is_not_a_turn_id(turn_id: str) -> None:
    with pytest.raises(ValueError, match="a turn ID is turn-<n>"):
        turn_number_of(turn_id)


def test_turn_id_for_rejects_bool() -> None:
    with pytest.raises(ValueError, match="turn_number must be an int"):
        turn_id_for(True)


def test_idempotency_key_format() -> None:
    assert idempotency_key("session-42", "turn-1", "call_a") == "session-42/turn-1/call_a"


def test_idempotency_key_is_scoped_to_the_turn() -> None:
    assert idempotency_key("f", "turn-1", "c") != idempotency_key("f", "turn-2", "c")


@pytest.mark.parametrize(
    ("flow_id", "turn_id", "tool_call_id", "message"),
    [
        ("", "turn-1", "c", "flow_id must be a non-empty string"),
        ("f", "", "c", "turn_id must be a non-empty string"),
        ("f", "turn-1", "", "tool_call_id must be a non-empty string"),
        ("f", "turn/1", "c", "turn_id must not contain '/'"),
        ("f", "turn-1", "a/b", "tool_call_id must not contain '/'"),
    ],
)
def test_idempotency_key_rejects_ambiguous_parts(flow_id: str, turn_id: str, tool_call_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        idempotency_key(flow_id, turn_id, tool_call_id)


@given(st.text(min_size=1), segments, segments)
def test_idempotency_key_splits_back_into_its_parts(flow_id: str, turn_id: str, tool_call_id: str) -> None:
    # The flow id may contain "/", the other two never do, so the last two segments are unambiguous.
    head, turn, call = idempotency_key(flow_id, turn_id, tool_call_id).rsplit("/", 2)
    assert (head, turn, call) == (flow_id, turn_id, tool_call_id)


def test_interrupt_id_format() -> None:
    assert interrupt_id_for("turn-2", "call_a") == "turn-2:call_a"


@pytest.mark.parametrize(
    ("turn_id", "tool_call_id", "message"),
    [
        ("", "c", "turn_id must be a non-empty string"),
        ("turn-1", "", "tool_call_id must be a non-empty string"),
        ("turn/1", "c", "turn_id must not contain '/'"),
        ("turn-1", "x/y", "tool_call_id must not contain '/'"),
    ],
)
def test_interrupt_id_rejects_invalid_parts(turn_id: str, tool_call_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        interrupt_id_for(turn_id, tool_call_id)


@given(segments, segments)
def test_interrupt_id_is_a_channel_map_key(turn_id: str, tool_call_id: str) -> None:
    interrupt_id = interrupt_id_for(turn_id, tool_call_id)
    assert "/" not in interrupt_id
    assert interrupt_id.startswith(f"{turn_id}:") and interrupt_id.endswith(tool_call_id)


def test_docstring_examples() -> None:
    results = doctest.testmod(keys)
    assert results.attempted > 0
    assert results.failed == 0
