"""Errors of the wire codec: ``WireError`` (a decode failure as data) and ``WireEncodeError`` (a programmer
error: a value that does not match its own declared type).

Both name the place of the fault as a JSON path: ``$`` is the top-level value, ``.name`` a record field,
``[3]`` an array index and ``["key"]`` a key of a free-form object, e.g. ``$.messages[3].role``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import final


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WireError:
    """Why a JSON text is not a valid value of ``type_name``: where, what was expected there, what was found.

    Attributes:
        type_name: The top-level type that was being decoded (e.g. ``AgentSnapshot``).
        path: JSON path of the offending value (``$`` for the whole text).
        expected: What the schema allows there (``integer (int64)``, ``ToolEffect (one of "read", ...)``).
        got: What the text holds there (``string "abc"``, ``missing field``, ``malformed JSON: ...``).
    """

    type_name: str
    path: str
    expected: str
    got: str

    @property
    def message(self) -> str:
        """One line for logs and exceptions."""
        return f"cannot decode {self.type_name}: at {self.path}: expected {self.expected}, got {self.got}"

    def __str__(self) -> str:
        return self.message


@final
class WireEncodeError(ValueError):
    """A value does not match its declared wire type (a programmer error: the types promised otherwise)."""


class WireFault(Exception):
    """Internal: raised at the faulty value and annotated with path segments while it unwinds.

    The public functions catch it and turn it into a ``WireError`` or a ``WireEncodeError``; it never
    leaves the wire modules.
    """

    def __init__(self, expected: str, got: str) -> None:
        super().__init__(expected, got)
        self.expected = expected
        self.got = got
        self._segments: list[str] = []

    def at_field(self, name: str) -> WireFault:
        """Record that the fault lies inside record field ``name``; returns ``self`` for ``raise``."""
        self._segments.append(f".{name}")
        return self

    def at_index(self, index: int) -> WireFault:
        """Record that the fault lies inside array item ``index``."""
        self._segments.append(f"[{index}]")
        return self

    def at_key(self, key: str) -> WireFault:
        """Record that the fault lies inside the value of free-form object key ``key``."""
        self._segments.append(f"[{json.dumps(key, ensure_ascii=True)}]")
        return self

    @property
    def path(self) -> str:
        """The JSON path, outermost segment first."""
        return "$" + "".join(reversed(self._segments))

    def to_error(self, type_name: str) -> WireError:
        """The public decode error for a fault found while decoding ``type_name``."""
        return WireError(type_name=type_name, path=self.path, expected=self.expected, got=self.got)

    def to_encode_error(self, type_name: str) -> WireEncodeError:
        """The exception for a fault found while encoding ``type_name``."""
        return WireEncodeError(f"cannot encode {type_name}: at {self.path}: expected {self.expected}, got {self.got}")


def describe_found(data: object) -> str:
    """A short description of a parsed JSON value (or Python value), for the ``got`` part of an error."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return f"boolean {'true' if data else 'false'}"
    if isinstance(data, int):
        return f"integer {data}" if abs(data) < 10**30 else "an integer with more than 30 digits"
    if isinstance(data, float):
        return f"number {data!r}"
    if isinstance(data, str):
        shown = data if len(data) <= 40 else data[:40] + "..."
        return f"string {json.dumps(shown, ensure_ascii=True)}"
    if isinstance(data, list):
        return f"array of {len(data)} items"
    if isinstance(data, dict):
        return f"object with {len(data)} keys"
    return f"Python {type(data).__name__}"


__all__ = ["WireEncodeError", "WireError", "WireFault", "describe_found"]
