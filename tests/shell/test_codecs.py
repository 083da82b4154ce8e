"""The session codecs: canonical JSON through Dex values, strict decoding with a clear error, and a
decode memo that returns the value already decoded from the same text."""

from __future__ import annotations

import pytest
from dex import Value, WireKind

from dex_agents.pure.values.session import AgentUsage
from dex_agents.pure.wire import encode, record_type
from dex_agents.shell.codecs import SESSION_CODECS, StoredValueError, WireTextCodec


def test_every_top_level_session_type_has_a_wire_codec() -> None:
    assert SESSION_CODECS[AgentUsage].type_name == "AgentUsage"
    assert all(isinstance(codec, WireTextCodec) for codec in SESSION_CODECS.values())


def test_a_value_round_trips_as_the_spec_json_and_a_second_decode_reuses_the_first() -> None:
    codec = WireTextCodec(record_type(AgentUsage))
    usage = AgentUsage(requests=2, input_tokens=30)
    stored = codec.encode(usage)
    assert stored == Value(WireKind.JSON, encode(usage))
    first = codec.decode(Value(WireKind.JSON, stored.data))
    assert first == usage
    assert codec.decode(Value(WireKind.JSON, str(stored.data))) is first


@pytest.mark.parametrize(
    ("stored", "match"),
    [
        (Value(WireKind.JSON, '{"requests":"two"}'), r"cannot decode AgentUsage: at \$\.requests"),
        (Value(WireKind.JSON, "{not json"), "cannot decode AgentUsage"),
        (Value(WireKind.STRING, "x"), "expected a JSON value"),
    ],
)
def test_a_value_that_cannot_be_decoded_raises_a_stored_value_error_naming_the_type(stored: Value, match: str) -> None:
    with pytest.raises(StoredValueError, match=match):
        WireTextCodec(record_type(AgentUsage)).decode(stored)
