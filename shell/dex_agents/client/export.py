"""Export one session to a self-describing document (``dex_agents.pure.export_document``).

Reads only the server: the run (``Client.describe_flow``), the retained events (the Client's Stream
reads), every committed Attribute and map instance, the pending queued messages and the run's
history (``server_calls``: Dex's ``GetAttributes``, ``GetChannelMessages``, ``GetHistoryEvents``).
No Worker is involved, so a stopped or crashed session exports the same way, on the local engine or
a real Dex server. The inputs the reducers saw are rebuilt from the history (``reconstruct``).

Invariants:
    * The values and the history are one consistent cut: the history is read before and after the
      values, and the read is repeated (``CONSISTENT_READ_TRIES`` times) until no event came between.
    * ``queued_messages`` (and the snapshot's count) are the Channel's pending messages plus those a
      Step's wait consumed whose ``execute`` has not committed: the history has no input for them yet.
    * Each Dex value becomes the JSON it holds: a JSON object value its parsed text, a STRING its
      string, an INT64 its integer; a deleted Attribute's write is ``null``. Map instance keys are
      unquoted (``AgentToolCalls/call%3A1`` is instance ``call:1``).
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Final
from urllib.parse import unquote

from dex import Client
from dex.dexpb import dex_pb2 as pb
from pyrsistent import PMap, pvector
from returns.pipeline import is_successful

from dex_agents.client.server_calls import ServerCalls
from dex_agents.client.values import EventPage
from dex_agents.pure.deadlines import format_instant
from dex_agents.pure.export_document import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    METHOD_EXECUTE,
    METHOD_RPC,
    METHOD_WAIT_FOR,
    OUTCOME_COMPLETED,
    OUTCOME_FAILED,
    ChannelMessages,
    ExportDocument,
    ExportedEvent,
    ExportedInput,
    ExportedSession,
    HistoryStep,
    Reconstruction,
    StepFailure,
    StoredValue,
)
from dex_agents.pure.input_wire import input_to_data
from dex_agents.pure.invocation_record import INVOCATION_RECORD_EVENT, InvocationRecord
from dex_agents.pure.json_value import JsonObject, JsonValue
from dex_agents.pure.persistence import ChannelName
from dex_agents.pure.reconstruct import reconstruct_inputs
from dex_agents.pure.reducers import snapshot_of
from dex_agents.pure.stored_values import StoredKey, decode_stored, freeze, state_from_values
from dex_agents.pure.values import AgentUserMessage
from dex_agents.pure.wire import JsonData, decode
from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["CONSISTENT_READ_TRIES", "export_session", "json_of"]

CONSISTENT_READ_TRIES: Final = 5
"""How often the export reads again when the session moved while its values were read."""

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


def _split(physical: str) -> tuple[str, str | None]:
    name, slash, instance = physical.partition("/")
    return (name, unquote(instance)) if slash else (name, None)


def _event_time(event: pb.FlowHistoryEvent) -> str | None:
    return format_instant(event.event_time.ToMilliseconds()) if event.HasField("event_time") else None


def _json_object(data: dict[str, JsonData]) -> JsonObject:
    frozen = freeze(data)
    if not isinstance(frozen, PMap):
        raise TypeError("an input's JSON is an object")
    return frozen


class _Converter:
    """Turns Dex's history records into ``HistoryStep``s, hydrating each value it reads."""

    def __init__(self, server: ServerCalls, session_id: str) -> None:
        self.server = server
        self.session_id = session_id
        self.pending: dict[str, pb.StepMethodEventInput] = {}
        """The last ``step_execute_pending`` input of each Step execution: its condition results, for a
        server whose completion event does not repeat them."""

    def in_flight_messages(self, finished: set[str | None]) -> list[JsonValue]:
        """The queued messages a Step's wait consumed whose ``execute`` has not committed yet (Dex
        removed them from the Channel; no committed step holds them): still queued, as the history
        sees it."""
        return [value for step_execution_id, pending in self.pending.items() if step_execution_id not in finished
                for messages in self.consumed(pending.condition_results)
                if messages.name == ChannelName.QUEUED_USER_MESSAGES for value in messages.values]

    def json(self, value: pb.Value) -> JsonValue:
        return json_of(self.server.hydrated(self.session_id, value))

    def writes(self, writes: Iterable[pb.AttributeWrite]) -> list[StoredValue]:
        stored = []
        for write in writes:
            name, instance = _split(write.key)
            stored.append(StoredValue(name=name, instance=instance, value=self.json(write.value)))
        return stored

    def channels(self, messages: Iterable[pb.ChannelMessage]) -> list[ChannelMessages]:
        grouped: dict[StoredKey, list[JsonValue]] = {}
        for message in messages:
            grouped.setdefault(_split(message.channel_name), []).append(self.json(message.value))
        return [ChannelMessages(name=name, instance=instance, values=pvector(values))
                for (name, instance), values in grouped.items()]

    def consumed(self, results: pb.ConditionResults) -> list[ChannelMessages]:
        consumed = []
        for result in results.channel_results:
            if result.condition_status == pb.CONDITION_STATUS_COMPLETED:
                name, instance = _split(result.channel_name)
                consumed.append(ChannelMessages(name=name, instance=instance,
                                                values=pvector(self.json(value) for value in result.values)))
        return consumed

    @staticmethod
    def recorded(events: Iterable[pb.KV]) -> InvocationRecord | None:
        for event in events:
            if event.key == INVOCATION_RECORD_EVENT and event.value.WhichOneof("kind") == "string_value":
                decoded = decode(event.value.string_value, InvocationRecord)
                return decoded.unwrap() if is_successful(decoded) else None
        return None

    @staticmethod
    def failure(failure: pb.StepMethodFailure) -> StepFailure | None:
        if not failure.attempt and not failure.backend_error:
            return None
        return StepFailure(detail=failure.backend_error, error_type=failure.details.original_worker_error_type)

    def step(self, event: pb.FlowHistoryEvent) -> HistoryStep | None:
        kind = event.WhichOneof("payload")
        time = _event_time(event)
        if kind == "step_execute_pending":
            self.pending[event.step_execute_pending.context.step_execution_id] = event.step_execute_pending.input
            return None
        if kind == "rpc_execution_completed":
            rpc = event.rpc_execution_completed
            return HistoryStep(
                event_id=event.event_id, time=time, method=METHOD_RPC, outcome=OUTCOME_COMPLETED, step_type=None,
                step_execution_id=None, from_step_execution_id=None, attempt=0,
                rpc_name=rpc.rpc_name or ("SetAttributes" if rpc.is_set_attribute_api else ""),
                input=self.json(rpc.input), output=self.json(rpc.output), consumed=pvector(), timer_fired=False,
                writes=pvector(self.writes(rpc.upsert_attributes)), published=pvector(self.channels(rpc.publish_to_channel)),
                next_steps=pvector(move.step_type for move in rpc.step_decision.next_steps), failure=None,
                recorded=self.recorded(rpc.record_events))
        if kind in ("step_execute_completed", "step_wait_for_completed"):
            completed = getattr(event, kind)
            output = completed.output
            decision = output.step_decision if kind == "step_execute_completed" else pb.StepDecision()
            results = completed.input.condition_results
            pending = self.pending.get(completed.context.step_execution_id)
            if not completed.input.HasField("condition_results") and pending is not None:
                results = pending.condition_results
            return self._method(event, completed.context, completed.input.step_input, OUTCOME_COMPLETED,
                                METHOD_EXECUTE if kind == "step_execute_completed" else METHOD_WAIT_FOR,
                                consumed=self.consumed(results) if kind == "step_execute_completed" else [],
                                timer_fired=any(t.condition_status == pb.CONDITION_STATUS_COMPLETED
                                                for t in results.timer_results),
                                writes=self.writes(output.upsert_attributes),
                                published=self.channels(output.publish_to_channel),
                                next_steps=[move.step_type for move in decision.next_steps],
                                failure=self.failure(completed.context.last_failure_info),
                                recorded=self.recorded(output.record_events), time=time)
        if kind in ("step_execute_failed", "step_wait_for_failed"):
            failed = getattr(event, kind)
            return self._method(event, failed.context, failed.input.step_input, OUTCOME_FAILED,
                                METHOD_EXECUTE if kind == "step_execute_failed" else METHOD_WAIT_FOR,
                                consumed=[], timer_fired=False, writes=[], published=[], next_steps=[],
                                failure=self.failure(failed.output.failure), recorded=None, time=time)
        return None

    def _method(self, event: pb.FlowHistoryEvent, context: pb.StepMethodEventContext, step_input: pb.Value,
                outcome: str, method: str, *, consumed: list[ChannelMessages], timer_fired: bool,
                writes: list[StoredValue], published: list[ChannelMessages], next_steps: list[str],
                failure: StepFailure | None, recorded: InvocationRecord | None, time: str | None) -> HistoryStep:
        return HistoryStep(
            event_id=event.event_id, time=time, method=method, outcome=outcome, step_type=context.step_type,
            step_execution_id=context.step_execution_id,
            from_step_execution_id=context.from_step_execution_id or None, attempt=context.final_attempt,
            rpc_name=None, input=self.json(step_input), output=None, consumed=pvector(consumed),
            timer_fired=timer_fired, writes=pvector(writes), published=pvector(published),
            next_steps=pvector(next_steps), failure=failure, recorded=recorded)


