"""Building blocks shared by the Step reducers: appending messages, starting, ending and clearing a turn,
finalizing a tool call record, and reading an interrupt's deadline.

Invariants kept here for every reducer:
    * A new message gets sequence ``message_count + 1`` and ``message_count`` moves with it, so
      sequences start at 1 with no gaps even when the Step did not load ``AgentMessages``.
    * A turn starts as ``turn-<turn_count + 1>`` and its user message is stored before its first
      ``RunModel``.
    * Finalizing a record writes it, writes ``tool_call_finished``, publishes exactly one
      ``ToolCallCompleted`` and dead-ends the branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyrsistent import pmap, pvector

from dex_agents.pure.machine import events
from dex_agents.pure.machine.deadlines import parse_instant
from dex_agents.pure.machine.effects import (
    DeleteAttribute,
    DeleteMapInstance,
    PublishToChannel,
    SetAttribute,
    SetMapInstance,
    StepEffect,
    Write,
    WriteEvent,
)
from dex_agents.pure.machine.endings import DeadEnd, GoToSteps
from dex_agents.pure.machine.keys import MAX_MESSAGE_SEQUENCE, message_sequence_key, turn_id_for
from dex_agents.pure.values.persistence import (
    AGENT_MESSAGES,
    AGENT_STATE,
    AGENT_TOOL_CALLS,
    FRAMEWORK_RUN_STATE,
    PENDING_INTERRUPTS,
    TOOL_CALL_RESULTS,
    TURN_MODEL_CALL_COUNT,
    UNKNOWN_TOOL_OUTCOMES,
    StepType,
)
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import Invocation
from dex_agents.pure.flow.step_options import MovementInput, move_to
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.machine.validation import describe_defects, validate_user_message
from dex_agents.pure.values.session import (
    AgentInterrupt,
    AgentMessage,
    AgentState,
    AgentStatus,
    AgentToolCall,
    FrameworkMessage,
    ToolCallCompleted,
    ToolCallStatus,
)

NOT_STARTED = "the session has not started"
NO_RUNNING_TURN = "no turn is running"


def go_to(step_type: StepType, step_input: MovementInput = None) -> GoToSteps:
    """One movement to ``step_type`` with its complete options."""
    return GoToSteps(movements=pvector([move_to(step_type, step_input)]))


def set_agent_state(agent_state: AgentState) -> Write:
    """Write the ``AgentState`` Attribute."""
    return SetAttribute.of(AGENT_STATE, agent_state)


def set_pending_interrupts(state: SessionState) -> Write:
    """Write the state's ``PendingInterrupts``."""
    return SetAttribute.of(PENDING_INTERRUPTS, state.pending_interrupts)


def room_for_messages(agent_state: AgentState, count: int) -> str | None:
    """``None`` when ``count`` more messages fit in 12-digit sequence keys, else the error text."""
    if agent_state.message_count + count > MAX_MESSAGE_SEQUENCE:
        return f"message sequence would pass {MAX_MESSAGE_SEQUENCE}"
    return None


def user_message_problem(agent_state: AgentState, message: FrameworkMessage) -> str | None:
    """``None`` when the runner-built ``message`` is a valid user message with room for it, else the error text."""
    defects = validate_user_message(message)
    if defects:
        return describe_defects(defects)
    return room_for_messages(agent_state, 1)


def append_messages(
    state: SessionState, agent_state: AgentState, turn_id: str, new_messages: Sequence[FrameworkMessage]
) -> tuple[SessionState, AgentState, list[Write]]:
    """Append ``new_messages`` to the turn, in order, after ``agent_state.message_count``.

    Returns the state with the messages, the ``AgentState`` with the new ``message_count`` (not yet
    written), and one ``SetMapInstance`` per message. The caller checked ``room_for_messages``.
    """
    stored: list[AgentMessage] = []
    for offset, message in enumerate(new_messages, start=1):
        stored.append(
            AgentMessage(
                sequence=agent_state.message_count + offset,
                turn_id=turn_id,
                role=message.role,
                text=message.text,
                tool_call_id=message.tool_call_id,
                tool_name=message.tool_name,
                tool_arguments=message.tool_arguments,
                tool_output=message.tool_output,
                framework_item=message.framework_item,
            )
        )
    effects: list[Write] = [
        SetMapInstance.of(AGENT_MESSAGES, message_sequence_key(message.sequence), message)
        for message in stored
    ]
    new_agent_state = replace(agent_state, message_count=agent_state.message_count + len(stored))
    return replace(state, messages=state.messages.extend(stored)), new_agent_state, effects


def start_turn(
    state: SessionState, agent_state: AgentState, invocation: Invocation, user_message: FrameworkMessage
) -> StepTransition:
    """Start ``turn-<turn_count + 1>`` with ``user_message`` and move to ``RunModel``.

    Effects: the message, ``AgentState`` (``running_model``), ``turn_started``, ``GoToSteps(RunModel)``.
    Rejects a non-user message (a runner defect) and a full sequence space; the state is unchanged then.
    """
    problem = user_message_problem(agent_state, user_message)
    if problem is not None:
        return reject(state, problem)
    turn_number = agent_state.turn_count + 1
    turn_id = turn_id_for(turn_number)
    state, agent_state, message_effects = append_messages(state, agent_state, turn_id, [user_message])
    agent_state = replace(
        agent_state,
        status=AgentStatus.RUNNING_MODEL,
        turn_count=turn_number,
        current_turn_id=turn_id,
        current_turn_sequence=agent_state.message_count,
    )
    return step(
        replace(state, agent_state=agent_state),
        [
            *message_effects,
            set_agent_state(agent_state),
            WriteEvent(event=events.turn_started(turn_id, invocation, agent_state.message_count)),
        ],
        go_to(StepType.RUN_MODEL),
    )


