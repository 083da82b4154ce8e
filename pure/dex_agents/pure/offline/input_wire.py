"""The JSON of the session's inputs (``SessionInput``), for exported sessions and offline replay.

An input is a JSON object: ``kind`` (the input's snake_case name, ``"model_call_finished"``) and each
of its fields under its own name, encoded by the wire module (``docs/wire.md``). Two fields hold a
union of records and carry a ``kind`` of their own: ``UserMessageBuilt.purpose``
(``"initial_message"``, ``"queued_message"``, ``"turn_failure_note"``) and ``ModelCallFinished.outcome``
(``"completed"``, ``"tool_calls_requested"``, the TypeScript union's tags).

Invariants: ``input_from_data(input_to_data(i)) == Success(i)`` for every input; decoding is as strict
as the wire module's (unknown fields and kinds are refused) and reports a ``WireError`` whose path
starts at the input (``$.outcome.usage.requests``).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Final, TypeAlias

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    CancelToolCallCalled,
    CancelTurnCalled,
    CompactHistoryCalled,
    ExtendInterruptDeadlineCalled,
    ResolveInterruptCalled,
    ResolveToolOutcomeCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
    SessionRewindRecorded,
)
from dex_agents.pure.values.runner import ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.step_inputs import (
    ToolCancellationStarted,
    TurnCancelStarted,
    ReconcileStarted,
    ToolArgumentsValidated,
    ToolOutcomeReconciled,
    CompactionStarted,
    HistorySummarized,
    SubAgentEnded,
    SubAgentWaitStarted,
    SummarizationFailed,
    ApprovalWaitEnded,
    ApprovalWaitStarted,
    HeartbeatSent,
    InitialMessage,
    ModelAttemptsExhausted,
    ModelCallFailed,
    ModelCallFinished,
    ModelStepStarted,
    QueuedMessage,
    SessionInput,
    SessionStarted,
    SingleAttemptToolFailed,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnCancelNote,
    TurnFailureNote,
    UserMessageArrived,
    UserMessageBuilt,
)
from dex_agents.pure.wire import JsonData, WireError, WireType, from_json_data, record_type, to_json_data
from dex_agents.pure.wire.errors import describe_found
from dex_agents.pure.wire.schema import node_for_hint

TYPE_NAME: Final = "SessionInput"
KIND: Final = "kind"

INPUT_KINDS: Final[Mapping[str, type[object]]] = {
    "session_started": SessionStarted,
    "user_message_arrived": UserMessageArrived,
    "user_message_built": UserMessageBuilt,
    "model_step_started": ModelStepStarted,
    "model_call_finished": ModelCallFinished,
    "model_call_failed": ModelCallFailed,
    "approval_wait_started": ApprovalWaitStarted,
    "approval_wait_ended": ApprovalWaitEnded,
    "tool_step_started": ToolStepStarted,
    "heartbeat_sent": HeartbeatSent,
    "tool_call_succeeded": ToolCallSucceeded,
    "tool_execution_failed": ToolExecutionFailed,
    "tool_attempts_exhausted": ToolAttemptsExhausted,
    "single_attempt_tool_failed": SingleAttemptToolFailed,
    "tool_results_arrived": ToolResultsArrived,
    "model_attempts_exhausted": ModelAttemptsExhausted,
    "compaction_started": CompactionStarted,
    "history_summarized": HistorySummarized,
    "summarization_failed": SummarizationFailed,
    "send_user_message_called": SendUserMessageCalled,
    "resolve_interrupt_called": ResolveInterruptCalled,
    "agent_snapshot_requested": AgentSnapshotRequested,
    "agent_messages_listed": AgentMessagesListed,
    "send_user_message_once_called": SendUserMessageOnceCalled,
    "compact_history_called": CompactHistoryCalled,
    "tool_arguments_validated": ToolArgumentsValidated,
    "reconcile_started": ReconcileStarted,
    "tool_outcome_reconciled": ToolOutcomeReconciled,
    "extend_interrupt_deadline_called": ExtendInterruptDeadlineCalled,
    "session_rewind_recorded": SessionRewindRecorded,
    "turn_cancel_started": TurnCancelStarted,
    "tool_cancellation_started": ToolCancellationStarted,
    "cancel_turn_called": CancelTurnCalled,
    "cancel_tool_call_called": CancelToolCallCalled,
    "resolve_tool_outcome_called": ResolveToolOutcomeCalled,
    "sub_agent_wait_started": SubAgentWaitStarted,
    "sub_agent_ended": SubAgentEnded,
}
"""Every input's ``kind``, one per member of ``SessionInput``."""

_KIND_OF: Final = {cls: kind for kind, cls in INPUT_KINDS.items()}