def _consistent_read(server: ServerCalls, session_id: str, timeout: float) -> tuple[
        list[pb.FlowHistoryEvent], list[tuple[str, pb.Value]], list[pb.Value]]:
    for _ in range(CONSISTENT_READ_TRIES):
        history = server.read_history(session_id, timeout=timeout)
        values = server.read_all_values(session_id, timeout=timeout)
        queued = server.read_channel(session_id, ChannelName.QUEUED_USER_MESSAGES, timeout=timeout)
        again = server.read_history(session_id, timeout=timeout)
        if [event.event_id for event in again] == [event.event_id for event in history]:
            return history, values, queued
    raise RuntimeError(f"session {session_id} kept changing while it was exported ({CONSISTENT_READ_TRIES} tries); "
                       f"export it again, or stop it first")


def _exported_by() -> str:
    return (f"dex-agents {importlib.metadata.version('dex-agents')} "
            f"(dex-python-sdk {importlib.metadata.version('dex-python-sdk')})")


def export_session(client: Client, server: ServerCalls, flow: AgentSessionFlow, session_id: str,
                   events: EventPage, *, timeout: float) -> ExportDocument:
    """The export of ``session_id`` (see the module docstring); ``events`` are its retained events.

    Raises:
        FlowNotFoundError: No session ``session_id`` exists.
        RuntimeError: The session kept changing, or its stored values cannot be read.
    """
    info = client.describe_flow(session_id)
    history, raw_values, raw_queued = _consistent_read(server, session_id, timeout)
    converter = _Converter(server, session_id)
    steps = [step for step in map(converter.step, history) if step is not None]
    values = sorted((StoredValue(name=name, instance=instance, value=json_of(value))
                     for name, instance, value in ((*_split(key), value) for key, value in raw_values)),
                    key=lambda stored: (stored.name, stored.instance or ""))
    queued: list[AgentUserMessage] = []
    for raw in [*converter.in_flight_messages({step.step_execution_id for step in steps}),
                *(json_of(value) for value in raw_queued)]:
        message = decode_stored(ChannelName.QUEUED_USER_MESSAGES, raw).value_or(None)
        if not isinstance(message, AgentUserMessage):
            raise RuntimeError(f"a queued message of session {session_id} cannot be read")
        queued.append(message)
    state = state_from_values({(v.name, v.instance): v.value for v in values}, len(queued))
    if not is_successful(state):
        raise RuntimeError(f"session {session_id}: {state.failure()}")
    reconstructed = reconstruct_inputs(session_id, steps)
    return ExportDocument(
        format=EXPORT_FORMAT, version=EXPORT_VERSION,
        exported_at=format_instant(int(datetime.now(UTC).timestamp() * 1000)), exported_by=_exported_by(),
        session=ExportedSession(session_id=session_id, flow_type=flow.get_flow_type(), run_id=info.run_id,
                                status=info.status.name.lower(),
                                started_at=format_instant(int(info.started_at.timestamp() * 1000))),
        values=pvector(values), queued_messages=pvector(queued), snapshot=snapshot_of(state.unwrap()),
        events=pvector(ExportedEvent(cursor=item.cursor, created_at=format_instant(int(item.created_at.timestamp() * 1000)),
                                     event=item.event) for item in events.events),
        steps=pvector(steps),
        inputs=pvector(ExportedInput(step=item.step, input=_json_object(input_to_data(item.input)))
                       for item in reconstructed.inputs),
        reconstruction=Reconstruction(clock=reconstructed.clock, notes=reconstructed.notes),
    )

