# unasync: the source of a generated synchronous twin (scripts/unasync.py)
"""Export one session to a self-describing document (``dex_agents.pure.offline.export_document``).

Reads only the server: the run (``describe_flow``), the retained events (the caller's), every
committed Attribute and map instance, the pending queued messages and the history of the run and of
every run it continued from (continue-as-new: each run's first event names the one before)
(``AsyncServerCalls``: Dex's ``GetAttributes``, ``GetChannelMessages``, ``GetHistoryEvents``). No
Worker is involved, so a stopped or crashed session exports the same way, on the local engine or a
real Dex server. The inputs the reducers saw are rebuilt from the history (``reconstruct``); the
document is assembled by ``export_records``.

Invariants:
    * The values and the history are one consistent cut: the history is read before and after the
      values, and the read is repeated (``CONSISTENT_READ_TRIES`` times) until no event came between.
    * Every value read is hydrated before it is converted (a blob reference becomes its value).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Final

from dex import AsyncClient
from dex.dexpb import dex_pb2 as pb
from pyrsistent import pvector

from dex_agents.client.async_server_calls import AsyncServerCalls
from dex_agents.client.export_records import event_time, export_document, json_of, recorded, split_key, step_failure
from dex_agents.client.values import EventPage
from dex_agents.pure.offline.export_document import (
    METHOD_EXECUTE,
    METHOD_RPC,
    METHOD_WAIT_FOR,
    OUTCOME_COMPLETED,
    OUTCOME_FAILED,
    ChannelMessages,
    ExportDocument,
    HistoryStep,
    RewoundRun,
    StepFailure,
    StoredValue,
    SubFlowOutcome,
)
from dex_agents.pure.machine.invocation_record import InvocationRecord
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.persistence import ChannelName
from dex_agents.pure.offline.stored_values import StoredKey
from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["CONSISTENT_READ_TRIES", "earlier_runs", "export_session", "history_steps", "rewound_runs"]

CONSISTENT_READ_TRIES: Final = 5
"""How often the export reads again when the session moved while its values were read."""


class _Converter:
    """Turns Dex's history records into ``HistoryStep``s, hydrating each value it reads."""

    def __init__(self, server: AsyncServerCalls, session_id: str) -> None:
        self.server = server
        self.session_id = session_id
        self.pending: dict[str, pb.StepMethodEventInput] = {}
        """The last ``step_execute_pending`` input of each Step execution: its condition results, for a
        server whose completion event does not repeat them."""

    async def in_flight_messages(self, finished: set[str | None]) -> list[JsonValue]:
        """The queued messages a Step's wait consumed whose ``execute`` has not committed yet (Dex
        removed them from the Channel; no committed step holds them): still queued, as the history
        sees it."""
        return [value for step_execution_id, pending in self.pending.items() if step_execution_id not in finished
                for messages in await self.consumed(pending.condition_results)
                if messages.name == ChannelName.QUEUED_USER_MESSAGES for value in messages.values]

    async def json(self, value: pb.Value) -> JsonValue:
        return json_of(await self.server.hydrated(self.session_id, value))

    async def writes(self, writes: Iterable[pb.AttributeWrite]) -> list[StoredValue]:
        return [StoredValue(name=name, instance=instance, value=await self.json(write.value))
                for write in writes for name, instance in [split_key(write.key)]]

    async def channels(self, messages: Iterable[pb.ChannelMessage]) -> list[ChannelMessages]:
        grouped: dict[StoredKey, list[JsonValue]] = {}
        for message in messages:
            grouped.setdefault(split_key(message.channel_name), []).append(await self.json(message.value))
        return [ChannelMessages(name=name, instance=instance, values=pvector(values))
                for (name, instance), values in grouped.items()]

    async def consumed(self, results: pb.ConditionResults) -> list[ChannelMessages]:
        return [ChannelMessages(name=name, instance=instance,
                                values=pvector([await self.json(value) for value in result.values]))
                for result in results.channel_results if result.condition_status == pb.CONDITION_STATUS_COMPLETED
                for name, instance in [split_key(result.channel_name)]]

    async def sub_flows(self, results: pb.ConditionResults) -> list[SubFlowOutcome]:
        """The SubFlow results a wait delivered, by index: Dex's status name and the first output."""
        return [SubFlowOutcome(status=pb.FlowStatus.Name(result.flow_status).removeprefix("FLOW_STATUS_"),
                               output=await self.json(result.results[0].completed_step_output) if result.results else None)
                for result in results.sub_flow_results]

    async def step(self, event: pb.FlowHistoryEvent) -> HistoryStep | None:
        """The step an event records; ``None`` for other events (a pending one is remembered)."""
        kind = event.WhichOneof("payload")
        if kind == "step_execute_pending":
            self.pending[event.step_execute_pending.context.step_execution_id] = event.step_execute_pending.input
            return None
        if kind == "rpc_execution_completed":
            rpc = event.rpc_execution_completed
            return HistoryStep(
                event_id=event.event_id, time=event_time(event), method=METHOD_RPC, outcome=OUTCOME_COMPLETED,
                step_type=None, step_execution_id=None, from_step_execution_id=None, attempt=0,
                rpc_name=rpc.rpc_name or ("SetAttributes" if rpc.is_set_attribute_api else ""),
                input=await self.json(rpc.input), output=await self.json(rpc.output), consumed=pvector(),
                timer_fired=False, writes=pvector(await self.writes(rpc.upsert_attributes)),
                published=pvector(await self.channels(rpc.publish_to_channel)),
                next_steps=pvector(move.step_type for move in rpc.step_decision.next_steps), failure=None,
                recorded=recorded(rpc.record_events))
        if kind in ("step_execute_completed", "step_wait_for_completed"):
            completed = getattr(event, kind)
            executed = kind == "step_execute_completed"
            output = completed.output
            results = completed.input.condition_results
            pending = self.pending.get(completed.context.step_execution_id)
            if not completed.input.HasField("condition_results") and pending is not None:
                results = pending.condition_results
            return await self._method(
                event, completed.context, completed.input.step_input, OUTCOME_COMPLETED,
                METHOD_EXECUTE if executed else METHOD_WAIT_FOR,
                consumed=await self.consumed(results) if executed else [],
                timer_fired=any(t.condition_status == pb.CONDITION_STATUS_COMPLETED for t in results.timer_results),
                writes=await self.writes(output.upsert_attributes),
                published=await self.channels(output.publish_to_channel),
                next_steps=[move.step_type for move in output.step_decision.next_steps] if executed else [],
                failure=step_failure(completed.context.last_failure_info), recorded=recorded(output.record_events),
                sub_flows=await self.sub_flows(results) if executed else [])
        if kind in ("step_execute_failed", "step_wait_for_failed"):
            failed = getattr(event, kind)
            return await self._method(event, failed.context, failed.input.step_input, OUTCOME_FAILED,
                                      METHOD_EXECUTE if kind == "step_execute_failed" else METHOD_WAIT_FOR,
                                      consumed=[], timer_fired=False, writes=[], published=[], next_steps=[],
                                      failure=step_failure(failed.output.failure), recorded=None, sub_flows=[])
        return None

    async def _method(self, event: pb.FlowHistoryEvent, context: pb.StepMethodEventContext, step_input: pb.Value,
                      outcome: str, method: str, *, consumed: list[ChannelMessages], timer_fired: bool,
                      writes: list[StoredValue], published: list[ChannelMessages], next_steps: list[str],
                      failure: StepFailure | None, recorded: InvocationRecord | None,
                      sub_flows: list[SubFlowOutcome]) -> HistoryStep:
        return HistoryStep(
            event_id=event.event_id, time=event_time(event), method=method, outcome=outcome,
            step_type=context.step_type, step_execution_id=context.step_execution_id,
            from_step_execution_id=context.from_step_execution_id or None, attempt=context.final_attempt,
            rpc_name=None, input=await self.json(step_input), output=None, consumed=pvector(consumed),
            timer_fired=timer_fired, writes=pvector(writes), published=pvector(published),
            next_steps=pvector(next_steps), failure=failure, recorded=recorded, sub_flows=pvector(sub_flows))


