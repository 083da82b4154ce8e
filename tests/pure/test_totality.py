"""Totality: every (state, input) pair gives a transition or a clear rejection, never an exception.

States come in three kinds: states a session really reaches (``reachable_sessions``, a legal walk
through ``reduce``), the shape the reducers produce (``session_states``: any status, counts, records,
interrupts and deadlines, including unreadable ones) and field-level arbitrary ones
(``hostile_session_states``: keys that disagree with records, negative and int64 counts). Inputs are
every Step input, ``wait_for`` input and RPC call with valid, odd and invalid values. Whatever comes in:

* ``reduce`` returns the transition of the input's kind; its inputs are unchanged;
* a rejection has no effects, a non-empty reason, and leaves the state unchanged; only a failed model
  call writes (its event) before ``FailAttempt``;
* a request changes no state, has only events before it, and comes from an input that may ask it;
* a wait changes no state;
* ``snapshot_of`` is total too.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dex_agents.pure.machine.endings import FailAttempt, RefuseRpc
from dex_agents.pure.machine.reducers import reduce, snapshot_of
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    CancelToolCallCalled,
    CancelTurnCalled,
    CompactHistoryCalled,
    ExtendInterruptDeadlineCalled,
    ResolveInterruptCalled,
    ResolveToolOutcomeCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
    SessionRewindRecorded,
)
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import SubAgentWaitStarted, ApprovalWaitStarted, ModelCallFailed, SessionInput
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, Transition, WaitTransition
from tests.pure.scenario_support import check_step_shape
from tests.pure.session_strategies import session_configs, session_inputs_any
from tests.pure.state_strategies import hostile_session_states, reachable_sessions, session_states

TOTALITY_SETTINGS = settings(max_examples=200)


def check_total(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
    state_before, input_before = repr(state), repr(session_input)
    result = reduce(state, config, session_input)
    assert repr(state) == state_before and repr(session_input) == input_before, "reduce mutated its inputs"
    match session_input:
        case (SendUserMessageCalled() | ResolveInterruptCalled() | AgentSnapshotRequested() | AgentMessagesListed()
              | SendUserMessageOnceCalled() | CompactHistoryCalled() | ExtendInterruptDeadlineCalled()
              | SessionRewindRecorded() | CancelTurnCalled() | CancelToolCallCalled() | ResolveToolOutcomeCalled()):
            assert isinstance(result, RpcTransition)
            if isinstance(result.ending, RefuseRpc):
                assert result.state == state and len(result.effects) == 0 and result.ending.error.strip()
        case ApprovalWaitStarted() | SubAgentWaitStarted():
            assert isinstance(result, WaitTransition) and result.state == state, "a wait changes nothing"
            assert not result.fails_attempt and not result.is_rejection
        case _:
            assert isinstance(result, StepTransition)
            check_step_shape(session_input, state, result)
            if isinstance(result.ending, FailAttempt):
                assert result.ending.error.strip() or isinstance(session_input, ModelCallFailed), "a rejection says why"
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
@given(state=st.one_of(session_states(), hostile_session_states))
def test_the_snapshot_is_total(state: SessionState) -> None:
    snapshot = snapshot_of(state)
    assert [m.sequence for m in snapshot.messages] == sorted(m.sequence for m in state.messages)


@settings(max_examples=100)
@given(config=session_configs, inputs=st.lists(session_inputs_any, max_size=12))
def test_folding_any_input_sequence_from_the_start_never_raises(config: SessionConfig, inputs: list[SessionInput]) -> None:
    state = SessionState.initial()
    for session_input in inputs:
        state = check_total(state, config, session_input).state
