"""Reducers of ``ResumeTurn`` and ``RecordTurnFailure``.

``ResumeTurn(n)`` reads ``agent_state`` and every ``tool_calls`` record of the turn (it loads the
whole ``AgentToolCalls`` map): after its ``n`` ``ToolCallCompleted`` messages it re-counts open
records; with ``k > 0`` open it waits again as ``ResumeTurn(k)``, so a stray message never resumes a
turn early; with none it sets ``running_model`` and moves to ``RunModel``.

``RecordTurnFailure`` reads ``agent_state``, ``framework_run_state``, ``turn_model_call_count``, every
``tool_calls`` record and ``pending_interrupts``: when the turn has final records it first appends the
turn failure note (built by the runner from ``turn_failure_note``) as the failed turn's last message;
then it records ``last_turn_error``, counts the failure, clears the turn (run state, model call count,
records, its interrupts), writes ``turn_failed`` and moves to ``AwaitUserMessage`` (``fail_turn``).

``RunModel`` fails its turn the same way (``fail_turn_in_run_model``, for a ``NonRetryableModelError``
or the model call cap): at once when no note is due, else it asks the shell to build the note
(``BuildTurnFailureNote``) and the follow-up ``TurnFailed`` ends the turn, all in one attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from dex_agents.pure import events
from dex_agents.pure.effects import BuildTurnFailureNote, Effect, WriteEvent
from dex_agents.pure.persistence import StepType
from dex_agents.pure.reducers.common import (
    NO_RUNNING_TURN,
    NOT_STARTED,
    append_messages,
    clear_turn,
    go_to,
    set_agent_state,
    turn_ended,
    user_message_problem,
)
from dex_agents.pure.state import SessionState
from dex_agents.pure.step_inputs import Invocation, ToolResultsArrived, TurnFailed
from dex_agents.pure.texts import build_turn_failure_note
from dex_agents.pure.transition import Transition, reject, transition
from dex_agents.pure.values import AgentStatus, FrameworkMessage


def reduce_tool_results_arrived(state: SessionState, arrived: ToolResultsArrived) -> Transition:
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
        return transition(state, [go_to(StepType.RESUME_TURN, still_open)])
    agent_state = replace(agent_state, status=AgentStatus.RUNNING_MODEL)
    return transition(
        replace(state, agent_state=agent_state), [set_agent_state(agent_state), go_to(StepType.RUN_MODEL)]
    )


def turn_failure_note(state: SessionState) -> str | None:
    """The note ``RecordTurnFailure`` appends for the running turn, or ``None`` when no record is final.

    The shell passes it to ``runner.build_user_message`` and hands the result in ``TurnFailed``.
    """
    return build_turn_failure_note(state.tool_calls.values())


def reduce_turn_failed(state: SessionState, failed: TurnFailed) -> Transition:
    """``RecordTurnFailure`` (or ``RunModel``'s follow-up of ``BuildTurnFailureNote``): ``fail_turn``."""
    return fail_turn(state, failed.invocation, failed.recovery_error, failed.failure_note_message)


def fail_turn(
    state: SessionState,
    invocation: Invocation,
    error: str,
    note_message: FrameworkMessage | None,
    before: Sequence[Effect] = (),
) -> Transition:
    """Note (when due), ``last_turn_error``, clear the turn -> ``AwaitUserMessage``; ``before`` first.

    Rejects when no turn runs, when the note message is missing although the turn has final records
    (or given although it has none), and when the note message is not a user message.
    """
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    turn_id = agent_state.current_turn_id
    if turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    note = turn_failure_note(state)
    if note is not None and note_message is None:
        return reject(state, "runner defect: no message was built for the turn failure note")
    if note is None and note_message is not None:
        return reject(state, "a turn failure note message was given, but no tool call of the turn is final")
    effects: list[Effect] = [*before]
    if note_message is not None:
        problem = user_message_problem(agent_state, note_message)
        if problem is not None:
            return reject(state, problem)
        state, agent_state, note_effects = append_messages(state, agent_state, turn_id, [note_message])
        effects.extend(note_effects)
    cleared, clear_effects = clear_turn(state, turn_id)
    agent_state = turn_ended(agent_state, failure=error)
    return transition(
        replace(cleared, agent_state=agent_state),
        [
            *effects,
            *clear_effects,
            set_agent_state(agent_state),
            WriteEvent(event=events.turn_failed(turn_id, invocation, error)),
            go_to(StepType.AWAIT_USER_MESSAGE),
        ],
    )


def fail_turn_in_run_model(
    state: SessionState, invocation: Invocation, error: str, before: Sequence[Effect]
) -> Transition:
    """``RunModel`` fails the running turn with ``error`` after ``before``: ``fail_turn`` at once when no
    note is due, else ``before`` then ``BuildTurnFailureNote`` (the shell feeds back ``TurnFailed``)."""
    note = turn_failure_note(state)
    if note is None:
        return fail_turn(state, invocation, error, None, before)
    return transition(state, [*before, BuildTurnFailureNote(note=note, recovery_error=error)])


__all__ = [
    "fail_turn",
    "fail_turn_in_run_model",
    "reduce_tool_results_arrived",
    "reduce_turn_failed",
    "turn_failure_note",
]
