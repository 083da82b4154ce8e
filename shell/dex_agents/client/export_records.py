"""The colourless half of a session export: Dex values as JSON, Dex's history records as the
export's types, and the document assembled from what ``export.py`` (or ``async_export.py``) read.

Invariants:
    * Each Dex value becomes the JSON it holds: a JSON object value its parsed text, a STRING its
      string, an INT64 its integer; a deleted Attribute's write is ``null``. Map instance keys are
      unquoted (``AgentToolCalls/call%3A1`` is instance ``call:1``).
    * ``queued_messages`` (and the snapshot's count) are the Channel's pending messages plus those a
      Step's wait consumed whose ``execute`` has not committed (the caller passes both, those in
      flight first).
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Final
from urllib.parse import unquote

from dex import FlowInfo
from dex.dexpb import dex_pb2 as pb
from pyrsistent import PMap, pvector
from returns.pipeline import is_successful

from dex_agents.client.values import EventPage
from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.offline.export_document import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportDocument,
    ExportedEvent,
    ExportedInput,
    ExportedSession,
    HistoryStep,
    Reconstruction,
    StepFailure,
    StoredValue,
)
from dex_agents.pure.offline.input_wire import input_to_data
from dex_agents.pure.machine.invocation_record import INVOCATION_RECORD_EVENT, InvocationRecord
from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.values.persistence import ChannelName
from dex_agents.pure.offline.reconstruct import reconstruct_inputs
from dex_agents.pure.machine.reducers import snapshot_of
from dex_agents.pure.offline.stored_values import decode_stored, freeze, state_from_values
from dex_agents.pure.values.session import AgentUserMessage
from dex_agents.pure.wire import JsonData, decode

__all__ = ["event_time", "export_document", "json_of", "recorded", "split_key", "step_failure"]

_JSON_ENCODING: Final = "json"


def json_of(value: pb.Value) -> JsonValue:
    """The JSON a (hydrated) Dex value holds (``None`` for null, an empty value or a deletion).

    Raises:
        ValueError: The value holds bytes, a blob reference or text that is not JSON.
    """
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "obj_value" and value.obj_value.encoding == _JSON_ENCODING:
        return freeze(json.loads(value.obj_value.payload.decode("utf-8")))
    raise ValueError(f"a Dex value of kind {kind} ({value.obj_value.encoding or 'no encoding'}) is not JSON")


def split_key(physical: str) -> tuple[str, str | None]:
    """A physical key's (name, unquoted map instance or ``None``)."""
    name, slash, instance = physical.partition("/")
    return (name, unquote(instance)) if slash else (name, None)


def event_time(event: pb.FlowHistoryEvent) -> str | None:
    return format_instant(event.event_time.ToMilliseconds()) if event.HasField("event_time") else None


def recorded(events: Iterable[pb.KV]) -> InvocationRecord | None:
    """The invocation record a Step recorded, if any (an unreadable one counts as none)."""
    for event in events:
        if event.key == INVOCATION_RECORD_EVENT and event.value.WhichOneof("kind") == "string_value":
            decoded = decode(event.value.string_value, InvocationRecord)
            return decoded.unwrap() if is_successful(decoded) else None
    return None


def step_failure(failure: pb.StepMethodFailure) -> StepFailure | None:
    if not failure.attempt and not failure.backend_error:
        return None
    return StepFailure(detail=failure.backend_error, error_type=failure.details.original_worker_error_type)


def _json_object(data: dict[str, JsonData]) -> JsonObject:
    frozen = freeze(data)
    if not isinstance(frozen, PMap):
        raise TypeError("an input's JSON is an object")
    return frozen


def _exported_by() -> str:
    return (f"dex-agents {importlib.metadata.version('dex-agents')} "
            f"(dex-python-sdk {importlib.metadata.version('dex-python-sdk')})")


def _millis(moment: datetime) -> str:
    return format_instant(int(moment.timestamp() * 1000))


def export_document(session_id: str, flow_type: str, info: FlowInfo, steps: Sequence[HistoryStep],
                    raw_values: Sequence[tuple[str, pb.Value]], queued_json: Sequence[JsonValue],
                    events: EventPage) -> ExportDocument:
    """The export of one session from its reads (values hydrated; ``queued_json``: in flight first).

    Raises:
        RuntimeError: A queued message or the stored values cannot be read.
    """
    values = sorted((StoredValue(name=name, instance=instance, value=json_of(value))
                     for name, instance, value in ((*split_key(key), value) for key, value in raw_values)),
                    key=lambda stored: (stored.name, stored.instance or ""))
    queued: list[AgentUserMessage] = []
    for raw in queued_json:
        message = decode_stored(ChannelName.QUEUED_USER_MESSAGES, raw).value_or(None)
        if not isinstance(message, AgentUserMessage):
            raise RuntimeError(f"a queued message of session {session_id} cannot be read")
        queued.append(message)
    state = state_from_values({(v.name, v.instance): v.value for v in values}, len(queued))
    if not is_successful(state):
        raise RuntimeError(f"session {session_id}: {state.failure()}")
    reconstructed = reconstruct_inputs(session_id, steps)
    return ExportDocument(
        format=EXPORT_FORMAT, version=EXPORT_VERSION, exported_at=_millis(datetime.now(UTC)),
        exported_by=_exported_by(),
        session=ExportedSession(session_id=session_id, flow_type=flow_type, run_id=info.run_id,
                                status=info.status.name.lower(), started_at=_millis(info.started_at)),
        values=pvector(values), queued_messages=pvector(queued), snapshot=snapshot_of(state.unwrap()),
        events=pvector(ExportedEvent(cursor=item.cursor, created_at=_millis(item.created_at), event=item.event)
                       for item in events.events),
        steps=pvector(steps),
        inputs=pvector(ExportedInput(step=item.step, input=_json_object(input_to_data(item.input)))
                       for item in reconstructed.inputs),
        reconstruction=Reconstruction(clock=reconstructed.clock, notes=reconstructed.notes),
    )
