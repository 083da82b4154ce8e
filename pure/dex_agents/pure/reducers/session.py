"""Reducers of ``StartAgentSession`` and ``AwaitUserMessage``: initialize the session, start turns.

Reads: ``agent_state`` only (``AgentMessages`` is not loaded; sequences come from ``message_count``).

The start input cannot be refused (``start_flow`` returned before ``StartAgentSession`` runs), so a
lone surrogate in ``initial_message``, which no UTF-8 encoder accepts, becomes U+FFFD
(``initial_message_text``) rather than poison every later model call.
"""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.effects import Effect, SetAttribute
from dex_agents.pure.persistence import AGENT_USAGE, PENDING_INTERRUPTS, StepType
from dex_agents.pure.reducers.common import NOT_STARTED, go_to, set_agent_state, start_turn
from dex_agents.pure.state import SessionState
from dex_agents.pure.step_inputs import SessionStarted, UserMessageArrived
from dex_agents.pure.transition import Transition, reject, transition
from dex_agents.pure.usage import empty_agent_usage
from dex_agents.pure.validation import without_lone_surrogates
from dex_agents.pure.values import AgentSessionStartInput, AgentState, AgentStatus


def is_blank(text: str | None) -> bool:
    """True for ``None``, the empty string and whitespace only."""
    return text is None or text.strip() == ""


def initial_message_text(start_input: AgentSessionStartInput) -> str | None:
    """The text ``StartAgentSession`` starts ``turn-1`` with: ``None`` for a blank ``initial_message``,
    else the message with each lone surrogate replaced by U+FFFD (the shell builds the user message
    from it)."""
    text = start_input.initial_message
    return None if text is None or is_blank(text) else without_lone_surrogates(text)


def reduce_session_started(state: SessionState, started: SessionStarted) -> Transition:
    """``StartAgentSession``: initialize ``AgentState``, ``AgentUsage`` and ``PendingInterrupts``; start
    ``turn-1`` when ``initial_message`` is non-blank (-> ``RunModel``), else -> ``AwaitUserMessage``.

    Rejects a second start, and a user message that does not match ``initial_message`` (given for a
    blank one, or missing for a non-blank one).
    """
    if state.agent_state is not None:
        return reject(state, "the session has already started")
    has_initial_message = initial_message_text(started.start_input) is not None
    if has_initial_message and started.initial_user_message is None:
        return reject(state, "runner defect: no user message was built for the initial message")
    if not has_initial_message and started.initial_user_message is not None:
        return reject(state, "a user message was given, but initial_message is blank")
    agent_state = AgentState(
        status=AgentStatus.WAITING_FOR_USER_MESSAGE,
        turn_count=0,
        current_turn_id=None,
        current_turn_sequence=None,
        message_count=0,
        completed_turn_count=0,
        failed_turn_count=0,
        last_turn_error=None,
    )
    initialized = replace(state, agent_state=agent_state, usage=empty_agent_usage(), pending_interrupts=pvector())
    init_effects: list[Effect] = [
        SetAttribute.of(AGENT_USAGE, initialized.usage),
        SetAttribute.of(PENDING_INTERRUPTS, initialized.pending_interrupts),
    ]
    if started.initial_user_message is None:
        return transition(
            initialized, [*init_effects, set_agent_state(agent_state), go_to(StepType.AWAIT_USER_MESSAGE)]
        )
    turn = start_turn(initialized, agent_state, started.invocation, started.initial_user_message)
    if turn.is_rejection:
        return replace(turn, state=state)
    return transition(turn.state, [*init_effects, *turn.effects])


def reduce_user_message_arrived(state: SessionState, arrived: UserMessageArrived) -> Transition:
    """``AwaitUserMessage``: the consumed message starts ``turn-<turn_count + 1>`` (-> ``RunModel``).

    Rejects when the session has not started or a turn is already running.
    """
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    if agent_state.current_turn_id is not None:
        return reject(state, f"turn {agent_state.current_turn_id} is still running")
    dequeued = replace(state, queued_message_count=max(0, state.queued_message_count - 1))
    turn = start_turn(dequeued, agent_state, arrived.invocation, arrived.user_message)
    return replace(turn, state=state) if turn.is_rejection else turn


__all__ = ["initial_message_text", "is_blank", "reduce_session_started", "reduce_user_message_arrived"]
