"""Offline replay of an exported session through the installed reducers, and its first difference.

``replay_export(document)`` folds the export's inputs through ``reduce`` (no engine, no network, no
clock), step by step in commit order, and checks three things in turn, reporting the first that
fails (``Difference``: the value, the turn, the input that produced it):

1. Each transition is one the live attempt could have committed (no rejection, no failed attempt).
2. After each history step, the Attributes and map instances the replayed inputs wrote are exactly
   those Dex committed for that step (same keys, same wire JSON, deletes included), and so are the
   Channel messages they published.
3. At the end, the replayed ``get_agent_snapshot`` answer is the exported snapshot.

An exported session kept in a test suite is a golden session: replaying it there proves the installed
reducers still treat it as they did when it ran.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, final

from pyrsistent import PMap as PMapType
from pyrsistent import pvector
from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from dex_agents.pure.offline.export_document import METHOD_RPC, ExportDocument, ExportError, HistoryStep, read_export
from dex_agents.pure.offline.input_wire import input_from_data, input_kind
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.values.persistence import MapName
from dex_agents.pure.machine.reducers import reduce, snapshot_of
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import SessionInput
from dex_agents.pure.offline.stored_values import (
    StoredKey,
    canonical_stored,
    freeze,
    same_json,
    stored_publishes,
    stored_writes,
)
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, Transition
from dex_agents.pure.wire import JSON_VALUE_TYPE, JsonData, canonical_json, record_type, to_json_data

Reducer = Callable[[SessionState, SessionConfig, SessionInput], Transition]
"""What folds one input (``dex_agents.pure.machine.reducers.reduce``, or a variant under test)."""

_SNAPSHOT: Final = record_type(AgentSnapshot)

_Writer = tuple[int | None, SessionState, SessionState]
"""The input (its index) whose transition produced a value, and the states around it."""


def freeze_list(values: Iterable[JsonValue]) -> JsonValue:
    """A list of JSON values as one JSON array value."""
    return pvector(values)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """The first place where the replay does not reproduce the exported session.

    Attributes:
        value: What differs: a stored value (``AgentMessages/000000000004``), a snapshot field
            (``snapshot.state.completed_turn_count``), or ``transition`` (the reducers refused an input).
        expected: The exported JSON (``None``: absent).
        replayed: The replay's JSON (``None``: absent).
        turn_id: The turn the value belongs to, when one does.
        input_index: The index in the export's ``inputs`` of the input that produced it (``None`` at the
            snapshot, or for a step the replay gave no input).
        input_kind: That input's kind (``"tool_call_succeeded"``).
        step: The history step it happened in (``CallTool-1 (execute, attempt 1)``).
        explanation: One sentence.
    """

    value: str
    expected: JsonValue
    replayed: JsonValue
    turn_id: str | None
    input_index: int | None
    input_kind: str | None
    step: str | None
    explanation: str

    def describe(self) -> list[str]:
        """The difference as lines of text."""
        where = [f"  step: {self.step}"] if self.step is not None else []
        if self.input_index is not None:
            where.append(f"  input: #{self.input_index} ({self.input_kind})")
        if self.turn_id is not None:
            where.append(f"  turn: {self.turn_id}")
        return [f"first difference: {self.value}: {self.explanation}", *where,
                f"  exported: {_shown(self.expected)}", f"  replayed: {_shown(self.replayed)}"]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """What ``replay_export`` found: the replayed snapshot and the first difference (``None``: identical)."""

    session_id: str
    input_count: int
    step_count: int
    snapshot: AgentSnapshot
    difference: Difference | None
    rewound_run_count: int = 0
    """Runs a rewind replaced (the export's ``rewound_runs``): their removed steps are not replayed."""

    @property
    def identical(self) -> bool:
        return self.difference is None

    def describe(self) -> list[str]:
        """The report as lines of text (what ``dex-agents replay`` prints)."""
        head = (f"replay of session {self.session_id}: {self.input_count} inputs through {self.step_count} "
                f"history steps")
        rewound = [f"  the export also holds {self.rewound_run_count} run(s) a rewind replaced (rewound_runs): their "
                   f"removed steps are not replayed"] if self.rewound_run_count else []
        if self.difference is None:
            return [f"{head}: identical (every step's writes and the snapshot reproduced)", *rewound]
        return [f"{head}: differs", *self.difference.describe(), *rewound]


def _shown(value: JsonValue) -> str:
    return "absent" if value is None else canonical_json(to_json_data(value, JSON_VALUE_TYPE))


def _step_label(step: HistoryStep) -> str:
    if step.method == METHOD_RPC:
        return f"rpc {step.rpc_name} (event {step.event_id})"
    return f"{step.step_execution_id} ({step.method}, attempt {step.attempt})"


def _key_label(key: StoredKey) -> str:
    name, instance = key
    return name if instance is None else f"{name}/{instance}"


def decoded_inputs(document: ExportDocument) -> Result[list[tuple[int, SessionInput]], ExportError]:
    """The export's inputs, decoded, each with its step index (in range and in commit order)."""
    decoded: list[tuple[int, SessionInput]] = []
    for index, exported in enumerate(document.inputs):
        if not 0 <= exported.step < len(document.steps) or (decoded and exported.step < decoded[-1][0]):
            return Failure(ExportError(message=f"malformed session export: inputs[{index}].step is "
                                               f"{exported.step}, not a step index in commit order"))
        result = input_from_data(to_json_data(exported.input, JSON_VALUE_TYPE))
        if not is_successful(result):
            failure = result.failure()
            return Failure(ExportError(message=f"malformed session export: at $.inputs[{index}].input"
                                               f"{failure.path[1:]}: expected {failure.expected}, got {failure.got}"))
        decoded.append((exported.step, result.unwrap()))
    return Success(decoded)


def _turn_of(key: StoredKey, value: JsonValue, before: SessionState, after: SessionState) -> str | None:
    if key[0] == MapName.AGENT_MESSAGES and isinstance(value, PMapType):
        turn = value.get("turn_id")
        if isinstance(turn, str):
            return turn
    return before.current_turn_id or after.current_turn_id


@final
class _Replay:
    """The fold, one history step at a time (see the module docstring)."""

    def __init__(self, document: ExportDocument, inputs: Sequence[tuple[int, SessionInput]], reducer: Reducer) -> None:
        self.document = document
        self.inputs = inputs
        self.reducer = reducer
        self.state = SessionState.initial()
        self.config = SessionConfig()

    def run(self) -> Difference | None:
        next_input = 0
        for index, step in enumerate(self.document.steps):
            if step.recorded is not None:
                self.config = step.recorded.config()
            first = next_input
            while next_input < len(self.inputs) and self.inputs[next_input][0] == index:
                next_input += 1
            difference = self._step(step, range(first, next_input))
            if difference is not None:
                return difference
        return self._snapshot()

    def _step(self, step: HistoryStep, positions: range) -> Difference | None:
        written: dict[StoredKey, JsonValue] = {}
        published: dict[StoredKey, list[JsonValue]] = {}
        writer: dict[StoredKey, _Writer] = {}
        for position in positions:
            session_input = self.inputs[position][1]
            before = self.state
            transition = self.reducer(before, self.config, session_input)
            if transition.fails_attempt:
                error = getattr(transition.ending, "error", "")
                return Difference(value="transition", expected=None, replayed=None, turn_id=before.current_turn_id,
                                  input_index=position, input_kind=input_kind(session_input), step=_step_label(step),
                                  explanation=f"the installed reducers refuse this input ({error}); the live "
                                              f"invocation committed it")
            self.state = transition.state
            if isinstance(transition, StepTransition | RpcTransition):
                for key, value in stored_writes(transition.effects).items():
                    written[key] = value
                    writer[key] = (position, before, self.state)
                for key, values in stored_publishes(transition.effects).items():
                    published.setdefault(key, []).extend(values)
                    writer[(f"published {key[0]}", key[1])] = (position, before, self.state)
        fallback: _Writer = (positions[-1] if positions else None, self.state, self.state)
        committed = {(write.name, write.instance): canonical_stored(write.name, write.value) for write in step.writes}
        difference = self._mismatch(step, committed, written, writer, fallback, "")
        if difference is not None:
            return difference
        sent = {(messages.name, messages.instance): freeze_list([canonical_stored(messages.name, value)
                                                                  for value in messages.values])
                for messages in step.published}
        replayed = {key: freeze_list(values) for key, values in published.items()}
        return self._mismatch(step, sent, replayed, writer, fallback, "published ")

    def _mismatch(self, step: HistoryStep, committed: Mapping[StoredKey, JsonValue],
                  replayed: Mapping[StoredKey, JsonValue], writer: Mapping[StoredKey, _Writer], fallback: _Writer,
                  prefix: str) -> Difference | None:
        """The first key whose committed and replayed JSON differ (committed keys first, in Dex's order)."""
        for key in [*committed, *(key for key in replayed if key not in committed)]:
            expected, mine = committed.get(key), replayed.get(key)
            if key in committed and key in replayed and same_json(expected, mine):
                continue
            culprit, before, after = writer.get((f"{prefix}{key[0]}", key[1]) if prefix else key, fallback)
            what = ("the replay does not write it" if key not in replayed else
                    "Dex committed no such write" if key not in committed else "the replay writes another value")
            if prefix:
                what = what.replace("write", "publish")
            return Difference(value=prefix + _key_label(key), expected=expected if key in committed else None,
                              replayed=mine if key in replayed else None,
                              turn_id=_turn_of(key, expected if expected is not None else mine, before, after),
                              input_index=culprit,
                              input_kind=None if culprit is None else input_kind(self.inputs[culprit][1]),
                              step=_step_label(step), explanation=f"{what} in this step")
        return None

    def _snapshot(self) -> Difference | None:
        replayed = to_json_data(snapshot_of(self.state), _SNAPSHOT)
        expected = to_json_data(self.document.snapshot, _SNAPSHOT)
        found = first_json_difference(expected, replayed, "snapshot")
        if found is None:
            return None
        path, left, right = found
        return Difference(value=path, expected=None if left is None else freeze(left),
                          replayed=None if right is None else freeze(right), turn_id=self.state.current_turn_id,
                          input_index=None, input_kind=None, step=None,
                          explanation="the replayed snapshot differs from the exported one")


def first_json_difference(expected: JsonData, replayed: JsonData, path: str) -> tuple[str, JsonData, JsonData] | None:
    """The path and the two values where two JSON values first differ (``None``: the same JSON)."""
    if isinstance(expected, dict) and isinstance(replayed, dict):
        for key in sorted({*expected, *replayed}):
            found = first_json_difference(expected.get(key), replayed.get(key), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(replayed, list):
        for index in range(max(len(expected), len(replayed))):
            left = expected[index] if index < len(expected) else None
            right = replayed[index] if index < len(replayed) else None
            found = first_json_difference(left, right, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if canonical_json(expected) == canonical_json(replayed):
        return None
    return path, expected, replayed


def replay_export(document: ExportDocument, *, reducer: Reducer = reduce) -> Result[ReplayReport, ExportError]:
    """Replay ``document``'s inputs through ``reducer`` and report the first difference (see the module
    docstring); a failure when its inputs cannot be decoded."""
    inputs = decoded_inputs(document)
    if not is_successful(inputs):
        return Failure(inputs.failure())
    replay = _Replay(document, inputs.unwrap(), reducer)
    difference = replay.run()
    return Success(ReplayReport(session_id=document.session.session_id, input_count=len(document.inputs),
                                step_count=len(document.steps), snapshot=snapshot_of(replay.state),
                                difference=difference, rewound_run_count=len(document.rewound_runs)))


def replay_export_text(text: str, *, reducer: Reducer = reduce) -> Result[ReplayReport, ExportError]:
    """``replay_export`` of an export's JSON text (``read_export`` first)."""
    document = read_export(text)
    if not is_successful(document):
        return Failure(document.failure())
    return replay_export(document.unwrap(), reducer=reducer)


__all__ = ["Difference", "ReplayReport", "Reducer", "decoded_inputs", "first_json_difference", "replay_export",
           "replay_export_text"]
