"""A typed JSON value, for event payloads and anything else that is free-form JSON on the wire.

Invariant: a ``JsonValue`` is immutable all the way down (``PVector`` for arrays, ``PMap`` with
``str`` keys for objects), so it can sit inside frozen records and be compared and hashed.
"""

from __future__ import annotations

from typing import TypeAlias

from pyrsistent.typing import PMap, PVector

JsonValue: TypeAlias = "None | bool | int | float | str | PVector[JsonValue] | PMap[str, JsonValue]"
"""Any JSON value; arrays are ``PVector`` and objects are ``PMap`` keyed by ``str``."""

JsonObject: TypeAlias = "PMap[str, JsonValue]"
"""A JSON object."""

__all__ = ["JsonObject", "JsonValue"]
