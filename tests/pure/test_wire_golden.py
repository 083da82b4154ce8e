"""Golden files: the wire format pinned byte for byte (``docs/wire.md`` describes it).

For every file under ``tests/pure/golden/``: encoding the constructed value gives the file's bytes,
decoding the file gives the constructed value, and re-encoding the decoded value gives the bytes again.
The Dex SDK's ``JsonCodec`` built from ``to_json_data``/``from_json_data`` stores the same bytes, so the
shell's codecs and this module cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TypeVar
from types import ModuleType

import pytest
from dex import CodecRegistry, Value, WireKind
from returns.pipeline import is_successful
from returns.result import Success

from dex_agents.pure.values import rpc as rpc_values
from dex_agents.pure.values import runner as runner_values
from dex_agents.pure.values import session as values
from dex_agents.pure.values import time_travel as time_travel_values
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.persistence import TURN_MODEL_CALL_COUNT
from dex_agents.pure.values.session import AgentEvent
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.wire import canonical_json, decode, record_type
from dex_agents.shell.codecs import WireTextCodec, session_codec_registry
from tests.pure.golden_fixtures import EVENTS, SESSION_EVENT_PAYLOAD_KEYS
from tests.pure.golden_values import GOLDEN_CASES, GOLDEN_DIRECTORY, GoldenCase

T = TypeVar("T")

CASE_IDS = [case.stem for case in GOLDEN_CASES]



def _golden_text(case: GoldenCase) -> str:
    return case.path.read_bytes().decode("ascii")


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=CASE_IDS)
def test_encoding_the_value_gives_the_golden_bytes(case: GoldenCase) -> None:
    assert case.path.read_bytes() == case.encode().encode("ascii")


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=CASE_IDS)
def test_decoding_the_golden_file_gives_the_value_and_reencodes_byte_for_byte(case: GoldenCase) -> None:
    decoded = case.decode(_golden_text(case))
    assert decoded == Success(case.value)
    assert decoded.map(lambda _: case.encode()) == Success(_golden_text(case))


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=CASE_IDS)
def test_golden_text_is_canonical_json(case: GoldenCase) -> None:
    text = _golden_text(case)
    assert text == json.dumps(json.loads(text), ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    assert text.isascii() and not text.endswith("\n")


def test_every_golden_file_has_a_case() -> None:
    on_disk = sorted(path.name for path in GOLDEN_DIRECTORY.glob("*.json"))
    assert on_disk == sorted(case.path.name for case in GOLDEN_CASES)


def _records_of(module: ModuleType) -> set[type[object]]:
    return {
        member
        for member in vars(module).values()
        if isinstance(member, type) and dataclasses.is_dataclass(member) and member.__module__ == module.__name__
    }


def test_every_wire_record_has_a_golden_file() -> None:
    records = (_records_of(values) | _records_of(rpc_values) | _records_of(runner_values)
               | _records_of(time_travel_values))
    covered = {type(case.value) for case in GOLDEN_CASES}
    assert records - covered == set()


def test_every_session_event_type_has_a_golden_event_with_exactly_its_payload_keys() -> None:
    for event_type, keys in SESSION_EVENT_PAYLOAD_KEYS.items():
        event = EVENTS[event_type]
        assert event.type == event_type
        assert set(event.payload.keys()) == keys


def test_event_payload_objects_decode_as_json_values() -> None:
    usage_event = decode((GOLDEN_DIRECTORY / "agent_event.usage_recorded.json").read_text("ascii"), AgentEvent).unwrap()
    recorded: JsonValue = usage_event.payload["recorded"]
    assert recorded == EVENTS["usage_recorded"].payload["recorded"]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=CASE_IDS)
def test_a_dex_json_codec_built_from_the_wire_module_stores_the_golden_bytes(case: GoldenCase) -> None:
    stored, decoded = case.through_dex_codec()
    assert stored == Value(WireKind.JSON, _golden_text(case))
    assert decoded == case.value


def test_canonical_json_escapes_non_ascii_like_the_dex_sdk() -> None:
    assert canonical_json({"b": "é😀", "a": [1, None, True]}) == '{"a":[1,null,true],"b":"\\u00e9\\ud83d\\ude00"}'


def test_decoding_golden_text_as_another_record_fails() -> None:
    text = (GOLDEN_DIRECTORY / "agent_state.json").read_text("ascii")
    assert not is_successful(decode(text, AgentEvent))


def test_a_dex_codec_over_the_wire_text_stores_golden_bytes_and_keeps_every_decoding_rule() -> None:
    registry = CodecRegistry({AgentSnapshot: WireTextCodec(record_type(AgentSnapshot))})
    codec = registry.resolve(AgentSnapshot)
    text = (GOLDEN_DIRECTORY / "agent_snapshot.json").read_text("ascii")
    snapshot = decode(text, AgentSnapshot).unwrap()
    assert codec.encode(snapshot) == Value(WireKind.JSON, text)
    assert codec.decode(Value(WireKind.JSON, text)) == snapshot
    with pytest.raises(ValueError, match='duplicate key "queued_message_count"'):
        codec.decode(Value(WireKind.JSON, text[:-1] + ',"queued_message_count":2}'))


def test_the_turn_model_call_count_attribute_is_a_dex_int64_not_json() -> None:
    """``TurnModelCallCount`` (our addition, docs/wire.md section 5) holds a plain int: Dex's built-in
    INT64 codec stores it, so it has no JSON golden file; this pins its stored Value instead."""
    assert TURN_MODEL_CALL_COUNT.value_type is int
    codec = session_codec_registry().resolve(int)
    assert codec.encode(3) == Value(WireKind.INT64, 3)
    assert codec.decode(Value(WireKind.INT64, 3)) == 3
