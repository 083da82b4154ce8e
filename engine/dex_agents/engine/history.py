"""History events: what the engine records for each Step method and RPC, and the read API.

Per Step method the order is: ``step_<method>_pending`` (phase STARTED, when the method is
scheduled), then ``step_<method>_completed``, or ``step_<method>_failed`` once retries are spent
(attempts that are retried leave no event; the completion's ``final_attempt`` counts them).
RPCs that change state record ``rpc_execution_completed``. A run starts with
``flow_started_or_continued`` and ends with ``flow_closed``. Values of hard-delete Attributes
(``is_hard_delete_on_null``) never enter history.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Literal

from dex.dexpb import dex_pb2 as pb

from .rows import StepRow
from .repository import events as stored_events
from .repository.state import record

Method = Literal["wait_for", "execute"]


def durability(config: pb.FlowConfig, options: pb.StepOptions, method: Method) -> pb.StepDurability:
    """Effective durability: the method override, else the Flow's config, else SYNC."""
    override = options.wait_for_durability_override if method == "wait_for" else options.execute_durability_override
    if override != pb.STEP_DURABILITY_UNSPECIFIED:
        return override
    if config.HasField("step_durability") and config.step_durability != pb.STEP_DURABILITY_UNSPECIFIED:
        return config.step_durability
    return pb.STEP_DURABILITY_SYNC


def _context(step: StepRow, attempt: int, config: pb.FlowConfig, method: Method) -> pb.StepMethodEventContext:
    context = pb.StepMethodEventContext(
        step_execution_id=step.seid,
        from_step_execution_id=step.from_seid,
        step_type=step.step_type,
        durability=durability(config, step.options, method),
        final_attempt=attempt,
    )
    if step.last_failure is not None and step.last_failure.attempt:
        context.last_failure_info.CopyFrom(step.last_failure)  # the attempt before the final one
    return context


def redact(writes: Sequence[pb.AttributeWrite]) -> list[pb.AttributeWrite]:
    """Attribute writes as history keeps them: hard-delete Attributes lose their value."""
    kept: list[pb.AttributeWrite] = []
    for write in writes:
        copy = pb.AttributeWrite()
        copy.CopyFrom(write)
        if copy.is_hard_delete_on_null:
            copy.ClearField("value")
        kept.append(copy)
    return kept


def method_pending(db: sqlite3.Connection, step: StepRow, method: Method, config: pb.FlowConfig) -> None:
    """A Step method was scheduled (an ``execute`` with the conditions its Wait consumed: what a
    reset replays)."""
    event_input = pb.StepMethodEventInput(step_input=step.input)
    if method == "execute" and step.results is not None:
        event_input.condition_results.CopyFrom(step.results)
    pending = pb.StepMethodPendingEvent(
        input=event_input,
        context=_context(step, step.attempt, config, method),
        phase=pb.PENDING_STEP_METHOD_PHASE_STARTED,
    )
    if method == "wait_for":
        record(db, step.uid, pb.FlowHistoryEvent(step_wait_for_pending=pending))
    else:
        record(db, step.uid, pb.FlowHistoryEvent(step_execute_pending=pending))


def failure(attempt: int, detail: str, error_type: str,
            worker_error: pb.WorkerErrorResponse | None = None) -> pb.StepMethodFailure:
    """One failed attempt as Dex reports it (history and ``GetFlowState``): the detail and error
    type, with the Worker's own report (stack trace, status) when the Worker sent one."""
    details = pb.ServiceErrorResponse(detail=detail, sub_status=pb.ERROR_SUB_STATUS_WORKER_API_ERROR,
                                      original_worker_error_detail=detail, original_worker_error_type=error_type)
    if worker_error is not None:
        details.original_worker_error_detail = worker_error.detail
        details.original_worker_error_stack_trace = worker_error.stack_trace
        details.original_worker_error_status = worker_error.grpc_status
    return pb.StepMethodFailure(backend_error=detail, attempt=attempt, details=details)


