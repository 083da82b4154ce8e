"""The invocation record: what a committed Step method or RPC read that Dex's history does not keep.

Dex's history keeps each committed Step method's input, consumed messages, recovery error and writes,
and each state-changing RPC's input and writes: enough to rebuild the inputs the reducers saw
(``reconstruct``), except two things the Worker alone knew. The Worker clock: every input carries
``now_ms`` (a tool Step reads it again for each follow-up), which decides an interrupt's deadline and
whether a resolution came late. And the Flow's options (``SessionConfig``), which decide the deadline
and the model call cap. So each committed invocation records them, as a Dex history event
(``Context.record_event``) named ``dex_agents.invocation`` holding this record's wire JSON (a Dex
STRING), staged with the invocation's writes: an attempt that fails records nothing.

Invariants:
    * ``now_ms`` holds the clock of each input the invocation reduced, in order (a Step's started input,
      then each follow-up; a ``wait_for``'s one input; ``resolve_interrupt``'s call).
    * Only invocations whose inputs read a clock are recorded: every Step method, and a
      ``resolve_interrupt`` that wrote something (a refused or ``false`` answer commits nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, final

from pyrsistent import pvector
from pyrsistent.typing import PVector

from dex_agents.pure.machine.compaction import CompactionPolicy
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
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import SessionInput

INVOCATION_RECORD_EVENT: Final = "dex_agents.invocation"
"""The name of the Dex history event that holds an ``InvocationRecord`` (``Context.record_event``)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedCompaction:
    """The parts of the Flow's ``CompactionPolicy`` its reducers decide with (its ``instructions`` only
    go to the runner, so they are not recorded)."""

    reactive: bool
    trigger_tokens: int | None
    keep_recent_turns: int


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class InvocationRecord:
    """The Worker clock of each input one invocation reduced, and the options its reducers used.

    Attributes:
        now_ms: Each input's ``now_ms`` (epoch milliseconds, the Worker clock), in reduction order.
        interrupt_deadline_ms: ``SessionConfig.interrupt_deadline_ms`` (``None``: no deadline).
        max_model_calls_per_turn: ``SessionConfig.max_model_calls_per_turn``.
        compaction: ``SessionConfig.compaction`` (``None``: the Flow never compacts; absent in records
            written before compaction existed).
    """

    now_ms: PVector[int]
    interrupt_deadline_ms: int | None
    max_model_calls_per_turn: int
    compaction: RecordedCompaction | None = None

    def config(self) -> SessionConfig:
        """The options the reducers decided with (tool policies are not recorded: every deferred call
        carries its resolved policy, so no reducer reads them)."""
        recorded = self.compaction
        compaction = None if recorded is None else CompactionPolicy(
            reactive=recorded.reactive, trigger_tokens=recorded.trigger_tokens,
            keep_recent_turns=recorded.keep_recent_turns)
        return SessionConfig(interrupt_deadline_ms=self.interrupt_deadline_ms,
                             max_model_calls_per_turn=self.max_model_calls_per_turn, compaction=compaction)


def clock_of(session_input: SessionInput) -> int | None:
    """The Worker clock ``session_input`` carries (``None``: an RPC call that reads none)."""
    match session_input:
        case (ResolveInterruptCalled(now_ms=now_ms) | ExtendInterruptDeadlineCalled(now_ms=now_ms)
              | SessionRewindRecorded(now_ms=now_ms) | CancelTurnCalled(now_ms=now_ms)
              | CancelToolCallCalled(now_ms=now_ms) | ResolveToolOutcomeCalled(now_ms=now_ms)):
            return now_ms
        case (SendUserMessageCalled() | SendUserMessageOnceCalled() | AgentSnapshotRequested() | AgentMessagesListed()
              | CompactHistoryCalled()):
            return None
        case _:
            return session_input.invocation.now_ms


def invocation_record(clocks: Iterable[int], config: SessionConfig) -> InvocationRecord:
    """The record of an invocation whose inputs read ``clocks``, under ``config``."""
    policy = config.compaction
    compaction = None if policy is None else RecordedCompaction(
        reactive=policy.reactive, trigger_tokens=policy.trigger_tokens, keep_recent_turns=policy.keep_recent_turns)
    return InvocationRecord(now_ms=pvector(clocks), interrupt_deadline_ms=config.interrupt_deadline_ms,
                            max_model_calls_per_turn=config.max_model_calls_per_turn, compaction=compaction)


__all__ = ["INVOCATION_RECORD_EVENT", "InvocationRecord", "RecordedCompaction", "clock_of", "invocation_record"]
