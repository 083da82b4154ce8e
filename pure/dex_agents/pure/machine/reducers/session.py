"""Reducers of ``StartAgentSession`` and ``AwaitUserMessage``: initialize the session, start turns.

Reads: ``agent_state`` only (``AgentMessages`` is not loaded; sequences come from ``message_count``).

* ``SessionStarted``: a blank ``initial_message`` initializes the session and moves to
  ``AwaitUserMessage``; a non-blank one asks the runner for its user message
  (``BuildUserMessage(InitialMessage)``), whose ``UserMessageBuilt`` initializes the session and
  starts ``turn-1`` (-> ``RunModel``).
* ``SessionStarted`` with ``fork`` (ours): ``time_travel.reduce_session_forked`` seeds the session.
* ``UserMessageArrived`` (exactly one consumed message) asks for the message's user message
  (``BuildUserMessage(QueuedMessage)``), whose ``UserMessageBuilt`` starts the next turn.

The start input cannot be refused (``start_flow`` returned before ``StartAgentSession`` runs), so a
lone surrogate in ``initial_message``, which no UTF-8 encoder accepts, becomes U+FFFD
(``initial_message_text``) rather than poison every later model call.
"""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.machine.effects import SetAttribute, Write
from dex_agents.pure.machine.endings import BuildUserMessage
from dex_agents.pure.values.persistence import AGENT_USAGE, PENDING_INTERRUPTS, StepType
from dex_agents.pure.machine.reducers.common import NOT_STARTED, go_to, set_agent_state, start_turn
from dex_agents.pure.machine.reducers.time_travel import reduce_session_forked
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    InitialMessage,
    Invocation,
    QueuedMessage,
    SessionStarted,
    UserMessageArrived,
)
from dex_agents.pure.machine.transition import StepTransition, reject, step
from dex_agents.pure.machine.usage import empty_agent_usage
from dex_agents.pure.machine.validation import without_lone_surrogates
from dex_agents.pure.values.session import AgentSessionStartInput, AgentState, AgentStatus, FrameworkMessage

ALREADY_STARTED = "the session has already started"


def is_blank(text: str | None) -> bool:
    """True for ``None``, the empty string and whitespace only."""
    return text is None or text.strip() == ""


def initial_message_text(start_input: AgentSessionStartInput) -> str | None:
    """The text ``StartAgentSession`` starts ``turn-1`` with: ``None`` for a blank ``initial_message``,
    else the message with each lone surrogate replaced by U+FFFD."""
    text = start_input.initial_message
    return None if text is None or is_blank(text) else without_lone_surrogates(text)


def _initialized(state: SessionState, parent: InitialMessage | None = None
                 ) -> tuple[SessionState, AgentState, list[Write]]:
    """The state of a session that just started (no turn yet) and the writes of ``AgentUsage`` and
    ``PendingInterrupts`` (``AgentState`` is the caller's to write); ``parent``: the initial message's
    purpose, naming a sub-agent's child session's parent session and tool call."""
    agent_state = AgentState(
        status=AgentStatus.WAITING_FOR_USER_MESSAGE,
        turn_count=0,
        current_turn_id=None,
        current_turn_sequence=None,
        message_count=0,
        completed_turn_count=0,
        failed_turn_count=0,
        last_turn_error=None,
        parent_session_id=None if parent is None else parent.parent_session_id,
        parent_tool_call_id=None if parent is None else parent.parent_tool_call_id,
    )
    initialized = replace(state, agent_state=agent_state, usage=empty_agent_usage(), pending_interrupts=pvector())
    writes: list[Write] = [
        SetAttribute.of(AGENT_USAGE, initialized.usage),
        SetAttribute.of(PENDING_INTERRUPTS, initialized.pending_interrupts),
    ]
    return initialized, agent_state, writes


def reduce_session_started(state: SessionState, started: SessionStarted) -> StepTransition:
    """``StartAgentSession``: initialize ``AgentState``, ``AgentUsage`` and ``PendingInterrupts`` and move
    to ``AwaitUserMessage`` when ``initial_message`` is blank; else ask for its user message.

    Rejects a second start.
    """
    if state.agent_state is not None:
        return reject(state, ALREADY_STARTED)
    text = initial_message_text(started.start_input)
    if started.start_input.fork is not None:
        return reduce_session_forked(state, started.start_input.fork, text)
    if text is not None:
        purpose = InitialMessage(parent_session_id=started.start_input.parent_session_id,
                                 parent_tool_call_id=started.start_input.parent_tool_call_id)
        return step(state, [], BuildUserMessage(text=text, purpose=purpose))
    initialized, agent_state, writes = _initialized(state)
    return step(initialized, [*writes, set_agent_state(agent_state)], go_to(StepType.AWAIT_USER_MESSAGE))


def reduce_initial_message_built(state: SessionState, invocation: Invocation, message: FrameworkMessage,
                                 parent: InitialMessage | None = None) -> StepTransition:
    """The initial message's user message was built: initialize the session and start ``turn-1``
    (-> ``RunModel``).

    Rejects a second start, a non-user message (a runner defect) and a full sequence space.
    """
    if state.agent_state is not None:
        return reject(state, ALREADY_STARTED)
    initialized, agent_state, writes = _initialized(state, parent)
    turn = start_turn(initialized, agent_state, invocation, message)
    if turn.is_rejection:
        return replace(turn, state=state)
    return step(turn.state, [*writes, *turn.effects], turn.ending)


def _waiting(state: SessionState) -> AgentState | StepTransition:
    """The ``AgentState`` of a started session between turns, or the rejection."""
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    if agent_state.current_turn_id is not None:
        return reject(state, f"turn {agent_state.current_turn_id} is still running")
    return agent_state


def reduce_user_message_arrived(state: SessionState, arrived: UserMessageArrived) -> StepTransition:
    """``AwaitUserMessage``: ask for the user message of the one consumed message.

    Rejects when the session has not started, a turn is already running, or the wait did not deliver
    exactly one message.
    """
    waiting = _waiting(state)
    if isinstance(waiting, StepTransition):
        return waiting
    if len(arrived.consumed) != 1:
        return reject(state, f"AwaitUserMessage consumed {len(arrived.consumed)} messages, expected 1")
    return step(state, [], BuildUserMessage(text=arrived.consumed[0].text, purpose=QueuedMessage()))


def reduce_queued_message_built(state: SessionState, invocation: Invocation, message: FrameworkMessage) -> StepTransition:
    """The consumed message's user message was built: start ``turn-<turn_count + 1>`` (-> ``RunModel``).

    Rejects when the session has not started or a turn is already running, a non-user message and a
    full sequence space.
    """
    waiting = _waiting(state)
    if isinstance(waiting, StepTransition):
        return waiting
    dequeued = replace(state, queued_message_count=max(0, state.queued_message_count - 1))
    turn = start_turn(dequeued, waiting, invocation, message)
    return replace(turn, state=state) if turn.is_rejection else turn


__all__ = [
    "ALREADY_STARTED",
    "initial_message_text",
    "is_blank",
    "reduce_initial_message_built",
    "reduce_queued_message_built",
    "reduce_session_started",
    "reduce_user_message_arrived",
]
