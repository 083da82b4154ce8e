"""Gather what one invocation can see from its Dex Context: the ``SessionState``, and what its wait
delivered or its failure route received.

Singleton Attributes and Channel sizes reach every invocation; AttributeMaps only as far as the
invocation loaded them (whole maps or single instances): ``gather_for`` reads what one Step method or
RPC loads from its row of the flow table (``MethodAccess``). The parts not loaded stay empty, and the
reducer of that Step never reads them. ``consumed_messages``, ``consumed_resolutions`` and
``recovery_error_of`` read the rest of what a Step's started input reports.

Invariant: a stored value that cannot be decoded raises ``StoredValueError`` naming the persisted
name (and map key), never a partial state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TypeVar

from dex import AttributeMap, AttributeMapNotLoadedError, Context, FlowStatus, SubFlow, ValueMappingError
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from dex_agents.pure.flow.rows import MapInstanceRef, MethodAccess
from dex_agents.pure.values.persistence import MapName
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.reducers import SKIPPED, sub_agent_result_of
from dex_agents.pure.machine.step_inputs import Invocation, RecoveryError, SubAgentEnded
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentMessage,
    AgentUsage,
    AgentUserMessage,
)
from dex_agents.shell.codecs import StoredValueError
from dex_agents.shell.definitions import (
    AGENT_MESSAGES,
    AGENT_STATE,
    AGENT_TOOL_CALLS,
    AGENT_USAGE,
    COMPACTION_REQUESTED,
    FRAMEWORK_RUN_STATE,
    HISTORY_SUMMARY,
    INTERRUPT_RESOLUTIONS,
    PENDING_INTERRUPTS,
    QUEUED_USER_MESSAGES,
    TOOL_CALL_CANCELLATIONS,
    TURN_CANCELLATION,
    TURN_MODEL_CALL_COUNT,
    UNKNOWN_TOOL_OUTCOMES,
    USER_MESSAGE_RECEIPTS,
)

T = TypeVar("T")


def read_stored(what: str, read: Callable[[], T]) -> T | None:
    """Run one read of a stored value (``None`` when absent: Dex reads an absent value as ``None``);
    a decoding failure becomes ``StoredValueError`` naming ``what``."""
    try:
        return read()
    except (ValueMappingError, StoredValueError) as error:
        detail = error.detail if isinstance(error, ValueMappingError) else str(error)
        raise StoredValueError(f"stored {what} cannot be decoded: {detail}") from error


def _instances(context: Context, definition: AttributeMap[T], keys: Iterable[str]) -> PMap[str, T]:
    """The instances of ``definition`` keyed by ``keys`` that hold a value."""
    found: dict[str, T] = {}
    for key in keys:
        value = read_stored(f"{definition.name}/{key}", partial(definition.get, context, key))
        if value is not None:
            found[key] = value
    return pmap(found)


def _loaded(context: Context, definition: AttributeMap[T], loaded_maps: frozenset[MapName],
            instances: tuple[MapInstanceRef, ...]) -> PMap[str, T]:
    """The instances of ``definition`` the method loaded (the whole map, or the instances it named)."""
    name = MapName(definition.name)
    if name in loaded_maps:
        return _instances(context, definition, definition.get_all_instance_keys(context))
    return _instances(context, definition, (ref.key for ref in instances if ref.name is name))


def _caller_loaded(context: Context, definition: AttributeMap[T], keys: Iterable[str], rpc: str,
                   client_method: str) -> PMap[str, T]:
    """The instances keyed by ``keys`` of a map the RPC ``rpc``'s caller locks and loads
    (``RPCInvokeOptions``; ``client_method`` does this); a ``RuntimeError`` when it did not."""
    found: dict[str, T] = {}
    for key in keys:
        try:
            value = read_stored(f"{definition.name}/{key}", partial(definition.get, context, key))
        except AttributeMapNotLoadedError as error:
            raise RuntimeError(
                f"{rpc} needs the {definition.name}/{key} instance loaded by its caller (RPCInvokeOptions; "
                f"{client_method} does this)") from error
        if value is not None:
            found[key] = value
    return pmap(found)


def gather_state(
    context: Context,
    *,
    whole_maps: Iterable[MapName] = (),
    instances: Iterable[MapInstanceRef] = (),
    messages: PVector[AgentMessage] | None = None,
) -> SessionState:
    """The session state visible to ``context``, given the maps and instances it loaded (``messages``:
    the ``AgentMessages`` already read through the Worker's cache, ``shell.history``)."""
    loaded_maps = frozenset(whole_maps)
    instances = tuple(instances)  # read once per map below
    if messages is None:
        messages = pvector()
    elif MapName.AGENT_MESSAGES in loaded_maps:
        loaded_maps -= {MapName.AGENT_MESSAGES}
    if MapName.AGENT_MESSAGES in loaded_maps:
        stored = _instances(context, AGENT_MESSAGES, AGENT_MESSAGES.get_all_instance_keys(context))
        messages = pvector(sorted(stored.values(), key=lambda message: message.sequence))
    tool_calls = _loaded(context, AGENT_TOOL_CALLS, loaded_maps, instances)
    pending = read_stored(PENDING_INTERRUPTS.name, lambda: PENDING_INTERRUPTS.get(context))
    usage = read_stored(AGENT_USAGE.name, lambda: AGENT_USAGE.get(context))
    return SessionState(
        agent_state=read_stored(AGENT_STATE.name, lambda: AGENT_STATE.get(context)),
        messages=messages,
        framework_run_state=read_stored(FRAMEWORK_RUN_STATE.name, lambda: FRAMEWORK_RUN_STATE.get(context)) or None,
        tool_calls=tool_calls,
        pending_interrupts=pvector() if pending is None else pending,
        usage=AgentUsage() if usage is None else usage,
        queued_message_count=QUEUED_USER_MESSAGES.size(context),
        turn_model_call_count=read_stored(TURN_MODEL_CALL_COUNT.name, lambda: TURN_MODEL_CALL_COUNT.get(context)) or 0,
        user_message_receipts=_caller_loaded(
            context, USER_MESSAGE_RECEIPTS, (ref.key for ref in instances if ref.name is MapName.USER_MESSAGE_RECEIPTS),
            "send_user_message_once", "SessionClient.send"),
        unknown_tool_outcomes=_caller_loaded(
            context, UNKNOWN_TOOL_OUTCOMES, (ref.key for ref in instances if ref.name is MapName.UNKNOWN_TOOL_OUTCOMES),
            "resolve_tool_outcome", "SessionClient.resolve_tool_outcome"),
        history_summary=read_stored(HISTORY_SUMMARY.name, lambda: HISTORY_SUMMARY.get(context)),
        turn_cancellation=read_stored(TURN_CANCELLATION.name, lambda: TURN_CANCELLATION.get(context)),
        tool_call_cancellations=_loaded(context, TOOL_CALL_CANCELLATIONS, loaded_maps, instances),
        compaction_requested=bool(read_stored(COMPACTION_REQUESTED.name, lambda: COMPACTION_REQUESTED.get(context))),
    )


def gather_for(context: Context, access: MethodAccess, key: str | None = None,
               messages: PVector[AgentMessage] | None = None) -> SessionState:
    """The session state visible to a Step method or RPC that loads ``access`` (the instances keyed by
    ``key``: a tool call Step's tool call ID, ``send_user_message_once``'s message ID; ``messages``: a
    cached map's messages, read through the Worker's cache)."""
    return gather_state(context, whole_maps=access.maps, instances=access.instances(key), messages=messages)


def consumed_messages(context: Context) -> PVector[AgentUserMessage]:
    """The ``QueuedUserMessages`` messages the Step's wait consumed."""
    consumed = read_stored(QUEUED_USER_MESSAGES.name, lambda: QUEUED_USER_MESSAGES.results(context))
    return pvector(consumed or ())


def consumed_resolutions(context: Context, state: SessionState) -> PVector[AgentInterruptResolution]:
    """The resolutions the Step's wait consumed from the interrupt instances of the records it loaded."""
    consumed: list[AgentInterruptResolution] = []
    for record in state.records_in_deferral_order():
        interrupt_id = record.interrupt_id
        if interrupt_id is not None:
            what = f"{INTERRUPT_RESOLUTIONS.name}/{interrupt_id}"
            consumed.extend(read_stored(what, partial(INTERRUPT_RESOLUTIONS.results, context, interrupt_id)) or ())
    return pvector(consumed)


def child_outcome(context: Context, invocation: Invocation, tool_call_id: str) -> SubAgentEnded:
    """How ``AwaitSubAgent``'s child session closed, as its wait's SubFlow result reports it (no child
    when the wait was skipped)."""
    try:
        result = SubFlow.get_condition_results(context)
    except ValueError:
        return SubAgentEnded(invocation=invocation, tool_call_id=tool_call_id, child_session_id=None,
                             child_status=SKIPPED, result=None)
    output = None
    if result.status is FlowStatus.COMPLETED and result.completions:
        output = sub_agent_result_of(result.single_output(str))
    return SubAgentEnded(invocation=invocation, tool_call_id=tool_call_id, child_session_id=SubFlow.get_flow_id(context),
                         child_status=result.status.name, result=output)


def recovery_error_of(context: Context) -> RecoveryError | None:
    """The failure that routed the Step here, as Dex reported it (``None`` outside a failure route)."""
    info = context.recovery_error
    if info is None:
        return None
    return RecoveryError(detail=info.detail or "", error_type=info.error_type or "")


__all__ = [
    "child_outcome",
    "consumed_messages",
    "consumed_resolutions",
    "gather_for",
    "gather_state",
    "read_stored",
    "recovery_error_of",
]