async def history_steps(server: AsyncServerCalls, session_id: str,
                        history: Iterable[pb.FlowHistoryEvent]) -> list[HistoryStep]:
    """The steps ``history`` records (as the export holds them), every value hydrated."""
    converter = _Converter(server, session_id)
    return [step for step in [await converter.step(event) for event in history] if step is not None]


def _previous_run(history: list[pb.FlowHistoryEvent]) -> str:
    """The run a run continued from (its first event's ``continued_start``), or ``""`` for a first run."""
    first = history[0] if history else None
    if first is None or first.WhichOneof("payload") != "flow_started_or_continued":
        return ""
    started = first.flow_started_or_continued
    return started.continued_start.previous_run_id if started.HasField("continued_start") else ""


async def earlier_runs(server: AsyncServerCalls, session_id: str, history: list[pb.FlowHistoryEvent],
                        timeout: float) -> list[pb.FlowHistoryEvent]:
    """The history of every run the session continued from (continue-as-new), oldest run first; ended runs
    never change, so they are read once."""
    earlier: list[list[pb.FlowHistoryEvent]] = []
    previous = _previous_run(history)
    while previous:
        run = await server.read_history(session_id, timeout=timeout, run_id=previous)
        earlier.append(run)
        previous = _previous_run(run)
    return [event for run in reversed(earlier) for event in run]