def method_failed(db: sqlite3.Connection, step: StepRow, method: Method, failed: pb.StepMethodFailure,
                  config: pb.FlowConfig) -> None:
    """A Step method failed for good (its retries are spent)."""
    output = pb.StepMethodFailedOutput(failure=failed)
    event_input = pb.StepMethodEventInput(step_input=step.input)
    context = _context(step, step.attempt, config, method)
    if method == "wait_for":
        record(db, step.uid, pb.FlowHistoryEvent(step_wait_for_failed=pb.StepWaitForFailedEvent(
            input=event_input, output=output, context=context)))
    else:
        record(db, step.uid, pb.FlowHistoryEvent(step_execute_failed=pb.StepExecuteFailedEvent(
            input=event_input, output=output, context=context)))


def wait_for_completed(db: sqlite3.Connection, step: StepRow, response: pb.InvokeWaitForMethodResponse,
                       config: pb.FlowConfig) -> None:
    """``wait_for`` returned its Wait."""
    record(db, step.uid, pb.FlowHistoryEvent(step_wait_for_completed=pb.StepWaitForCompletedEvent(
        input=pb.StepMethodEventInput(step_input=step.input),
        output=pb.StepWaitForCompletedOutput(
            wait_for_condition=response.waiting_condition,
            upsert_attributes=redact(response.upsert_attributes),
            publish_to_channel=response.publish_to_channel,
            record_events=response.record_events,
            upsert_step_execution_locals=response.upsert_step_exe_locals,
            delete_from_channel=response.delete_from_channel,
        ),
        context=_context(step, step.attempt, config, "wait_for"),
    )))


def execute_completed(db: sqlite3.Connection, step: StepRow, response: pb.InvokeExecuteMethodResponse,
                      config: pb.FlowConfig) -> None:
    """``execute`` returned its decision."""
    record(db, step.uid, pb.FlowHistoryEvent(step_execute_completed=pb.StepExecuteCompletedEvent(
        input=pb.StepMethodEventInput(
            step_input=step.input, condition_results=step.results or pb.ConditionResults()
        ),
        output=pb.StepExecuteCompletedOutput(
            step_decision=response.step_decision,
            upsert_attributes=redact(response.upsert_attributes),
            publish_to_channel=response.publish_to_channel,
            record_events=response.record_events,
            upsert_step_execution_locals=response.upsert_step_exe_locals,
            delete_from_channel=response.delete_from_channel,
        ),
        context=_context(step, step.attempt, config, "execute"),
    )))


def rpc_completed(db: sqlite3.Connection, uid: int, name: str, request_input: pb.Value,
                  response: pb.InvokeWorkerRPCResponse, worker_id: str) -> None:
    """An RPC committed its effects."""
    record(db, uid, pb.FlowHistoryEvent(rpc_execution_completed=pb.RpcExecutionCompletedEvent(
        rpc_name=name, input=request_input, output=response.output,
        step_decision=response.step_decision, upsert_attributes=redact(response.upsert_attributes),
        record_events=response.record_events, publish_to_channel=response.publish_to_channel,
        delete_from_channel=response.delete_from_channel, served_by_app_worker_id=worker_id,
    )))


def attributes_set(db: sqlite3.Connection, uid: int, writes: Sequence[pb.AttributeWrite]) -> None:
    """``SetAttributes`` wrote Attributes (recorded as Dex does: an RPC event marked as the API's)."""
    record(db, uid, pb.FlowHistoryEvent(rpc_execution_completed=pb.RpcExecutionCompletedEvent(
        is_set_attribute_api=True, upsert_attributes=redact(writes))))


def channel_published(db: sqlite3.Connection, uid: int, messages: Sequence[pb.ChannelMessage]) -> None:
    """``PublishToChannel`` appended messages from outside the run."""
    record(db, uid, pb.FlowHistoryEvent(channel_external_publish=pb.ChannelExternalPublishEvent(messages=messages)))


def channel_deleted(db: sqlite3.Connection, uid: int, deletions: Sequence[pb.ChannelMessageDeletion]) -> None:
    """``DeleteChannelMessage`` removed pending messages from outside the run."""
    record(db, uid, pb.FlowHistoryEvent(channel_external_delete=pb.ChannelExternalDeleteEvent(messages=deletions)))


def events(db: sqlite3.Connection, uid: int, after: int, limit: int) -> list[pb.FlowHistoryEvent]:
    """Events with id > ``after``, oldest first, at most ``limit``."""
    return stored_events.events_after(db, uid, after, limit)