_UNIONS: Final[Mapping[str, Mapping[str, type[object]]]] = {
    "purpose": {"initial_message": InitialMessage, "queued_message": QueuedMessage,
                "turn_failure_note": TurnFailureNote, "turn_cancel_note": TurnCancelNote},
    "outcome": {"completed": TurnCompleted, "tool_calls_requested": ToolCallsRequested},
}
"""The fields that hold a union of records, by field name: each member's ``kind``."""

FieldCodec: TypeAlias = "WireType[object] | Mapping[str, type[object]]"

_FIELDS: dict[type[object], tuple[tuple[str, FieldCodec], ...]] = {}


def _fields_of(cls: type[object]) -> tuple[tuple[str, FieldCodec], ...]:
    """Each field of an input class with its codec: a wire type, or its union's member table (memoized)."""
    known = _FIELDS.get(cls)
    if known is not None:
        return known
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not an input record")
    hints = typing.get_type_hints(cls)
    codecs: list[tuple[str, FieldCodec]] = []
    for field in dataclasses.fields(cls):
        union = _UNIONS.get(field.name)
        where = f"{cls.__name__}.{field.name}"
        codecs.append((field.name, union if union is not None
                       else WireType(name=where, node=node_for_hint(hints[field.name], where))))
    _FIELDS[cls] = known = tuple(codecs)
    return known


def input_kind(session_input: SessionInput) -> str:
    """The ``kind`` of ``session_input`` (``"tool_call_succeeded"``)."""
    return _KIND_OF[type(session_input)]


def _member_to_data(value: object, members: Mapping[str, type[object]]) -> JsonData:
    kind = next(tag for tag, member in members.items() if type(value) is member)
    data = to_json_data(value, record_type(type(value)))
    assert isinstance(data, dict)
    return {KIND: kind, **data}


def input_to_data(session_input: SessionInput) -> dict[str, JsonData]:
    """The JSON data of one input (see the module docstring)."""
    cls = type(session_input)
    data: dict[str, JsonData] = {KIND: _KIND_OF[cls]}
    for name, codec in _fields_of(cls):
        value = getattr(session_input, name)
        data[name] = to_json_data(value, codec) if isinstance(codec, WireType) else _member_to_data(value, codec)
    return data


def _error(path: str, expected: str, got: str) -> Failure[WireError]:
    return Failure(WireError(type_name=TYPE_NAME, path=path, expected=expected, got=got))


def _tagged(data: object, members: Mapping[str, type[object]], path: str) -> Result[tuple[type[object], dict[str, object]], WireError]:
    """The member a tagged JSON object names, and its other fields."""
    kinds = ", ".join(f'"{kind}"' for kind in members)
    if not isinstance(data, dict):
        return _error(path, f"an object with a {KIND}", describe_found(data))
    tag = data.get(KIND)
    member = members.get(tag) if isinstance(tag, str) else None
    if member is None:
        return _error(f"{path}.{KIND}", f"one of {kinds}", describe_found(tag) if KIND in data else "nothing")
    return Success((member, {key: value for key, value in data.items() if key != KIND}))


def _field_value(data: object, codec: FieldCodec, path: str) -> Result[object, WireError]:
    if isinstance(codec, WireType):
        decoded = from_json_data(data, codec)
        if not is_successful(decoded):
            failure = decoded.failure()
            return _error(path + failure.path[1:], failure.expected, failure.got)
        return Success(decoded.unwrap())
    tagged = _tagged(data, codec, path)
    if not is_successful(tagged):
        return Failure(tagged.failure())
    member, fields = tagged.unwrap()
    return _field_value(fields, record_type(member), path)


def input_from_data(data: object) -> Result[SessionInput, WireError]:
    """Decode one input's JSON data (as ``json.loads`` gives it)."""
    tagged = _tagged(data, INPUT_KINDS, "$")
    if not is_successful(tagged):
        return Failure(tagged.failure())
    cls, fields = tagged.unwrap()
    codecs = dict(_fields_of(cls))
    for name in fields:
        if name not in codecs:
            return _error(f"$.{name}", f"only the fields of {cls.__name__} ({', '.join(sorted(codecs))})",
                          "an unknown field")
    arguments: dict[str, object] = {}
    defaulted = {field.name for field in dataclasses.fields(cls)  # type: ignore[arg-type]
                 if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING}
    for name, codec in codecs.items():
        if name not in fields and name in defaulted:
            continue  # a field added later (with its default) is absent from inputs exported before it
        if name not in fields:
            return _error(f"$.{name}", "a value", "nothing (the field is missing)")
        value = _field_value(fields[name], codec, f"$.{name}")
        if not is_successful(value):
            return Failure(value.failure())
        arguments[name] = value.unwrap()
    try:
        # A dataclass input's __init__ takes its fields as keywords, each decoded by its own type.
        return Success(typing.cast(SessionInput, cls(**arguments)))
    except (TypeError, ValueError) as error:
        return _error("$", f"a valid {cls.__name__}", f"a value its constructor refused: {error}")


__all__ = ["INPUT_KINDS", "input_from_data", "input_kind", "input_to_data"]
