"""A Flow's history as flat entries, to assert which Step methods and RPCs ran.

Reads ``FlowService.GetHistoryEvents`` with the generated gRPC stub (the SDK Client has no history
API), paging until the server returns no page token, so the result is the whole history of the
Flow's current run in server order. Works against the local engine and a real Dex server alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

__all__ = [
    "EXECUTE_COMPLETED",
    "EXECUTE_FAILED",
    "RPC_COMPLETED",
    "WAIT_FOR_COMPLETED",
    "WAIT_FOR_FAILED",
    "StepHistoryEntry",
    "completed_step_types",
    "read_step_history",
]

EXECUTE_COMPLETED: Final = "step_execute_completed"
EXECUTE_FAILED: Final = "step_execute_failed"
WAIT_FOR_COMPLETED: Final = "step_wait_for_completed"
WAIT_FOR_FAILED: Final = "step_wait_for_failed"
RPC_COMPLETED: Final = "rpc_execution_completed"

_UNKNOWN_EVENT: Final = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepHistoryEntry:
    """One history event, flattened.

    Attributes:
        event_type: The event's kind, the name of the field set in ``FlowHistoryEvent``'s oneof
            (``"step_execute_completed"``, ``"rpc_execution_completed"``, ``"flow_closed"``, ...).
        step_type: The Step type for Step method events, else ``""``.
        step_execution_id: The Step execution ID (``<StepType>-<n>``) for Step method events, else ``""``.
        attempt: The attempt the event reports (its context's final attempt; a failure's own
            attempt when the context has none), 0 when absent.
        rpc_name: The RPC's name for ``rpc_execution_completed``, else ``None``.
        event_id: The server's event ID (increasing within a run).
    """

    event_type: str
    step_type: str = ""
    step_execution_id: str = ""
    attempt: int = 0
    rpc_name: str | None = None
    event_id: int = 0


def read_step_history(server_address: str, flow_id: str, *, timeout: float = 30.0,
                      page_size: int = 0) -> list[StepHistoryEntry]:
    """Read every history event of the Flow ``flow_id``, oldest first.

    Args:
        server_address: Dex server ``host:port`` (plaintext gRPC, no credential).
        flow_id: The Flow ID (for an agent session, the session ID).
        timeout: Seconds allowed for each page.
        page_size: Events per page the server is asked for; 0 lets the server choose.

    Returns:
        One entry per event, in server order.

    Raises:
        grpc.RpcError: The server refused the call (for example, an unknown Flow ID).
    """
    entries: list[StepHistoryEntry] = []
    with grpc.insecure_channel(server_address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        page_token = b""
        while True:
            response = stub.GetHistoryEvents(
                pb.GetHistoryEventsRequest(flow_id=flow_id, next_page_token=page_token,
                                           estimate_page_size=page_size), timeout=timeout)
            entries.extend(history_entry(event) for event in response.events)
            if not response.next_page_token:
                return entries
            page_token = response.next_page_token


def history_entry(event: pb.FlowHistoryEvent) -> StepHistoryEntry:
    """Flatten one ``FlowHistoryEvent`` (see ``StepHistoryEntry`` for what each field holds)."""
    kind = event.WhichOneof("payload")
    if kind is None:
        return StepHistoryEntry(event_type=_UNKNOWN_EVENT, event_id=event.event_id)
    if kind == RPC_COMPLETED:
        return StepHistoryEntry(event_type=kind, rpc_name=event.rpc_execution_completed.rpc_name,
                                event_id=event.event_id)
    context: pb.StepMethodEventContext | None
    failure_attempt = 0
    if kind == EXECUTE_COMPLETED:
        context = event.step_execute_completed.context
    elif kind == EXECUTE_FAILED:
        context = event.step_execute_failed.context
        failure_attempt = event.step_execute_failed.output.failure.attempt
    elif kind == WAIT_FOR_COMPLETED:
        context = event.step_wait_for_completed.context
    elif kind == WAIT_FOR_FAILED:
        context = event.step_wait_for_failed.context
        failure_attempt = event.step_wait_for_failed.output.failure.attempt
    elif kind == "step_execute_pending":
        context = event.step_execute_pending.context
    elif kind == "step_wait_for_pending":
        context = event.step_wait_for_pending.context
    else:
        context = None
    if context is None:
        return StepHistoryEntry(event_type=kind, event_id=event.event_id)
    return StepHistoryEntry(event_type=kind, step_type=context.step_type,
                            step_execution_id=context.step_execution_id,
                            attempt=context.final_attempt or failure_attempt, event_id=event.event_id)


def completed_step_types(entries: Iterable[StepHistoryEntry]) -> list[str]:
    """The Step types of the ``execute`` completions among ``entries``, in order."""
    return [entry.step_type for entry in entries if entry.event_type == EXECUTE_COMPLETED]
