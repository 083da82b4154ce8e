"""Reducers of ``CompactHistory`` and of the model step's compaction decisions.

Reads: ``agent_state``, ``messages`` (``CompactHistory`` and ``RunModel`` load the whole map),
``history_summary``, ``usage`` and ``framework_run_state``.

* ``compaction_before_call`` / ``reactive_compaction``: before a model call (requested by
  ``compact_history``, or proactive: the estimated input exceeds ``CompactionPolicy.trigger_tokens``)
  or after one the model refused as too long (reactive), whether the model step moves to
  ``CompactHistory(trigger)`` instead: only when something can be summarized.
* ``CompactHistoryCalled`` (the ``compact_history`` RPC): set ``CompactionRequested``, which the next
  model call honours (a compaction never runs beside a turn's model call, so it never races one).
* ``CompactionStarted``: ask for the summarization (``SummarizeHistory``) of the span
  (``compaction.compaction_span``) after the previous summary; nothing to summarize (a compaction
  that ran beside this one) goes straight back to ``RunModel``.
* ``HistorySummarized``: store the new ``HistorySummary`` (its boundary is the span's last message),
  add the call's usage, ``usage_recorded`` then ``dex_agents.history_compacted`` -> ``RunModel``.
* ``SummarizationFailed``: fail the attempt (Dex retries, then ``RecordTurnFailure``), or, when no retry
  can help, the turn at once.

Invariant: a compaction changes no message; the model's view only ever moves forward (a boundary
never goes back, and every summarized message was summarized exactly once, in the summary's chain).
"""

from __future__ import annotations

from dataclasses import replace

from dex_agents.pure.machine import events
from dex_agents.pure.machine.compaction import (
    CHARACTERS_PER_TOKEN,
    CompactionPolicy,
    compaction_span,
    estimated_input_tokens,
)
from dex_agents.pure.values.session import CompactionTrigger
from dex_agents.pure.machine.effects import DeleteAttribute, SetAttribute, WriteEvent
from dex_agents.pure.machine.endings import FailAttempt, SummarizeHistory
from dex_agents.pure.values.persistence import AGENT_USAGE, COMPACTION_REQUESTED, HISTORY_SUMMARY, StepType
from dex_agents.pure.machine.reducers.common import NO_RUNNING_TURN, NOT_STARTED, go_to
from dex_agents.pure.machine.reducers.turn import ask_to_fail_turn
from dex_agents.pure.machine.rpc_calls import CompactHistoryCalled
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import CompactionStarted, HistorySummarized, SummarizationFailed
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, answer, refuse, reject, step
from dex_agents.pure.machine.usage import add_agent_usage
from dex_agents.pure.values.session import AgentMessage, AgentStatus, HistorySummary

NO_POLICY = "the session has no compaction policy"


def _span(state: SessionState, policy: CompactionPolicy) -> tuple[AgentMessage, ...]:
    return compaction_span(state.model_view, policy.keep_recent_turns)


