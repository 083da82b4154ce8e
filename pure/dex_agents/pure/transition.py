"""``Transition``: what every reducer returns, a new state plus the effects that realise it.

Invariant: a transition that fails the attempt (``FailAttempt``, always last) leaves the state
unchanged, so it loses nothing and the retried attempt starts from the same committed state. A
rejected input is ``FailAttempt`` alone; a failed model call writes its event first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import final

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.effects import AnswerRpc, Effect, FailAttempt, RpcOutput
from dex_agents.pure.state import SessionState


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Transition:
    """The reducers' one return type: the state after the input, and the effects, in order."""

    state: SessionState
    effects: PVector[Effect]

    @property
    def is_rejection(self) -> bool:
        """True when the input was rejected (the transition is one ``FailAttempt``)."""
        return len(self.effects) == 1 and isinstance(self.effects[0], FailAttempt)

    @property
    def fails_attempt(self) -> bool:
        """True when the attempt fails (the last effect is ``FailAttempt``): a rejection, or a failed
        model call's event then ``FailAttempt``. Only the events are kept; nothing is committed."""
        return len(self.effects) > 0 and isinstance(self.effects[-1], FailAttempt)


def transition(state: SessionState, effects: Iterable[Effect]) -> Transition:
    """Build a ``Transition`` from any iterable of effects."""
    return Transition(state=state, effects=pvector(effects))


def reject(state: SessionState, error: str) -> Transition:
    """Reject an input: state unchanged, one ``FailAttempt(error)``."""
    return Transition(state=state, effects=pvector([FailAttempt(error=error)]))


def answer(state: SessionState, output: RpcOutput, effects: Iterable[Effect] = ()) -> Transition:
    """An RPC transition: ``effects`` then ``AnswerRpc(output)``."""
    return Transition(state=state, effects=pvector([*effects, AnswerRpc(output=output)]))


__all__ = ["Transition", "answer", "reject", "transition"]
