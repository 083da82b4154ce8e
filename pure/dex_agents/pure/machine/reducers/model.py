"""Reducers of ``RunModel``: the Step asks for the model call; its outcome ends the turn or defers its
tool calls; a model call that raised fails the attempt or, when no retry can help, the turn.

Reads: ``agent_state``, ``messages``, ``usage``, ``framework_run_state``, ``turn_model_call_count``,
every ``tool_calls`` record of the turn and ``pending_interrupts`` (``RunModel`` loads the whole
``AgentMessages`` and ``AgentToolCalls`` maps).

* ``ModelStepStarted``: ask for the model call with the turn's view (``CallModel``: the messages after
  the history summary's boundary, the summary, the run state, the records in deferral order), or
  compact first (``reducers.compaction``); rejected when no model call should run.
* ``TurnCompleted``: append the messages, add the usage, clear the turn (run state, model call count,
  records), ``usage_recorded`` then ``turn_completed`` -> ``AwaitUserMessage``.
* ``ToolCallsRequested``: store the run state, the turn's model call count (``TurnModelCallCount``),
  one record per call (``awaiting_approval`` when the call requires approval, else ``pending``), one
  interrupt per approval, add the usage; status ``running_tools``; ``usage_recorded``, then per call
  ``tool_call_deferred`` (and ``interrupt_raised``) -> one Step per call plus
  ``ResumeTurn(len(calls))``, all at once.
* ``ToolCallsRequested`` by the call that reaches ``max_model_calls_per_turn``: add the usage,
  ``usage_recorded``, defer nothing and fail the turn (``turn.ask_to_fail_turn``).
* ``ModelCallFailed``: ``dex_agents.model_call_failed``, then ``FailAttempt`` with the error (Dex
  retries, then ``RecordTurnFailure``); ``retrying`` is true below the model call's attempt count
  (``SessionConfig.model_attempts``: ``model_retry``'s, else ``RunModel``'s row's). A retry-after the
  error carried goes with ``FailAttempt`` (Dex waits that long before the next attempt). A
  non-retryable error writes the event with ``retrying`` false and fails the turn at once.
* A runner defect (see ``validation``) rejects the attempt and stores nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never

from pyrsistent import pvector

from dex_agents.pure.machine import events
from dex_agents.pure.machine.deadlines import deadline_ms, format_instant
from dex_agents.pure.machine.effects import SetAttribute, SetMapInstance, StepEffect, WriteEvent
from dex_agents.pure.machine.endings import CallModel, FailAttempt, GoToSteps
from dex_agents.pure.machine.keys import idempotency_key, interrupt_id_for
from dex_agents.pure.values.persistence import (
    AGENT_TOOL_CALLS,
    AGENT_USAGE,
    FRAMEWORK_RUN_STATE,
    TURN_MODEL_CALL_COUNT,
    StepType,
)
from dex_agents.pure.machine.policies import call_step_type
from dex_agents.pure.machine.reducers.subagents import COMPLETED, turn_end
from dex_agents.pure.machine.reducers.common import (
    NO_RUNNING_TURN,
    NOT_STARTED,
    append_messages,
    clear_turn,
    go_to,
    room_for_messages,
    set_agent_state,
    set_pending_interrupts,
    turn_ended,
)
from dex_agents.pure.values.session import CompactionTrigger, MessageRole
from dex_agents.pure.machine.reducers.compaction import compaction_before_call, reactive_compaction, recent_part_too_long
from dex_agents.pure.machine.reducers.turn import ask_to_fail_turn
from dex_agents.pure.values.runner import DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import Invocation, ModelCallFailed, ModelCallFinished, ModelStepStarted
from dex_agents.pure.flow.step_options import StepMovement, move_to
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.machine.texts import model_call_cap_error
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.machine.validation import describe_defects, validate_turn_outcome
from dex_agents.pure.values.session import AgentInterrupt, AgentState, AgentStatus, AgentToolCall, ToolCallStatus, text_sha256


def _running_model(state: SessionState) -> tuple[AgentState, str] | StepTransition:
    """The ``AgentState`` and turn ID of a running model call, or the rejection when none runs."""
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    turn_id = agent_state.current_turn_id
    if turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    if agent_state.status is not AgentStatus.RUNNING_MODEL:
        return reject(state, f"the model does not run now (status {agent_state.status.value})")
    return agent_state, turn_id


def reduce_model_step_started(state: SessionState, config: SessionConfig, started: ModelStepStarted) -> StepTransition:
    """``RunModel`` began: ask for the model call with the running turn's view (``CallModel``: the
    messages after the history summary's boundary, and the summary), or first compact the history
    (``CompactHistory``: requested by ``compact_history``, or the estimated input exceeds the policy's
    ``trigger_tokens``).

    Rejects when no turn runs or the status is not ``running_model``: no runner is called then.
    """
    running = _running_model(state)
    if isinstance(running, StepTransition):
        return running
    _agent_state, turn_id = running
    trigger = compaction_before_call(state, config)
    if trigger is not None:
        return step(state, [], go_to(StepType.COMPACT_HISTORY, trigger.value))
    summary = state.history_summary
    return step(
        state,
        [],
        CallModel(
            turn_id=turn_id,
            messages=state.model_view,
            framework_run_state=state.framework_run_state,
            tool_calls=pvector(state.records_in_deferral_order()),
            history_summary=summary.text if summary else None,
        ),
    )


def reduce_model_call_finished(state: SessionState, config: SessionConfig, finished: ModelCallFinished) -> StepTransition:
    """``RunModel`` returned an outcome (see the module docstring).

    Rejects when no turn runs, the status is not ``running_model``, or the outcome has runner defects.
    """
    running = _running_model(state)
    if isinstance(running, StepTransition):
        return running
    agent_state, turn_id = running
    defects = validate_turn_outcome(finished.outcome, state.tool_calls.keys())
    if defects:
        return reject(state, describe_defects(defects))
    outcome = finished.outcome
    match outcome:
        case TurnCompleted():
            return _turn_completed(state, agent_state, turn_id, finished.invocation, outcome)
        case ToolCallsRequested():
            if state.turn_model_call_count + 1 >= config.max_model_calls_per_turn:
                return _cap_reached(state, config, finished.invocation, outcome)
            return _tool_calls_requested(state, config, agent_state, turn_id, finished.invocation, outcome)
        case _:
            assert_never(outcome)


def reduce_model_call_failed(state: SessionState, config: SessionConfig, failed: ModelCallFailed) -> StepTransition:
    """``run_model_step`` raised: write ``dex_agents.model_call_failed``, then fail the attempt (a
    retryable error) or the turn (a ``NonRetryableModelError``). A call refused as longer than the
    context window compacts the history first (``CompactHistory(reactive)``, then the call runs again)
    when the policy compacts reactively and something can be summarized; when nothing can, the turn
    fails with a note saying the recent part alone is too long (never a loop).

    Rejects when no turn runs or the status is not ``running_model``.
    """
    running = _running_model(state)
    if isinstance(running, StepTransition):
        return running
    _agent_state, turn_id = running
    invocation = failed.invocation
    compact = reactive_compaction(state, config) if failed.context_window_exceeded else None
    attempts = config.model_attempts
    retrying = bool(compact) or (failed.retryable and (attempts is None or invocation.attempt < attempts))
    written = WriteEvent(event=events.model_call_failed(turn_id, invocation, failed.error, retrying))
    if compact:
        return step(state, [written], go_to(StepType.COMPACT_HISTORY, CompactionTrigger.REACTIVE.value))
    if failed.retryable:
        return step(state, [written], FailAttempt(error=failed.error, retry_after_seconds=failed.retry_after_seconds))
    error = recent_part_too_long(failed.error, config) if compact is False else failed.error
    return ask_to_fail_turn(state, invocation, error, before=[written])


def _cap_reached(
    state: SessionState, config: SessionConfig, invocation: Invocation, outcome: ToolCallsRequested
) -> StepTransition:
    """The call that reached the cap asked for tools: record its usage, defer nothing, fail the turn."""
    error = model_call_cap_error(config.max_model_calls_per_turn)
    return ask_to_fail_turn(state, invocation, error, recorded_usage=outcome.usage)


def _turn_completed(
    state: SessionState, agent_state: AgentState, turn_id: str, invocation: Invocation, outcome: TurnCompleted
) -> StepTransition:
    no_room = room_for_messages(agent_state, len(outcome.new_messages))
    if no_room is not None:
        return reject(state, no_room)
    usage = add_agent_usage(state.usage, outcome.usage)
    appended, agent_state, message_effects = append_messages(state, agent_state, turn_id, outcome.new_messages)
    cleared, clear_effects = clear_turn(appended, turn_id)
    agent_state = turn_ended(agent_state, failure=None)
    return step(
        replace(cleared, agent_state=agent_state, usage=usage),
        [
            *message_effects,
            *clear_effects,
            SetAttribute.of(AGENT_USAGE, usage),
            set_agent_state(agent_state),
            WriteEvent(event=events.usage_recorded(turn_id, invocation, outcome.usage, usage)),
            WriteEvent(event=events.turn_completed(turn_id, invocation, len(outcome.new_messages))),
        ],
        turn_end(agent_state, COMPLETED, _final_text(outcome), usage),
    )


def _final_text(outcome: TurnCompleted) -> str:
    """The turn's last assistant text (what a sub-agent's child session answers its parent)."""
    texts = [message.text for message in outcome.new_messages if message.role is MessageRole.ASSISTANT and message.text]
    return texts[-1] if texts else ""


def _record_for(call: DeferredToolCall, turn_id: str, invocation: Invocation, deferral_order: int) -> AgentToolCall:
    requires_approval = call.policy.requires_approval
    return AgentToolCall(
        tool_call_id=call.tool_call_id,
        turn_id=turn_id,
        tool_name=call.tool_name,
        arguments=call.arguments,
        effect=call.policy.effect,
        requires_approval=requires_approval,
        deferral_order=deferral_order,
        idempotency_key=idempotency_key(invocation.flow_id, turn_id, call.tool_call_id),
        status=ToolCallStatus.AWAITING_APPROVAL if requires_approval else ToolCallStatus.PENDING,
        interrupt_id=interrupt_id_for(turn_id, call.tool_call_id) if requires_approval else None,
        output=None,
        error=None,
        rejection_message=None,
        sub_agent=call.policy.sub_agent,
    )


def interrupt_raised_by(record: AgentToolCall, deadline: str | None) -> AgentInterrupt | None:
    """The approval interrupt a deferred ``record`` raises, due at ``deadline`` (``None``: no deadline).

    ``None`` when the record has no ``interrupt_id`` (it needs no approval).
    """
    if record.interrupt_id is None:
        return None
    return AgentInterrupt(
        interrupt_id=record.interrupt_id,
        turn_id=record.turn_id,
        tool_call_id=record.tool_call_id,
        tool_name=record.tool_name,
        arguments=record.arguments,
        effect=record.effect,
        deadline=deadline,
        arguments_sha256=text_sha256(record.arguments),
    )


def _movement_for(record: AgentToolCall) -> StepMovement:
    if record.requires_approval:
        return move_to(StepType.AWAIT_TOOL_APPROVAL, record.tool_call_id)
    return move_to(call_step_type(record), record.tool_call_id)


def _tool_calls_requested(
    state: SessionState,
    config: SessionConfig,
    agent_state: AgentState,
    turn_id: str,
    invocation: Invocation,
    outcome: ToolCallsRequested,
) -> StepTransition:
    deadline: str | None = None
    try:
        deadline_at = deadline_ms(invocation.now_ms, config.interrupt_deadline_ms)
        deadline = None if deadline_at is None else format_instant(deadline_at)
    except ValueError as error:
        return reject(state, f"cannot compute the approval deadline: {error}")
    first_order = len(state.tool_calls)
    records = [
        _record_for(call, turn_id, invocation, first_order + position) for position, call in enumerate(outcome.tool_calls)
    ]
    maybe_raised = (interrupt_raised_by(record, deadline) for record in records)
    interrupts = [interrupt for interrupt in maybe_raised if interrupt is not None]
    usage = add_agent_usage(state.usage, outcome.usage)
    agent_state = replace(agent_state, status=AgentStatus.RUNNING_TOOLS)
    tool_calls = state.tool_calls
    for record in records:
        tool_calls = tool_calls.set(record.tool_call_id, record)
    new_state = replace(
        state,
        agent_state=agent_state,
        framework_run_state=outcome.framework_run_state,
        turn_model_call_count=state.turn_model_call_count + 1,
        tool_calls=tool_calls,
        pending_interrupts=state.pending_interrupts.extend(interrupts),
        usage=usage,
    )
    effects: list[StepEffect] = [
        SetAttribute.of(FRAMEWORK_RUN_STATE, outcome.framework_run_state),
        SetAttribute.of(TURN_MODEL_CALL_COUNT, new_state.turn_model_call_count),
        *(SetMapInstance.of(AGENT_TOOL_CALLS, r.tool_call_id, r) for r in records),
    ]
    if interrupts:
        effects.append(set_pending_interrupts(new_state))
    effects.extend(
        [
            SetAttribute.of(AGENT_USAGE, usage),
            set_agent_state(agent_state),
            WriteEvent(event=events.usage_recorded(turn_id, invocation, outcome.usage, usage)),
        ]
    )
    interrupt_by_call = {interrupt.tool_call_id: interrupt for interrupt in interrupts}
    for record in records:
        effects.append(WriteEvent(event=events.tool_call_deferred(invocation, record)))
        raised = interrupt_by_call.get(record.tool_call_id)
        if raised is not None:
            effects.append(WriteEvent(event=events.interrupt_raised(invocation, raised)))
    movements = [_movement_for(record) for record in records]
    movements.append(move_to(StepType.RESUME_TURN, len(records)))
    return step(new_state, effects, GoToSteps(movements=pvector(movements)))


__all__ = [
    "interrupt_raised_by",
    "reduce_model_call_failed",
    "reduce_model_call_finished",
    "reduce_model_step_started",
]
