# unasync: the source of a generated synchronous twin (scripts/unasync.py)
"""Rewind and fork, the reading part: where a session's turns ended in its Dex history, what a rewind
to one of them would remove, and the seed of a fork (``dex_agents.pure.offline.time_travel`` decides;
this module reads the history through ``AsyncServerCalls``).

A session's run ``r`` is read whole (``GetHistoryEvents``); a run that began by continue-as-new names
the run before it, which is read on demand (a fork may start from a turn of an earlier run; a rewind
may not: Dex's time travel restarts the current run from a point of its own history).

Invariants:
    * Nothing here writes; ``AsyncSessionClient.rewind`` and ``fork`` act on what it answers.
    * A ``SessionRewindError`` names the turn and why it is no point to go back to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from dex.dexpb import dex_pb2 as pb
from returns.pipeline import is_successful

from dex_agents.client.async_export import history_steps
from dex_agents.client.async_server_calls import AsyncServerCalls
from dex_agents.client.errors import SessionRewindError
from dex_agents.pure.offline.export_document import HistoryStep
from dex_agents.pure.offline.stored_values import StoredKey, apply_writes
from dex_agents.pure.offline.time_travel import (
    AwaitPoint,
    TurnEnd,
    agent_state_of,
    fork_seed,
    rewind_end,
    rewound_tool_calls,
    turn_ends,
    turn_not_ended,
    values_at,
)
from dex_agents.pure.values.persistence import AttributeName, StepType
from dex_agents.pure.values.session import AgentSessionFork, AgentState
from dex_agents.pure.values.time_travel import RecordSessionRewindInput
from dex_agents.pure.wire.json_value import JsonValue

__all__ = ["RewindPoint", "RunHistory", "fork_seed_of", "read_run", "removal_after", "rewind_point"]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunHistory:
    """One Dex run of a session: its ID, the run it continued from (``""``: none), its steps and the
    turns that ended in it."""

    run_id: str
    previous_run_id: str
    steps: list[HistoryStep]
    ends: list[TurnEnd]

    @property
    def state(self) -> AgentState | None:
        """The run's latest committed ``AgentState``."""
        return agent_state_of(values_at(self.steps, self.steps[-1].event_id).get((AttributeName.AGENT_STATE, None))
                              if self.steps else None)

    def end_of(self, turn: int) -> TurnEnd | None:
        """Where ``turn`` ended in this run (the last such point), ``None`` when it did not."""
        return next((end for end in reversed(self.ends) if end.turn == turn), None)


def _continued_from(history: list[pb.FlowHistoryEvent]) -> str:
    first = history[0] if history else None
    if first is None or not first.HasField("flow_started_or_continued"):
        return ""
    started = first.flow_started_or_continued
    return started.continued_start.previous_run_id if started.HasField("continued_start") else ""


async def read_run(server: AsyncServerCalls, session_id: str, run_id: str, *, timeout: float) -> RunHistory:
    """The run ``run_id`` of ``session_id`` (``""``: the current one), read whole."""
    history = await server.read_history(session_id, timeout=timeout, run_id=run_id)
    awaits = [AwaitPoint(event_id=event.event_id, step_execution_id=event.step_wait_for_pending.context.step_execution_id)
              for event in history if event.HasField("step_wait_for_pending")
              and event.step_wait_for_pending.context.step_type == StepType.AWAIT_USER_MESSAGE]
    steps = await history_steps(server, session_id, history)
    return RunHistory(run_id=run_id, previous_run_id=_continued_from(history), steps=steps,
                      ends=turn_ends(steps, awaits))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RewindPoint:
    """Where a rewind to ``end.turn`` restarts the current run, and what it would remove."""

    end: TurnEnd
    removal: RecordSessionRewindInput


def rewind_point(run: RunHistory, run_id: str, to_turn: int, reason: str | None) -> RewindPoint:
    """The point of ``run`` (the current run, whose Dex ID is ``run_id``) right after ``to_turn`` ended,
    and what a rewind to it removes.

    Raises:
        SessionRewindError: ``to_turn`` has not ended, nothing came after it, or it ended in an earlier
            run (before a continue-as-new).
    """
    found = rewind_end(run.state, run.ends, to_turn)
    if not is_successful(found):
        raise SessionRewindError(found.failure())
    end = found.unwrap()
    return RewindPoint(end=end, removal=removal_after(run, run_id, end, reason))


def removal_after(run: RunHistory, run_id: str, end: TurnEnd, reason: str | None) -> RecordSessionRewindInput:
    """What a rewind of ``run`` (Dex run ``run_id``) to ``end`` removes: the turns started after it and
    the tool calls recorded after it that may have had an effect."""
    state = run.state
    started = end.turn if state is None else state.turn_count
    return RecordSessionRewindInput(to_turn=end.turn, reason=reason, previous_run_id=run_id,
                                    removed_turn_count=max(0, started - end.turn),
                                    tool_calls=rewound_tool_calls(run.steps, end.event_id))


async def fork_seed_of(server: AsyncServerCalls, session_id: str, at_turn: int, *,
                       timeout: float) -> AgentSessionFork:
    """The seed of a fork of ``session_id`` after turn ``at_turn``: the values committed right after it
    ended, in the run it ended in (the current one or, after a continue-as-new, an earlier one: a
    continued run's history starts from the state its first event carries, so every older run's writes
    come first, as in an export).

    Raises:
        SessionRewindError: ``at_turn`` has not ended (or its values cannot be read).
    """
    runs = [await read_run(server, session_id, "", timeout=timeout)]
    not_ended = turn_not_ended(runs[0].state, at_turn)
    if not_ended is not None:
        raise SessionRewindError(not_ended)
    while runs[-1].previous_run_id:
        runs.append(await read_run(server, session_id, runs[-1].previous_run_id, timeout=timeout))
    lineage = list(reversed(runs))  # oldest first
    found = next(((index, end) for index, run in reversed(list(enumerate(lineage)))
                  for end in [run.end_of(at_turn)] if end is not None), None)
    if found is None:
        raise SessionRewindError(f"turn {at_turn} has no end in the session's history")
    index, end = found
    values: dict[StoredKey, JsonValue] = {}
    for older in lineage[:index]:
        values = apply_writes(values, values_at(older.steps, older.steps[-1].event_id) if older.steps else {})
    values = apply_writes(values, values_at(lineage[index].steps, end.event_id))
    seed = fork_seed(session_id, at_turn, values)
    if not is_successful(seed):
        raise SessionRewindError(f"cannot fork after turn {at_turn}: {seed.failure()}")
    return seed.unwrap()
