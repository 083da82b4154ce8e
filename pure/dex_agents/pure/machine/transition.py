"""Transitions: what every reducer returns, a new state plus the effects that realise it and, last,
its ending, held apart so that nothing can follow the ending.

| Transition | Reduces | Effects | Ending |
| --- | --- | --- | --- |
| ``StepTransition`` | a ``StepInput`` | ``StepEffect`` (writes, events) | ``StepEnding``: a decision, a request or ``FailAttempt`` |
| ``WaitTransition`` | a ``WaitInput`` | none | ``WaitEnding`` |
| ``RpcTransition`` | an ``RpcCall`` | ``Write`` | ``AnswerRpc`` or ``RefuseRpc`` |

A transition may also carry its invocation's record (``record``: ``RecordInvocation``), which the
reduce entry point (``reducers.dispatch``) sets, never a reducer: a Step transition that ends in a
decision (``GoToSteps``, ``DeadEnd``) carries the clock of every input its invocation reduced
(``clocks``: the started input's, then each follow-up's); a ``wait_for`` transition always carries
one; an RPC transition carries one when it writes and its call read a clock (``resolve_interrupt``).

Invariant: a transition that fails the attempt (``FailAttempt``) or refuses the RPC (``RefuseRpc``)
leaves the state unchanged, so it loses nothing and the retried attempt starts from the same committed
state. A rejected input has no effects; a failed model call writes its event first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias, final

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.machine.effects import RecordInvocation, StepEffect, Write
from dex_agents.pure.machine.endings import (
    AnswerRpc,
    WaitEnding,
    FailAttempt,
    RefuseRpc,
    RpcEnding,
    RpcOutput,
    StepEnding,
)
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.flow.step_options import StepMovement
from dex_agents.pure.values.persistence import StepType


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepTransition:
    """A Step input's transition: the state after it, the effects in order, then the ending; ``clocks``
    (the Worker clock of each input its invocation reduced so far, this one last) and ``record`` (the
    invocation record a decision commits) are set by ``reduce_step`` and ``reduce_follow_up``."""

    state: SessionState
    effects: PVector[StepEffect]
    ending: StepEnding
    clocks: PVector[int] = pvector()
    record: RecordInvocation | None = None

    @property
    def fails_attempt(self) -> bool:
        """True when the attempt fails (``FailAttempt``): a rejection, or a failed model call's event
        then ``FailAttempt``. Only the events are kept; nothing is committed."""
        return isinstance(self.ending, FailAttempt)

    @property
    def is_rejection(self) -> bool:
        """True when the input was rejected (``FailAttempt`` with no effect before it)."""
        return self.fails_attempt and len(self.effects) == 0


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class WaitTransition:
    """A ``wait_for`` input's transition: the state (unchanged: a wait writes nothing) and the wait."""

    state: SessionState
    ending: WaitEnding
    record: RecordInvocation | None = None

    @property
    def fails_attempt(self) -> bool:
        """Never: a wait always has something to wait on (or skips)."""
        return False

    @property
    def is_rejection(self) -> bool:
        """Never (see ``fails_attempt``)."""
        return False


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RpcTransition:
    """An RPC call's transition: the state after it, the writes in order, then the answer or refusal."""

    state: SessionState
    effects: PVector[Write]
    ending: RpcEnding
    record: RecordInvocation | None = None

    @property
    def fails_attempt(self) -> bool:
        """True when the call is refused (``RefuseRpc``): the caller gets an error, nothing is written."""
        return isinstance(self.ending, RefuseRpc)

    @property
    def is_rejection(self) -> bool:
        """True when the call is refused (an RPC has no partial failure)."""
        return self.fails_attempt


Transition: TypeAlias = StepTransition | WaitTransition | RpcTransition
"""What ``reduce`` returns for any ``SessionInput``."""


def step(state: SessionState, effects: Iterable[StepEffect], ending: StepEnding) -> StepTransition:
    """A Step transition: ``effects`` in order, then ``ending``."""
    return StepTransition(state=state, effects=pvector(effects), ending=ending)


def reject(state: SessionState, error: str) -> StepTransition:
    """Reject a Step input: state unchanged, no effects, ``FailAttempt(error)``."""
    return StepTransition(state=state, effects=pvector(), ending=FailAttempt(error=error))


def wait(state: SessionState, ending: WaitEnding) -> WaitTransition:
    """A ``wait_for`` transition that waits on ``ending``."""
    return WaitTransition(state=state, ending=ending)


def answer(state: SessionState, output: RpcOutput, effects: Iterable[Write] = (), *,
           cancel_steps: Iterable[StepType] = (), next_steps: Iterable[StepMovement] = ()) -> RpcTransition:
    """An RPC transition: ``effects`` then ``AnswerRpc(output)``, canceling ``cancel_steps`` and
    starting ``next_steps``."""
    ending = AnswerRpc(output=output, cancel_steps=pvector(cancel_steps), next_steps=pvector(next_steps))
    return RpcTransition(state=state, effects=pvector(effects), ending=ending)


def refuse(state: SessionState, error: str) -> RpcTransition:
    """Refuse an RPC call: state unchanged, nothing written, ``RefuseRpc(error)``."""
    return RpcTransition(state=state, effects=pvector(), ending=RefuseRpc(error=error))


__all__ = [
    "RpcTransition",
    "StepTransition",
    "Transition",
    "WaitTransition",
    "answer",
    "refuse",
    "reject",
    "step",
    "wait",
]