async def rewound_runs(server: AsyncServerCalls, session_id: str, history: list[pb.FlowHistoryEvent],
                       timeout: float) -> list[RewoundRun]:
    """Every run a rewind replaced in ``history``'s lineage (its ``time_travel_fork`` events, and theirs
    in turn), each with its steps after the rewind's point, in the order the rewinds are found."""
    found: list[RewoundRun] = []
    seen: set[str] = set()
    forks = [(event.time_travel_fork.previous_run_id, event.time_travel_fork.target_event_id)
             for event in history if event.HasField("time_travel_fork")]
    while forks:
        run_id, target = forks.pop(0)
        if not run_id or run_id in seen:
            continue
        seen.add(run_id)
        replaced = await server.read_history(session_id, timeout=timeout, run_id=run_id)
        removed = [event for event in replaced if event.event_id > target]
        steps = [step for step in await history_steps(server, session_id, replaced) if step.event_id > target]
        found.append(RewoundRun(run_id=run_id, target_event_id=target, steps=pvector(steps)))
        forks.extend((event.time_travel_fork.previous_run_id, event.time_travel_fork.target_event_id)
                     for event in removed if event.HasField("time_travel_fork"))
    return found


async def _consistent_read(server: AsyncServerCalls, session_id: str, timeout: float) -> tuple[
        list[pb.FlowHistoryEvent], list[tuple[str, pb.Value]], list[pb.Value]]:
    for _ in range(CONSISTENT_READ_TRIES):
        history = await server.read_history(session_id, timeout=timeout)
        values = await server.read_all_values(session_id, timeout=timeout)
        queued = await server.read_channel(session_id, ChannelName.QUEUED_USER_MESSAGES, timeout=timeout)
        again = await server.read_history(session_id, timeout=timeout)
        if [event.event_id for event in again] == [event.event_id for event in history]:
            return [*await earlier_runs(server, session_id, history, timeout), *history], values, queued
    raise RuntimeError(f"session {session_id} kept changing while it was exported ({CONSISTENT_READ_TRIES} tries); "
                       f"export it again, or stop it first")


async def export_session(client: AsyncClient, server: AsyncServerCalls, flow: AgentSessionFlow, session_id: str,
                         events: EventPage, *, timeout: float) -> ExportDocument:
    """The export of ``session_id`` (see the module docstring); ``events`` are its retained events.

    Raises:
        FlowNotFoundError: No session ``session_id`` exists.
        RuntimeError: The session kept changing, or its stored values cannot be read.
    """
    info = await client.describe_flow(session_id)
    history, raw_values, raw_queued = await _consistent_read(server, session_id, timeout)
    converter = _Converter(server, session_id)
    steps = [step for step in [await converter.step(event) for event in history] if step is not None]
    in_flight = await converter.in_flight_messages({step.step_execution_id for step in steps})
    queued = [*in_flight, *(json_of(value) for value in raw_queued)]
    document = export_document(session_id, flow.get_flow_type(), info, steps, raw_values, queued, events)
    rewound = await rewound_runs(server, session_id, history, timeout)
    return replace(document, rewound_runs=pvector(rewound)) if rewound else document
