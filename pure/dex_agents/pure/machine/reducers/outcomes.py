"""The reducer of ``resolve_tool_outcome`` (ours): an operator settles a call whose outcome is unknown.

Reads the call's ``UnknownToolOutcomes`` instance and its ``AgentToolCalls`` instance (both loaded by
the caller: ``rpc_instance_key``), and ``queued_message_count``.

* Refused (``RefuseRpc``, nothing written), with the reason: a blank ``tool_call_id`` or ``resolver``,
  a ``status`` other than ``succeeded``/``failed``, a blank message with ``failed``, text that cannot
  be encoded; a call of this session with no unknown outcome (no such call, or its turn ended with a
  known outcome); a running turn's call whose status is not ``outcome_unknown`` (``pending`` while its
  reconcile check runs); a call already settled (by whom and when).
* Else, in one commit: the ``UnknownToolOutcomes`` record becomes ``succeeded`` (the output) or
  ``failed`` (the message) with its ``settlement`` (``settled_by="operator"``, the resolver, the reason,
  the time, the error that had left it unknown): the audit; and the message
  ``settled_by_operator_message`` is queued as the session's next user message, so the next model call
  reads the settled result and that an operator settled it (it starts a turn, or waits for the running
  one to end). Answers ``true``. A settled call is never settled again.

The running turn's own record (``AgentToolCalls``) is left as the model read it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import PublishToChannel, SetMapInstance
from dex_agents.pure.machine.reducers.session import is_blank
from dex_agents.pure.machine.rpc_calls import ResolveToolOutcomeCalled
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.texts import settled_by_operator_message
from dex_agents.pure.machine.transition import RpcTransition, answer, refuse
from dex_agents.pure.machine.validation import first_lone_surrogate_problem
from dex_agents.pure.values.persistence import QUEUED_USER_MESSAGES, UNKNOWN_TOOL_OUTCOMES
from dex_agents.pure.values.rpc import ResolveToolOutcomeInput
from dex_agents.pure.values.session import AgentToolCall, AgentUserMessage, ToolCallSettlement, ToolCallStatus

SETTLED_STATUSES: Final = (ToolCallStatus.SUCCEEDED.value, ToolCallStatus.FAILED.value)
"""What an operator may settle an unknown outcome as."""


def resolution_problem(request: ResolveToolOutcomeInput) -> str | None:
    """Why ``request`` is refused whatever the session holds, or ``None``."""
    problem = first_lone_surrogate_problem(((request.tool_call_id, "tool_call_id"),
                                            (request.output_or_message, "output_or_message"),
                                            (request.resolver, "resolver"), (request.reason, "reason")))
    if problem is not None:
        return problem
    if is_blank(request.tool_call_id):
        return "tool_call_id must not be blank"
    if request.status not in SETTLED_STATUSES:
        return f"status must be 'succeeded' or 'failed', got {request.status!r}"
    if is_blank(request.resolver):
        return "resolver must name who settles the outcome (it is kept in the audit)"
    if request.status == ToolCallStatus.FAILED.value and is_blank(request.output_or_message):
        return "a failed outcome needs its message (output_or_message)"
    return None


def _not_settleable(state: SessionState, tool_call_id: str) -> str:
    """Why the call ``tool_call_id``, which has no unknown outcome on record, cannot be settled."""
    running = state.tool_calls.get(tool_call_id)
    if running is None:
        return (f"no tool call {tool_call_id!r} of this session has an unknown outcome (there is no such call, "
                "or its turn ended with its outcome known)")
    if running.unknown_error is not None and not running.status.is_final:
        return (f"tool call {tool_call_id!r} is pending: its outcome became unknown and its tool policy's "
                "reconcile check is still running; settle it if that check leaves it outcome_unknown")
    return f"tool call {tool_call_id!r} is {running.status.value}, not outcome_unknown; only an unknown outcome is settled"


def _already_settled(record: AgentToolCall) -> str:
    settlement = record.settlement
    by = "" if settlement is None else f" by {settlement.resolver or settlement.settled_by} at {settlement.settled_at}"
    return f"tool call {record.tool_call_id!r} was already settled as {record.status.value}{by}; it is settled once"


def reduce_resolve_tool_outcome(state: SessionState, called: ResolveToolOutcomeCalled) -> RpcTransition:
    """``resolve_tool_outcome``: refuse (see the module docstring), else settle the call and queue the
    message that tells the model (``true``)."""
    request = called.input
    problem = resolution_problem(request)
    if problem is not None:
        return refuse(state, problem)
    record = state.unknown_tool_outcomes.get(request.tool_call_id)
    if record is None:
        return refuse(state, _not_settleable(state, request.tool_call_id))
    if record.status is not ToolCallStatus.OUTCOME_UNKNOWN:
        return refuse(state, _already_settled(record))
    settlement = ToolCallSettlement(settled_by="operator", resolver=request.resolver, reason=request.reason,
                                    settled_at=format_instant(called.now_ms), unknown_error=record.error)
    if request.status == ToolCallStatus.SUCCEEDED.value:
        settled = replace(record, status=ToolCallStatus.SUCCEEDED, output=request.output_or_message, error=None,
                          settlement=settlement)
    else:
        settled = replace(record, status=ToolCallStatus.FAILED, error=request.output_or_message, settlement=settlement)
    note = AgentUserMessage(text=settled_by_operator_message(settled))
    resolved = replace(state, unknown_tool_outcomes=state.unknown_tool_outcomes.set(request.tool_call_id, settled),
                       queued_message_count=state.queued_message_count + 1)
    return answer(resolved, True, [SetMapInstance.of(UNKNOWN_TOOL_OUTCOMES, request.tool_call_id, settled),
                                   PublishToChannel.of(QUEUED_USER_MESSAGES, note)])


__all__ = ["SETTLED_STATUSES", "reduce_resolve_tool_outcome", "resolution_problem"]
