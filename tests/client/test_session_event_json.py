"""Issue 29, finding 7: a session event is handed out JSON-ready. ``SessionEvent.payload`` is plain
(``dict``/``list``) data and ``SessionEvent.to_json()`` is the whole event as ``json`` writes it; the
core's ``AgentEvent`` stays immutable."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import cast

from pyrsistent import freeze

from dex_agents.client import SessionEvent
from dex_agents.pure.values.session import AgentEvent
from dex_agents.pure.wire.json_value import JsonObject


def _event() -> SessionEvent:
    payload = cast(JsonObject, freeze({"tool_call_id": "call-1", "arguments": {"order": 42, "tags": ["a", "b"]}, "ok": True}))
    return SessionEvent(event=AgentEvent(type="tool_call_deferred", turn_id="turn-1", attempt=2,
                                         step_execution_id="seid-7", payload=payload),
                        cursor="17", created_at=datetime(2026, 5, 1, 12, 0, 3, tzinfo=UTC))


def test_the_payload_is_plain_json_data_and_the_core_value_stays_immutable() -> None:
    event = _event()
    payload = event.payload
    assert payload == {"tool_call_id": "call-1", "arguments": {"order": 42, "tags": ["a", "b"]}, "ok": True}
    assert type(payload) is dict and type(payload["arguments"]) is dict and type(payload["arguments"]["tags"]) is list
    assert json.loads(json.dumps(payload)) == payload
    payload["ok"] = False  # a copy: the stored event does not change
    assert event.event.payload["ok"] is True and event.payload["ok"] is True


def test_to_json_is_the_whole_event_as_json_writes_it() -> None:
    document = _event().to_json()
    assert json.loads(json.dumps(document)) == document == {
        "cursor": "17", "type": "tool_call_deferred", "turn_id": "turn-1", "attempt": 2,
        "step_execution_id": "seid-7", "created_at": "2026-05-01T12:00:03+00:00",
        "payload": {"tool_call_id": "call-1", "arguments": {"order": 42, "tags": ["a", "b"]}, "ok": True}}
