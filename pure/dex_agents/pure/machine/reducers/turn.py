"""Reducers of ``ResumeTurn`` and ``RecordTurnFailure``, and how a turn fails.

``ResumeTurn(n)`` reads ``agent_state`` and every ``tool_calls`` record of the turn (it loads the
whole ``AgentToolCalls`` map): after its ``n`` ``ToolCallCompleted`` messages it re-counts open
records; with ``k > 0`` open it waits again as ``ResumeTurn(k)``, so a stray message never resumes a
turn early; with none it sets ``running_model`` and moves to ``RunModel``.

A turn fails in ``RecordTurnFailure`` (``ModelAttemptsExhausted``: ``RunModel`` ran out of attempts,
with the recovery error text) or in ``RunModel`` itself (a ``NonRetryableModelError``, the model call
cap). Either way ``ask_to_fail_turn`` decides: when the turn has final records, the runner must build
the turn failure note first (``BuildUserMessage(TurnFailureNote)``), and its ``UserMessageBuilt``
fails the turn; otherwise the turn fails at once. ``fail_turn`` records the failing model call's usage
(if any), appends the note as the failed turn's last message, records ``last_turn_error``, counts the
failure, clears the turn (run state, model call count, records, its interrupts), writes
``turn_failed`` and moves to ``AwaitUserMessage``.

Reads (``RecordTurnFailure``): ``agent_state``, ``framework_run_state``, ``turn_model_call_count``,
every ``tool_calls`` record and ``pending_interrupts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from dex_agents.pure.machine import events
from dex_agents.pure.machine.effects import SetAttribute, StepEffect, WriteEvent
from dex_agents.pure.machine.endings import BuildUserMessage
from dex_agents.pure.values.persistence import AGENT_USAGE, StepType
from dex_agents.pure.machine.reducers.subagents import FAILED, turn_end
from dex_agents.pure.machine.reducers.common import (
    NO_RUNNING_TURN,
    NOT_STARTED,
    append_messages,
    clear_turn,
    go_to,
    set_agent_state,
    turn_ended,
    user_message_problem,
)
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    Invocation,
    ModelAttemptsExhausted,
    ToolResultsArrived,
    TurnFailureNote,
)
from dex_agents.pure.machine.texts import build_turn_failure_note, recovery_error_text
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.values.session import AgentStatus, AgentUsage, FrameworkMessage


def reduce_tool_results_arrived(state: SessionState, arrived: ToolResultsArrived) -> StepTransition:
    """``ResumeTurn``: wait again for the records still open, or resume the turn with ``RunModel``.

    Rejects when no turn runs or the turn is not running tools.
    """
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    if agent_state.current_turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    if agent_state.status is not AgentStatus.RUNNING_TOOLS:
        return reject(state, f"no tool calls to resume from (status {agent_state.status.value})")
    still_open = state.open_record_count()
    if still_open > 0:
        return step(state, [], go_to(StepType.RESUME_TURN, still_open))
    agent_state = replace(agent_state, status=AgentStatus.RUNNING_MODEL)
    return step(replace(state, agent_state=agent_state), [set_agent_state(agent_state)], go_to(StepType.RUN_MODEL))


def turn_failure_note(state: SessionState) -> str | None:
    """The note a failed turn ends with, or ``None`` when no record of the turn is final. Built once,
    by ``ask_to_fail_turn``, for the runner to turn into a user message."""
    return build_turn_failure_note(state.tool_calls.values())


def reduce_model_attempts_exhausted(state: SessionState, exhausted: ModelAttemptsExhausted) -> StepTransition:
    """``RecordTurnFailure``: fail the turn with the recovery error text (``ask_to_fail_turn``)."""
    return ask_to_fail_turn(state, exhausted.invocation, recovery_error_text(exhausted.recovery_error))


def ask_to_fail_turn(
    state: SessionState,
    invocation: Invocation,
    error: str,
    recorded_usage: AgentUsage | None = None,
    before: Sequence[WriteEvent] = (),
) -> StepTransition:
    """Fail the running turn with ``error`` after ``before``: at once (``fail_turn``) when no note is
    due, else ``before`` then ``BuildUserMessage(note, TurnFailureNote(error, recorded_usage))``, whose
    ``UserMessageBuilt`` fails it. ``recorded_usage``: the failing model call's usage, if it returned.

    Rejects when no turn runs.
    """
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    if agent_state.current_turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    note = turn_failure_note(state)
    if note is None:
        return fail_turn(state, invocation, error, None, recorded_usage, before)
    return step(state, before, BuildUserMessage(text=note, purpose=TurnFailureNote(error=error, recorded_usage=recorded_usage)))


def reduce_turn_failure_note_built(
    state: SessionState, invocation: Invocation, failure: TurnFailureNote, note_message: FrameworkMessage
) -> StepTransition:
    """The turn failure note's user message was built: ``fail_turn`` with it."""
    return fail_turn(state, invocation, failure.error, note_message, failure.recorded_usage)


def fail_turn(
    state: SessionState,
    invocation: Invocation,
    error: str,
    note_message: FrameworkMessage | None,
    recorded_usage: AgentUsage | None = None,
    before: Sequence[StepEffect] = (),
) -> StepTransition:
    """``before``, the failing call's usage, the note (when given), ``last_turn_error``, clear the turn
    -> ``AwaitUserMessage``.

    Rejects when no turn runs, a note message given although no record of the turn is final, and a
    note message that is not a valid user message.
    """
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    turn_id = agent_state.current_turn_id
    if turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    if note_message is not None and not any(record.status.is_final for record in state.tool_calls.values()):
        return reject(state, "a turn failure note message was given, but no tool call of the turn is final")
    effects: list[StepEffect] = [*before]
    failing = state
    if recorded_usage is not None:
        usage = add_agent_usage(state.usage, recorded_usage)
        failing = replace(failing, usage=usage)
        effects.append(SetAttribute.of(AGENT_USAGE, usage))
        effects.append(WriteEvent(event=events.usage_recorded(turn_id, invocation, recorded_usage, usage)))
    if note_message is not None:
        problem = user_message_problem(agent_state, note_message)
        if problem is not None:
            return reject(state, problem)
        failing, agent_state, note_effects = append_messages(failing, agent_state, turn_id, [note_message])
        effects.extend(note_effects)
    cleared, clear_effects = clear_turn(failing, turn_id)
    agent_state = turn_ended(agent_state, failure=error)
    return step(
        replace(cleared, agent_state=agent_state),
        [
            *effects,
            *clear_effects,
            set_agent_state(agent_state),
            WriteEvent(event=events.turn_failed(turn_id, invocation, error)),
        ],
        turn_end(agent_state, FAILED, error, failing.usage),
    )


__all__ = [
    "ask_to_fail_turn",
    "fail_turn",
    "reduce_model_attempts_exhausted",
    "reduce_tool_results_arrived",
    "reduce_turn_failure_note_built",
    "turn_failure_note",
]
