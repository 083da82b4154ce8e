"""Sub-agents (ours): a tool call of the parent session runs as a child session of another agent, a
Dex SubFlow of the parent, in the call's own Step ``AwaitSubAgent``.

Parent side:

* ``SubAgentWaitStarted`` (``AwaitSubAgent``'s ``wait_for``): a pending sub-agent record waits for
  its child session (``WaitForChildSession``: the child's Flow type, and a start input whose
  ``initial_message`` is the call's ``task`` argument and whose parent fields name this session and
  call). Dex gives the child its Flow ID from this session's ID and the Step execution of the call
  (``SubFlow:<session>-<step execution>-0``): the Step execution exists once per call, so a retried or
  re-delivered wait finds the same child. A record that is missing, final or not a sub-agent's, or a
  call without a usable ``task``, skips the wait.
* ``SubAgentEnded`` (``execute``): ``tool_call_started``, the child's usage added to this session's
  (``usage_recorded``), ``dex_agents.sub_agent_ended``, then the record is final: ``succeeded`` with
  the child's final text, ``failed`` with the child turn's error (or its cancellation), or (the child closed without a
  result: failed, canceled, terminated, timed out) the effect's crash status (``failed`` for a
  ``read``, ``outcome_unknown`` for a write: the child may have written). A skipped wait records
  ``failed`` (the arguments lacked a ``task``).

Child side: a session whose ``AgentState`` names a parent ends its Flow when its turn ends
(``turn_end``: ``CompleteSession`` with its ``SubAgentResult``) instead of awaiting another message.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Final

from dex_agents.pure.machine import events
from dex_agents.pure.machine.effects import SetAttribute, StepEffect, WriteEvent
from dex_agents.pure.machine.endings import CompleteSession, Decision, SkipWait, WaitForChildSession
from dex_agents.pure.machine.policies import crash_status
from dex_agents.pure.machine.reducers.common import dead_end, finalize_record, go_to
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import SubAgentEnded, SubAgentWaitStarted
from dex_agents.pure.machine.transition import StepTransition, WaitTransition, reject, wait
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.values.persistence import AGENT_USAGE, StepType
from dex_agents.pure.wire import decode
from dex_agents.pure.values.session import (
    AgentSessionStartInput,
    AgentState,
    AgentToolCall,
    AgentUsage,
    SubAgentResult,
    ToolCallStatus,
)

TASK_ARGUMENT: Final = "task"
"""The one argument of a sub-agent tool: the task the child session gets as its first message."""

MISSING_TASK: Final = "the sub-agent call needs a JSON object argument with a non-empty string 'task'"
SKIPPED: Final = "SKIPPED"
"""``SubAgentEnded.child_status`` when the wait was skipped (no child session started)."""
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELED: Final = "canceled"


def task_of(arguments: str) -> str | None:
    """The ``task`` of a sub-agent call's arguments, ``None`` when there is no non-blank string task."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return None
    task = parsed.get(TASK_ARGUMENT) if isinstance(parsed, dict) else None
    return task if isinstance(task, str) and task.strip() else None


def sub_agent_result_of(text: str) -> SubAgentResult | None:
    """The ``SubAgentResult`` a child session completed with (its wire JSON), ``None`` when ``text`` is not one."""
    return decode(text, SubAgentResult).value_or(None)


def _open_sub_agent_record(state: SessionState, tool_call_id: str) -> AgentToolCall | None:
    record = state.tool_calls.get(tool_call_id)
    if record is None or record.status is not ToolCallStatus.PENDING or record.sub_agent is None:
        return None
    return record


def reduce_sub_agent_wait_started(state: SessionState, started: SubAgentWaitStarted) -> WaitTransition:
    """``AwaitSubAgent``'s ``wait_for``: the child session to wait on, or nothing (see the module)."""
    record = _open_sub_agent_record(state, started.tool_call_id)
    task = None if record is None else task_of(record.arguments)
    if record is None or record.sub_agent is None or task is None:
        return wait(state, SkipWait())
    start_input = AgentSessionStartInput(initial_message=task, parent_session_id=started.invocation.flow_id,
                                         parent_tool_call_id=record.tool_call_id)
    return wait(state, WaitForChildSession(flow_type=record.sub_agent, start_input=start_input))


def reduce_sub_agent_ended(state: SessionState, ended: SubAgentEnded) -> StepTransition:
    """``AwaitSubAgent``'s ``execute``: record the child's outcome and roll its usage up (see the
    module). A record already final or missing ends without effect; a record that is not a
    sub-agent's is rejected (it must run in its effect's tool Step)."""
    record = state.tool_calls.get(ended.tool_call_id)
    if record is None or record.status.is_final:
        return dead_end(state)
    if record.sub_agent is None or record.status is not ToolCallStatus.PENDING:
        return reject(state, f"tool call {ended.tool_call_id!r} is not a sub-agent call ready to run")
    invocation = ended.invocation
    before: list[StepEffect] = [WriteEvent(event=events.tool_call_started(invocation, record))]
    child = replace(record, child_session_id=ended.child_session_id)
    result = ended.result
    if ended.child_session_id is None:
        return finalize_record(state, invocation, replace(child, status=ToolCallStatus.FAILED, error=MISSING_TASK),
                               before)
    usage = AgentUsage() if result is None else result.usage
    total = add_agent_usage(state.usage, usage)
    rolled_up = replace(state, usage=total)
    before += [SetAttribute.of(AGENT_USAGE, total),
               WriteEvent(event=events.usage_recorded(record.turn_id, invocation, usage, total)),
               WriteEvent(event=events.sub_agent_ended(invocation, child, ended.child_status, usage))]
    if result is None:
        error = f"the sub-agent's child session {ended.child_session_id} ended {ended.child_status} without a result"
        final = replace(child, status=crash_status(record.effect), error=error)
    elif result.status == COMPLETED:
        final = replace(child, status=ToolCallStatus.SUCCEEDED, output=result.text)
    else:
        final = replace(child, status=ToolCallStatus.FAILED, error=result.text)
    return finalize_record(rolled_up, invocation, final, before)


def turn_end(agent_state: AgentState, status: str, text: str, usage: AgentUsage) -> Decision:
    """Where a session goes when its turn ends: ``AwaitUserMessage``, or, for a sub-agent's child
    session, the end of its Flow with the turn's result (``status`` ``completed``/``failed``/
    ``canceled``, ``text``: the final text, the error or the cancellation, ``usage``: the session's
    whole usage)."""
    if agent_state.parent_session_id is None:
        return go_to(StepType.AWAIT_USER_MESSAGE)
    return CompleteSession(result=SubAgentResult(status=status, text=text, usage=usage))


__all__ = [
    "CANCELED",
    "COMPLETED",
    "FAILED",
    "MISSING_TASK",
    "SKIPPED",
    "TASK_ARGUMENT",
    "reduce_sub_agent_ended",
    "reduce_sub_agent_wait_started",
    "sub_agent_result_of",
    "task_of",
    "turn_end",
]
