"""Totality: every (state, input) pair gives a transition or a clear rejection, never an exception.

States come in three kinds: states a session really reaches (``reachable_sessions``, a legal walk
through ``reduce``), the shape the reducers produce (``session_states``: any status, counts, records,
interrupts and deadlines, including unreadable ones) and field-level arbitrary ones
(``hostile_session_states``: keys that disagree with records, negative and int64 counts). Inputs are
every Step fact and RPC call with valid, odd and invalid values. Whatever comes in:

* ``reduce`` returns a ``Transition``; its inputs are unchanged;
* a rejection is exactly one ``FailAttempt`` with a non-empty reason, and the state is unchanged; only a
  failed model call writes its event before ``FailAttempt``;
* otherwise a Step transition ends with its one decision (or runs the tool, or asks for the turn
  failure note), an RPC with its one answer;
* the helpers the shell calls around ``reduce`` (``approval_wait``, ``turn_failure_note``,
  ``snapshot_of``) are total too.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dex_agents.pure.effects import (
    AnswerRpc,
    BuildTurnFailureNote,
    DeadEnd,
    ExecuteDeferredToolCall,
    FailAttempt,
    GoToSteps,
    WriteEvent,
)
from dex_agents.pure.reducers import approval_wait, reduce, snapshot_of, turn_failure_note
from dex_agents.pure.state import SessionConfig, SessionState
from dex_agents.pure.step_inputs import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ModelCallFailed,
    ModelCallFinished,
    ResolveInterruptCalled,
    SendUserMessageCalled,
    SessionInput,
    ToolStepStarted,
)
from dex_agents.pure.transition import Transition
from tests.pure.session_strategies import call_ids, session_configs, session_inputs_any, times_ms
from tests.pure.state_strategies import hostile_session_states, reachable_sessions, session_states

TOTALITY_SETTINGS = settings(max_examples=200)
RPC_CALLS = (SendUserMessageCalled, ResolveInterruptCalled, AgentSnapshotRequested, AgentMessagesListed)


def check_total(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
    state_before, input_before = repr(state), repr(session_input)
    result = reduce(state, config, session_input)
    assert isinstance(result, Transition)
    assert repr(state) == state_before and repr(session_input) == input_before, "reduce mutated its inputs"
    effects = list(result.effects)
    failures = [effect for effect in effects if isinstance(effect, FailAttempt)]
    if failures:
        assert failures == [effects[-1]], f"FailAttempt comes last, once: {effects}"
        assert result.state == state, "a failed attempt changed the state"
        if not result.is_rejection:
            assert isinstance(session_input, ModelCallFailed), f"FailAttempt must stand alone: {effects}"
            assert all(isinstance(e, WriteEvent) for e in effects[:-1])
        assert failures[0].error.strip() or isinstance(session_input, ModelCallFailed), "a rejection says why"
        return result
    if isinstance(session_input, RPC_CALLS):
        assert isinstance(effects[-1], AnswerRpc) and sum(isinstance(e, AnswerRpc) for e in effects) == 1
        assert not any(isinstance(e, WriteEvent) for e in effects), "RPCs cannot write Streams"
        return result
    ends = (GoToSteps, DeadEnd, ExecuteDeferredToolCall, BuildTurnFailureNote, AnswerRpc)
    decisions = [e for e in effects if isinstance(e, ends)]
    assert len(decisions) == 1 and decisions[0] is effects[-1], f"one decision, last: {effects}"
    assert not isinstance(effects[-1], AnswerRpc)
    if isinstance(effects[-1], ExecuteDeferredToolCall):
        assert isinstance(session_input, ToolStepStarted)
    if isinstance(effects[-1], BuildTurnFailureNote):
        assert isinstance(session_input, (ModelCallFinished, ModelCallFailed))
    return result


@TOTALITY_SETTINGS
@given(state=session_states(), config=session_configs, session_input=session_inputs_any)
def test_reduce_is_total_over_reducer_shaped_states(state: SessionState, config: SessionConfig, session_input: SessionInput) -> None:
    check_total(state, config, session_input)


@TOTALITY_SETTINGS
@given(session=reachable_sessions(), session_input=session_inputs_any)
def test_reduce_is_total_over_reachable_states(session: tuple[SessionConfig, SessionState], session_input: SessionInput) -> None:
    config, state = session
    check_total(state, config, session_input)


@TOTALITY_SETTINGS
@given(state=hostile_session_states, config=session_configs, session_input=session_inputs_any)
def test_reduce_is_total_over_arbitrary_states(state: SessionState, config: SessionConfig, session_input: SessionInput) -> None:
    check_total(state, config, session_input)


@TOTALITY_SETTINGS
@given(state=st.one_of(session_states(), hostile_session_states), tool_call_id=call_ids, now_ms=times_ms)
def test_the_shells_helpers_are_total(state: SessionState, tool_call_id: str, now_ms: int) -> None:
    approval_wait(state, tool_call_id, now_ms)
    note = turn_failure_note(state)
    assert note is None or note.startswith("[Dex] The previous turn failed after these tool calls ran:")
    snapshot = snapshot_of(state)
    assert [m.sequence for m in snapshot.messages] == sorted(m.sequence for m in state.messages)


@settings(max_examples=100)
@given(config=session_configs, inputs=st.lists(session_inputs_any, max_size=12))
def test_folding_any_input_sequence_from_the_start_never_raises(config: SessionConfig, inputs: list[SessionInput]) -> None:
    state = SessionState.initial()
    for session_input in inputs:
        state = check_total(state, config, session_input).state