def estimated_model_input(state: SessionState) -> int:
    """The estimated tokens of the next model call's input: the summary, the stored messages the model
    sees and the turn's run state (``compaction.estimated_input_tokens``'s estimate)."""
    summary = state.history_summary
    carried = -(-len(state.framework_run_state or "") // CHARACTERS_PER_TOKEN)
    return estimated_input_tokens(summary.text if summary else None, state.model_view) + carried


def compaction_before_call(state: SessionState, config: SessionConfig) -> CompactionTrigger | None:
    """Whether the model step compacts before its call, and why: ``compact_history`` asked for it, or
    the estimate exceeds ``trigger_tokens``; ``None`` when it does not or nothing can be summarized."""
    policy = config.compaction
    if policy is None:
        return None
    if state.compaction_requested:
        trigger = CompactionTrigger.REQUESTED
    elif policy.trigger_tokens is not None and estimated_model_input(state) > policy.trigger_tokens:
        trigger = CompactionTrigger.PROACTIVE
    else:
        return None  # the common case: no pass over the messages
    return trigger if _span(state, policy) else None


def reactive_compaction(state: SessionState, config: SessionConfig) -> bool | None:
    """After a call refused as too long: ``True`` to compact, ``False`` when the policy would but
    nothing can be summarized (the recent part alone is too long), ``None`` without reactive compaction."""
    policy = config.compaction
    if policy is None or not policy.reactive:
        return None
    return bool(_span(state, policy))


def recent_part_too_long(error: str, config: SessionConfig) -> str:
    """The error of a turn whose kept recent turns alone exceed the context window."""
    keep = config.compaction.keep_recent_turns if config.compaction else 0
    return (f"{error} (compaction cannot help: the last {keep} turns, which it keeps whole, alone exceed "
            "the model's context window)")


def _compacting(state: SessionState) -> str | StepTransition:
    """The running turn's ID, or the rejection when no turn runs its model."""
    agent_state = state.agent_state
    if agent_state is None:
        return reject(state, NOT_STARTED)
    if agent_state.current_turn_id is None:
        return reject(state, NO_RUNNING_TURN)
    if agent_state.status is not AgentStatus.RUNNING_MODEL:
        return reject(state, f"the history is not compacted now (status {agent_state.status.value})")
    return agent_state.current_turn_id


def reduce_compaction_started(state: SessionState, config: SessionConfig, started: CompactionStarted) -> StepTransition:
    """``CompactHistory`` began: ask for the summary of the span, or go back to ``RunModel`` when there
    is none. Rejects without a running model turn, a policy, or a known trigger."""
    turn_id = _compacting(state)
    if isinstance(turn_id, StepTransition):
        return turn_id
    if config.compaction is None:
        return reject(state, NO_POLICY)
    if started.trigger not in tuple(CompactionTrigger):
        return reject(state, f"unknown compaction trigger {started.trigger!r}")
    span = _span(state, config.compaction)
    if not span:
        return step(state, [], go_to(StepType.RUN_MODEL))
    previous = state.history_summary
    return step(state, [], SummarizeHistory(turn_id=turn_id, trigger=started.trigger,
                                            previous_summary=previous.text if previous else None,
                                            messages=state.model_view[:len(span)],
                                            instructions=config.compaction.instructions))


def reduce_history_summarized(state: SessionState, config: SessionConfig, summarized: HistorySummarized) -> StepTransition:
    """The summary arrived: store it with its boundary, record its usage, then ``RunModel``.

    Rejects without a running model turn or a policy, with nothing to summarize, or a blank summary."""
    turn_id = _compacting(state)
    if isinstance(turn_id, StepTransition):
        return turn_id
    if config.compaction is None:
        return reject(state, NO_POLICY)
    span = _span(state, config.compaction)
    if not span:
        return reject(state, "there is nothing to summarize")
    if not summarized.text.strip():
        return reject(state, "runner defect: summarize_history returned a blank summary")
    previous = state.history_summary
    summary = HistorySummary(
        text=summarized.text,
        through_sequence=span[-1].sequence,
        summarized_messages=(previous.summarized_messages if previous else 0) + len(span),
        trigger=summarized.trigger,
        turn_id=turn_id,
        compactions=(previous.compactions if previous else 0) + 1,
    )
    usage = add_agent_usage(state.usage, summarized.usage)
    invocation = summarized.invocation
    cleared = [DeleteAttribute.of(COMPACTION_REQUESTED)] if state.compaction_requested else []
    return step(
        replace(state, history_summary=summary, usage=usage, compaction_requested=False),
        [
            *cleared,
            SetAttribute.of(HISTORY_SUMMARY, summary),
            SetAttribute.of(AGENT_USAGE, usage),
            WriteEvent(event=events.usage_recorded(turn_id, invocation, summarized.usage, usage)),
            WriteEvent(event=events.history_compacted(turn_id, invocation, summary)),
        ],
        go_to(StepType.RUN_MODEL),
    )


def reduce_summarization_failed(state: SessionState, failed: SummarizationFailed) -> StepTransition:
    """The summarization call raised: fail the attempt (retryable) or the turn (see the module docstring).

    Rejects without a running model turn."""
    turn_id = _compacting(state)
    if isinstance(turn_id, StepTransition):
        return turn_id
    if failed.retryable:
        return step(state, [], FailAttempt(error=failed.error))
    return ask_to_fail_turn(state, failed.invocation, f"the history could not be compacted: {failed.error}")


def reduce_compact_history_called(state: SessionState, config: SessionConfig,
                                  _called: CompactHistoryCalled) -> RpcTransition:
    """``compact_history``: ask the session's next model call to compact first (``CompactionRequested``);
    ``True`` when there is something to summarize, ``False`` when not (nothing older than the kept
    turns, or a session not started). Refused when the Flow has no compaction policy."""
    policy = config.compaction
    if policy is None:
        return refuse(state, "this session's Flow does not compact its history (compaction=None)")
    if state.agent_state is None or not _span(state, policy):
        return answer(state, False)
    if state.compaction_requested:
        return answer(state, True)
    return answer(replace(state, compaction_requested=True), True, [SetAttribute.of(COMPACTION_REQUESTED, 1)])


__all__ = [
    "compaction_before_call",
    "estimated_model_input",
    "reduce_compact_history_called",
    "reactive_compaction",
    "recent_part_too_long",
    "reduce_compaction_started",
    "reduce_history_summarized",
    "reduce_summarization_failed",
]
