"""The wire codec: the one source of truth for the JSON of every value record (see ``docs/wire.md``).

* ``encode(record)`` / ``encode_as(value, wire_type)`` give canonical JSON text: compact
  (``,`` and ``:``), keys sorted, ASCII only (``ensure_ascii``), snake_case field names, every field
  written. It equals what Dex's ``JsonCodec`` stores for ``to_json_data(value, wire_type)``.
* ``decode(text, Record)`` / ``decode_as(text, wire_type)`` give ``Result[T, WireError]``; a
  ``WireError`` names the JSON path, what was expected and what was found.
* ``to_json_data`` / ``from_json_data`` are the two halves a Dex ``JsonCodec`` needs (the SDK parses and
  prints the text itself), so the shell registers one codec per top-level type built from these.

Invariants (tested with golden files and Hypothesis): ``decode(encode(v), type(v)) == Success(v)`` for
every valid value; ``encode(decode(t).unwrap()) == t`` for every canonical text ``t``.
"""

from __future__ import annotations

from dex_agents.pure.wire.decoder import decode, decode_as, from_json_data
from dex_agents.pure.wire.encoder import INT64_MAX, INT64_MIN, JsonData, canonical_json, encode, encode_as, to_json_data
from dex_agents.pure.wire.errors import WireEncodeError, WireError
from dex_agents.pure.wire.schema import JSON_VALUE_TYPE, WireType, record_type, vector_type

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "JSON_VALUE_TYPE",
    "JsonData",
    "WireEncodeError",
    "WireError",
    "WireType",
    "canonical_json",
    "decode",
    "decode_as",
    "encode",
    "encode_as",
    "from_json_data",
    "record_type",
    "to_json_data",
    "vector_type",
]
