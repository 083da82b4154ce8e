"""``docs/wire.md`` documents every wire name: each record with each of its fields, each enum value,
each persisted name, Step type, RPC name and event type. A new field without documentation fails here."""

from __future__ import annotations

import dataclasses
import re
from enum import StrEnum
from pathlib import Path

import pytest

from dex_agents.pure.values import persistence
from dex_agents.pure.values.session import AgentStatus, MessageRole, ToolCallStatus, ToolEffect
from tests.pure.golden_fixtures import SESSION_EVENT_PAYLOAD_KEYS
from tests.pure.golden_values import GOLDEN_CASES

WIRE_DOC = (Path(__file__).resolve().parents[2] / "docs" / "wire.md").read_text(encoding="utf-8")
RECORDS = sorted({type(case.value) for case in GOLDEN_CASES if dataclasses.is_dataclass(case.value)}, key=lambda r: r.__name__)


def _section_of(record: type[object]) -> str:
    """The doc text from the record's heading (or its first bold/backticked mention) to the next heading."""
    match = re.search(rf"(^###[^\n]*`{record.__name__}`|^`{record.__name__}`)", WIRE_DOC, flags=re.MULTILINE)
    assert match is not None, f"docs/wire.md has no section for {record.__name__}"
    following = re.search(r"^(##|`[A-Z])", WIRE_DOC[match.end() :], flags=re.MULTILINE)
    end = match.end() + following.start() if following is not None else len(WIRE_DOC)
    return WIRE_DOC[match.start() : end]


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.__name__)
def test_every_record_field_is_documented_in_its_section(record: type[object]) -> None:
    assert dataclasses.is_dataclass(record)
    section = _section_of(record)
    inherited = "The fields of `FrameworkMessage`" in section
    for field in dataclasses.fields(record):
        assert f"`{field.name}" in section or inherited, f"{record.__name__}.{field.name} is not documented"


@pytest.mark.parametrize("enum", [AgentStatus, ToolEffect, ToolCallStatus, MessageRole], ids=lambda enum: enum.__name__)
def test_every_enum_value_is_documented(enum: type[StrEnum]) -> None:
    for member in enum:
        assert f'"{member.value}"' in WIRE_DOC


@pytest.mark.parametrize(
    "names",
    [
        persistence.AttributeName,
        persistence.MapName,
        persistence.ChannelName,
        persistence.ChannelMapName,
        persistence.StreamName,
        persistence.StepType,
        persistence.RpcName,
    ],
    ids=lambda names: names.__name__,
)
def test_every_persisted_name_step_type_and_rpc_is_documented(names: type[StrEnum]) -> None:
    for member in names:
        assert f"| `{member.value}` |" in WIRE_DOC, f"{member.value} is missing from a docs/wire.md table"


def test_every_event_type_and_payload_field_is_documented() -> None:
    for event_type, keys in SESSION_EVENT_PAYLOAD_KEYS.items():
        row = next((line for line in WIRE_DOC.splitlines() if line.startswith(f"| `{event_type}` |")), None)
        assert row is not None, f"event {event_type} is missing"
        for key in keys:
            assert f"`{key}:" in row, f"{event_type}.{key} is missing"
