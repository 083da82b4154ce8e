"""Test-only records for the wire codec's error tests: field types no session record uses, a record whose
constructor validates, and records the wire cannot represent."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrsistent.typing import PMap, PVector

from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.session import AgentUsage, ToolCallCompleted, ToolEffect


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """A test-only record covering the field types no session record uses (float, PMap[str, X])."""

    ratio: float
    labels: PMap[str, int]
    effects: PVector[ToolEffect]
    extra: JsonValue = None


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
