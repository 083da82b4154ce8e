"""Offline replay: fold recorded session inputs through the reducers.

``replay(inputs)`` starts from ``SessionState.initial()`` and applies ``reduce`` to every input in
order; rejected inputs leave the state unchanged, exactly as in the live session (a rejected attempt
commits nothing). Folding the inputs a session recorded therefore reproduces its state, and
``replay_snapshot`` the ``get_agent_snapshot`` answer that state implies. This is what offline tools
import; it needs no Dex, no runner and no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from dex_agents.pure.machine.reducers import reduce, snapshot_of
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import SessionInput

_DEFAULT_CONFIG = SessionConfig()


def replay(
    inputs: Iterable[SessionInput],
    config: SessionConfig = _DEFAULT_CONFIG,
    initial: SessionState | None = None,
) -> SessionState:
    """Return the state after folding ``inputs`` through ``reduce`` from ``initial`` (default: not started)."""
    state = SessionState.initial() if initial is None else initial
    for session_input in inputs:
        state = reduce(state, config, session_input).state
    return state


def replay_snapshot(
    inputs: Iterable[SessionInput],
    config: SessionConfig = _DEFAULT_CONFIG,
    initial: SessionState | None = None,
) -> AgentSnapshot:
    """The ``get_agent_snapshot`` answer of ``replay(inputs, config, initial)``."""
    return snapshot_of(replay(inputs, config, initial))


__all__ = ["replay", "replay_snapshot"]
