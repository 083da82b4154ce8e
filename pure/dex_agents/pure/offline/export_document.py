"""The exported session: one self-describing, versioned JSON document with what offline work needs.

``dex-agents sessions export`` writes it (``dex_agents.client.export``); ``dex-agents replay`` and
``replay_report.replay_export`` read it. Its sections (``docs/wire.md`` section 10):

| Section | What |
| --- | --- |
| ``format``, ``version`` | ``"dex-agents-session-export"``, ``1``: a reader refuses any other |
| ``session`` | the session ID, Flow type, run ID, Dex status and start time |
| ``values`` | every committed Attribute and map instance, as the wire JSON Dex holds |
| ``queued_messages`` | the ``QueuedUserMessages`` not consumed yet |
| ``snapshot`` | the ``AgentSnapshot`` those values imply (what a replay must reproduce) |
| ``events`` | the ``AgentEvents`` the Stream still retains, oldest first, with their cursors |
| ``steps`` | Dex's history of the run: each Step method that completed or failed for good, each RPC that wrote, with its input, consumed messages, writes, publishes, moves, failure and invocation record |
| ``inputs`` | the inputs the reducers saw, in commit order, each with the index of its step |
| ``reconstruction`` | where the inputs' clock came from and what the reconstruction could not know |
| ``rewound_runs`` | ours, may be absent: each run a rewind replaced, with the steps it committed after the rewind's point (the removed turns) |

Invariants:
    * Every record decodes as strictly as the wire module (unknown fields refused); ``read_export``
      checks ``format`` and ``version`` first, so a file of another version is refused by name.
    * ``render_export(d)`` is deterministic (canonical JSON, one list element per line) and
      ``read_export(render_export(d)) == Success(d)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final, final

from pyrsistent import pvector
from pyrsistent.typing import PVector
from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from dex_agents.pure.machine.invocation_record import InvocationRecord
from dex_agents.pure.wire.json_value import JsonObject, JsonValue
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.values.session import AgentEvent, AgentUserMessage
from dex_agents.pure.wire import canonical_json, decode_as, record_type, to_json_data

EXPORT_FORMAT: Final = "dex-agents-session-export"
EXPORT_VERSION: Final = 1

METHOD_EXECUTE: Final = "execute"
METHOD_WAIT_FOR: Final = "wait_for"
METHOD_RPC: Final = "rpc"
OUTCOME_COMPLETED: Final = "completed"
OUTCOME_FAILED: Final = "failed"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExportedSession:
    """The session's run. ``status`` is Dex's Flow status in lower case (``"running"``, ``"canceled"``)."""

    session_id: str
    flow_type: str
    run_id: str
    status: str
    started_at: str | None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StoredValue:
    """One Attribute (``instance`` null) or map instance and its wire JSON; ``value`` null: deleted."""

    name: str
    instance: str | None
    value: JsonValue


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelMessages:
    """Messages of one Channel (``instance`` null) or ChannelMap instance, in order."""

    name: str
    instance: str | None
    values: PVector[JsonValue]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubFlowOutcome:
    """How a SubFlow of a Step's wait closed (ours): Dex's Flow status name (``COMPLETED``, ``FAILED``,
    ...) and its output, as JSON (null without one)."""

    status: str
    output: JsonValue


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepFailure:
    """A failed attempt as Dex recorded it: its detail and error type (either may be empty)."""

    detail: str
    error_type: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryStep:
    """One committed Step method or RPC of the run's history (or a Step method that failed for good).

    Attributes:
        event_id: Dex's history event ID (increasing in commit order).
        time: When Dex recorded it (ISO-8601 UTC), the server's clock.
        method: ``"execute"``, ``"wait_for"`` or ``"rpc"``.
        outcome: ``"completed"`` or ``"failed"`` (its last attempt failed and no retry was left).
        step_type, step_execution_id, from_step_execution_id: The Step execution (null for an RPC).
        attempt: The attempt that completed or failed (0 for an RPC).
        rpc_name: The RPC (null for a Step).
        input: The Step's input or the RPC's, as JSON.
        output: The RPC's answer (null for a Step).
        consumed: The messages the Step's wait consumed (``execute`` only).
        timer_fired: Whether a Timer of the Step's wait fired.
        writes: The Attributes and map instances it wrote, in the order Dex recorded them.
        published: The Channel messages it published.
        next_steps: The Step types it moved to.
        failure: The last failed attempt: the one that ended a failed method, or the last retried
            one before the completion (null when none failed).
        recorded: The ``dex_agents.invocation`` record it committed (null in a history without one).
        sub_flows: The SubFlow results its wait delivered, by index (``execute`` only; ours, may be
            absent: an ``AwaitSubAgent``'s child session).
    """

    event_id: int
    time: str | None
    method: str
    outcome: str
    step_type: str | None
    step_execution_id: str | None
    from_step_execution_id: str | None
    attempt: int
    rpc_name: str | None
    input: JsonValue
    output: JsonValue
    consumed: PVector[ChannelMessages]
    timer_fired: bool
    writes: PVector[StoredValue]
    published: PVector[ChannelMessages]
    next_steps: PVector[str]
    failure: StepFailure | None
    recorded: InvocationRecord | None
    sub_flows: PVector[SubFlowOutcome] = pvector()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExportedEvent:
    """One retained ``AgentEvents`` message, its cursor and when it was written."""

    cursor: str
    created_at: str | None
    event: AgentEvent


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExportedInput:
    """One input the reducers saw (``input_wire`` JSON), and the index in ``steps`` of its invocation."""

    step: int
    input: JsonObject


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Reconstruction:
    """How ``inputs`` were rebuilt from ``steps``.

    Attributes:
        clock: ``"recorded"`` (every input's clock is its invocation record's), ``"history"`` (none
            was recorded: the server's event time stands in), ``"mixed"``, or ``"none"`` (no input).
        notes: What the reconstruction could not know, per input where it applies.
    """

    clock: str
    notes: PVector[str]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RewoundRun:
    """A Dex run a rewind replaced (ours): the steps it committed after the point the session went back
    to (history event ``target_event_id``), which the session's own history no longer holds. Not
    replayed: the session's state does not include them."""

    run_id: str
    target_event_id: int
    steps: PVector[HistoryStep]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExportDocument:
    """An exported session (see the module docstring for the sections). ``rewound_runs`` (ours, may be
    absent: an export written before it reads as none) holds the turns each rewind removed."""

    format: str
    version: int
    exported_at: str
    exported_by: str
    session: ExportedSession
    values: PVector[StoredValue]
    queued_messages: PVector[AgentUserMessage]
    snapshot: AgentSnapshot
    events: PVector[ExportedEvent]
    steps: PVector[HistoryStep]
    inputs: PVector[ExportedInput]
    reconstruction: Reconstruction
    rewound_runs: PVector[RewoundRun] = pvector()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ExportError:
    """Why a text is not an export this version reads (a malformed file, another version)."""

    message: str

    def __str__(self) -> str:
        return self.message


_DOCUMENT: Final = record_type(ExportDocument)


def render_export(document: ExportDocument) -> str:
    """The document's JSON text: one top-level section per line, and each element of a list section
    (a step, an input, an event, a value) on a line of its own, in canonical JSON (keys sorted, compact,
    ASCII only); a final newline. Compact, and a diff shows which steps and inputs changed."""
    data = to_json_data(document, _DOCUMENT)
    assert isinstance(data, dict)
    if not data.get("rewound_runs"):  # ours: absent unless a rewind removed turns (older readers read the rest)
        data.pop("rewound_runs", None)
    sections = sorted(data.items())
    lines = ["{"]
    for position, (key, value) in enumerate(sections):
        comma = "," if position < len(sections) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"{json.dumps(key)}: [")
            lines.extend(canonical_json(element) + ("," if index < len(value) - 1 else "")
                         for index, element in enumerate(value))
            lines.append(f"]{comma}")
        else:
            lines.append(f"{json.dumps(key)}: {canonical_json(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _header_problem(text: str) -> str | None:
    """What is wrong with the text's ``format`` and ``version`` (``None``: the schema decides the rest)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        return None  # the strict decoder names the fault
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        return (f"not a dex-agents session export (its format is {found!r}, expected {EXPORT_FORMAT!r}); "
                f"write one with: dex-agents sessions export SESSION")
    version = data.get("version")
    if version != EXPORT_VERSION or isinstance(version, bool):
        return (f"this is a version {version!r} session export; this dex-agents reads version {EXPORT_VERSION} "
                f"(export the session again with this version, or replay it with the dex-agents that wrote it)")
    return None


def read_export(text: str) -> Result[ExportDocument, ExportError]:
    """Decode an export's text, refusing another format or version by name and any other fault with
    its JSON path."""
    problem = _header_problem(text)
    if problem is not None:
        return Failure(ExportError(message=problem))
    decoded = decode_as(text, _DOCUMENT)
    if not is_successful(decoded):
        return Failure(ExportError(message=f"malformed session export: {decoded.failure().message}"))
    return Success(decoded.unwrap())


__all__ = [
    "SubFlowOutcome",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "METHOD_EXECUTE",
    "METHOD_RPC",
    "METHOD_WAIT_FOR",
    "OUTCOME_COMPLETED",
    "OUTCOME_FAILED",
    "ChannelMessages",
    "ExportDocument",
    "ExportError",
    "ExportedEvent",
    "ExportedInput",
    "ExportedSession",
    "HistoryStep",
    "Reconstruction",
    "RewoundRun",
    "StepFailure",
    "StoredValue",
    "read_export",
    "render_export",
]