def turn_ended(agent_state: AgentState, failure: str | None) -> AgentState:
    """``agent_state`` once the running turn ended: waiting for a user message, no turn running.

    A ``failure`` counts a failed turn and becomes ``last_turn_error``; ``None`` counts a completed
    turn and clears ``last_turn_error``.
    """
    return replace(
        agent_state,
        status=AgentStatus.WAITING_FOR_USER_MESSAGE,
        current_turn_id=None,
        current_turn_sequence=None,
        completed_turn_count=agent_state.completed_turn_count + (1 if failure is None else 0),
        failed_turn_count=agent_state.failed_turn_count + (0 if failure is None else 1),
        last_turn_error=failure,
    )


def clear_turn(state: SessionState, turn_id: str) -> tuple[SessionState, list[Write]]:
    """Drop the turn's run state, model call count, tool call records and any interrupt of the turn
    left pending.

    Returns the state without them and the ``DeleteAttribute`` / ``DeleteMapInstance`` /
    ``SetAttribute`` effects (only for what was there). ``AgentState`` is the caller's to write.
    """
    effects: list[Write] = []
    if state.framework_run_state is not None:
        effects.append(DeleteAttribute.of(FRAMEWORK_RUN_STATE))
    if state.turn_model_call_count != 0:
        effects.append(DeleteAttribute.of(TURN_MODEL_CALL_COUNT))
    effects.extend(
        DeleteMapInstance.of(AGENT_TOOL_CALLS, record.tool_call_id)
        for record in state.records_in_deferral_order()
    )
    remaining = pvector(i for i in state.pending_interrupts if i.turn_id != turn_id)
    cleared = replace(
        state, framework_run_state=None, turn_model_call_count=0, tool_calls=pmap(), pending_interrupts=remaining
    )
    if len(remaining) != len(state.pending_interrupts):
        effects.append(set_pending_interrupts(cleared))
    return cleared, effects


def unknown_outcome_writes(record: AgentToolCall) -> list[Write]:
    """The ``UnknownToolOutcomes`` instance of ``record`` when it is ``outcome_unknown`` (kept after the
    turn, until ``resolve_tool_outcome`` settles it), else nothing."""
    if record.status is not ToolCallStatus.OUTCOME_UNKNOWN:
        return []
    return [SetMapInstance.of(UNKNOWN_TOOL_OUTCOMES, record.tool_call_id, record)]


def record_writes(record: AgentToolCall) -> list[Write]:
    """The writes of a tool call record: its ``AgentToolCalls`` instance, then its
    ``unknown_outcome_writes``."""
    return [SetMapInstance.of(AGENT_TOOL_CALLS, record.tool_call_id, record), *unknown_outcome_writes(record)]


def kept_unknown(state: SessionState, record: AgentToolCall) -> SessionState:
    """``state`` holding ``record`` in ``unknown_tool_outcomes`` too when it is ``outcome_unknown`` (as
    ``record_writes`` stores it), so a replay's folded state has what ``resolve_tool_outcome`` loads."""
    if record.status is not ToolCallStatus.OUTCOME_UNKNOWN:
        return state
    return replace(state, unknown_tool_outcomes=state.unknown_tool_outcomes.set(record.tool_call_id, record))


def finalize_record(
    state: SessionState, invocation: Invocation, final_record: AgentToolCall, before: Sequence[StepEffect] = ()
) -> StepTransition:
    """Store a record that became final, write ``tool_call_finished``, publish its one
    ``ToolCallCompleted`` and dead-end. ``before`` are effects to perform first. An ``outcome_unknown``
    record is also kept in ``UnknownToolOutcomes`` (after its turn, until ``resolve_tool_outcome``)."""
    new_state = kept_unknown(replace(state, tool_calls=state.tool_calls.set(final_record.tool_call_id, final_record)),
                             final_record)
    return step(
        new_state,
        [
            *before,
            *record_writes(final_record),
            WriteEvent(event=events.tool_call_finished(invocation, final_record)),
            PublishToChannel.of(TOOL_CALL_RESULTS, ToolCallCompleted(tool_call_id=final_record.tool_call_id)),
        ],
        DeadEnd(),
    )


def dead_end(state: SessionState) -> StepTransition:
    """End the branch with no effect (state unchanged)."""
    return step(state, [], DeadEnd())


def interrupt_deadline(interrupt: AgentInterrupt) -> int | None:
    """The interrupt's deadline in epoch milliseconds, ``None`` without one.

    Raises:
        ValueError: the stored deadline is not an ISO-8601 instant.
    """
    return None if interrupt.deadline is None else parse_instant(interrupt.deadline)


__all__ = [
    "NOT_STARTED",
    "NO_RUNNING_TURN",
    "append_messages",
    "clear_turn",
    "dead_end",
    "finalize_record",
    "kept_unknown",
    "record_writes",
    "go_to",
    "interrupt_deadline",
    "room_for_messages",
    "set_agent_state",
    "set_pending_interrupts",
    "start_turn",
    "turn_ended",
    "unknown_outcome_writes",
    "user_message_problem",
]
