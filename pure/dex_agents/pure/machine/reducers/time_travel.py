"""Reducers of time travel (ours): a forked session's seed, and the audit of a rewind.

* ``SessionStarted`` with ``fork`` (``reduce_session_forked``): the session starts seeded with the
  original's conversation right after its turn ``at_turn`` ended (``AgentState`` between turns,
  ``AgentMessages``, ``AgentUsage``, ``HistorySummary``), with no pending interrupts, tool call records
  or queued messages, and waits for a user message (``AwaitUserMessage``); a non-blank
  ``initial_message`` is queued, so it starts the fork's first turn. A seed that breaks
  ``AgentSessionFork``'s invariants is rejected (the start attempt fails and commits nothing).
* ``SessionRewindRecorded`` (``record_session_rewind``): the audit of the rewind that just replaced
  the run ``previous_run_id``, stored in ``SessionRewinds/<previous_run_id>`` with the Worker clock
  (answered); a repeat of the call writes the same instance again. The session may have gone on since
  the rewind (a message queued at turn ``to_turn``'s end starts the next turn at once), so a running or
  later turn is no reason to refuse; a ``to_turn`` the session has not ended, or any other input no
  rewind could make, is.
"""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import PublishToChannel, SetAttribute, SetMapInstance, Write
from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.machine.reducers.common import go_to, set_agent_state
from dex_agents.pure.machine.rpc_calls import SessionRewindRecorded
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, answer, refuse, reject, step
from dex_agents.pure.machine.validation import lone_surrogate_problem
from dex_agents.pure.values.persistence import (
    AGENT_MESSAGES,
    AGENT_USAGE,
    HISTORY_SUMMARY,
    PENDING_INTERRUPTS,
    QUEUED_USER_MESSAGES,
    SESSION_REWINDS,
    StepType,
)
from dex_agents.pure.values.session import AgentSessionFork, AgentStatus, AgentUserMessage
from dex_agents.pure.values.time_travel import SessionRewind

def fork_problem(fork: AgentSessionFork) -> str | None:
    """Why ``fork`` is not a seed ``AgentSessionFork`` describes, or ``None``."""
    state = fork.state
    if fork.at_turn < 0:
        return f"fork.at_turn must be >= 0, got {fork.at_turn}"
    if state.current_turn_id is not None:
        return f"fork.state is inside {state.current_turn_id}; a fork starts between turns"
    if state.ended_turn_count != fork.at_turn or state.turn_count != fork.at_turn:
        return f"fork.state has ended {state.ended_turn_count} of {state.turn_count} turns, not {fork.at_turn}"
    if [m.sequence for m in fork.messages] != list(range(1, state.message_count + 1)):
        return f"fork.messages must be sequences 1..{state.message_count} in order"
    turns = {f"turn-{n}" for n in range(1, fork.at_turn + 1)}
    stray = next((m for m in fork.messages if m.turn_id not in turns), None)
    if stray is not None:
        return f"fork message {stray.sequence} is of {stray.turn_id}, not of turns 1..{fork.at_turn}"
    return None


def reduce_session_forked(state: SessionState, fork: AgentSessionFork, text: str | None) -> StepTransition:
    """``StartAgentSession`` of a fork (see the module docstring); ``text`` is the start input's
    initial message (``None``: blank)."""
    problem = fork_problem(fork)
    if problem is not None:
        return reject(state, problem)
    agent_state = replace(fork.state, status=AgentStatus.WAITING_FOR_USER_MESSAGE, last_turn_error=None)
    seeded = replace(state, agent_state=agent_state, messages=fork.messages, usage=fork.usage,
                     pending_interrupts=pvector(), history_summary=fork.history_summary,
                     queued_message_count=0 if text is None else 1)
    writes: list[Write] = [
        SetAttribute.of(AGENT_USAGE, fork.usage),
        SetAttribute.of(PENDING_INTERRUPTS, seeded.pending_interrupts),
        *(SetMapInstance.of(AGENT_MESSAGES, message_sequence_key(m.sequence), m) for m in fork.messages),
        *([] if fork.history_summary is None else [SetAttribute.of(HISTORY_SUMMARY, fork.history_summary)]),
        set_agent_state(agent_state),
        *([] if text is None else [PublishToChannel.of(QUEUED_USER_MESSAGES, AgentUserMessage(text=text))]),
    ]
    return step(seeded, writes, go_to(StepType.AWAIT_USER_MESSAGE))


def reduce_session_rewind_recorded(state: SessionState, recorded: SessionRewindRecorded) -> RpcTransition:
    """``record_session_rewind``: store the rewind's audit (see the module docstring) and answer it."""
    request = recorded.input
    agent_state = state.agent_state
    if agent_state is None:
        return refuse(state, "the session has not started")
    if not 0 <= request.to_turn <= agent_state.ended_turn_count:
        return refuse(state, f"to_turn {request.to_turn} is not a turn the session has ended "
                             f"({agent_state.ended_turn_count} ended)")
    if request.removed_turn_count < 0 or not request.previous_run_id or "/" in request.previous_run_id:
        return refuse(state, "removed_turn_count must be >= 0 and previous_run_id a Dex run ID")
    problem = None if request.reason is None else lone_surrogate_problem(request.reason, "reason")
    if problem is not None:
        return refuse(state, problem)
    audit = SessionRewind(to_turn=request.to_turn, reason=request.reason, previous_run_id=request.previous_run_id,
                          removed_turn_count=request.removed_turn_count, tool_calls=request.tool_calls,
                          rewound_at=format_instant(recorded.now_ms))
    return answer(state, audit, [SetMapInstance.of(SESSION_REWINDS, request.previous_run_id, audit)])


__all__ = ["fork_problem", "reduce_session_forked", "reduce_session_rewind_recorded"]
