"""Typed views of the ``flows`` and ``steps`` rows, and the after-commit effect list."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TypeVar

from google.protobuf.message import Message

from dex.dexpb import dex_pb2 as pb

from .step_phase import Phase
from .step_phase import parse as parse_phase

M = TypeVar("M", bound=Message)
FLOW_COLUMNS = (
    "uid, flow_id, run_id, flow_type, status, start_ms, close_ms, request_id, config, closing, timeout_ms"
)
STEP_COLUMNS = (
    "uid, seid, step_type, n, seq, input, options, from_seid, recovery, phase, attempt, "
    "first_attempt_ms, waiting, results, locals, heartbeat, output_seen, not_before_ms, last_failure"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowRow:
    """One Flow run."""

    uid: int
    flow_id: str
    run_id: str
    flow_type: str
    status: int
    start_ms: int
    close_ms: int
    request_id: str
    config: pb.FlowConfig
    closing: bool
    timeout_ms: int

    @property
    def running(self) -> bool:
        """Whether the run is still open."""
        return self.status == pb.FLOW_STATUS_RUNNING


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRow:
    """One Step execution (``seid`` is ``<StepType>-<n>``)."""

    uid: int
    seid: str
    step_type: str
    n: int
    seq: int
    input: pb.Value
    options: pb.StepOptions
    from_seid: str
    recovery: pb.RecoveryErrorInfo | None
    phase: Phase
    attempt: int
    first_attempt_ms: int
    waiting: pb.WaitingCondition | None
    results: pb.ConditionResults | None
    locals: list[pb.KV]
    heartbeat: pb.Value | None
    output_seen: bool
    not_before_ms: int
    last_failure: pb.StepMethodFailure | None = None
    """The current method's last failed attempt while it retries (None once the method completes)."""


def _parse(message: M, blob: bytes | None) -> M:
    if blob:
        message.ParseFromString(blob)
    return message


def flow_from_row(row: sqlite3.Row | tuple[object, ...]) -> FlowRow:
    """Build a FlowRow from a ``SELECT FLOW_COLUMNS`` row."""
    uid, flow_id, run_id, flow_type, status, start_ms, close_ms, request_id, config, closing, timeout_ms = row
    return FlowRow(
        uid=int(str(uid)), flow_id=str(flow_id), run_id=str(run_id), flow_type=str(flow_type),
        status=int(str(status)), start_ms=int(str(start_ms)), close_ms=int(str(close_ms)),
        request_id=str(request_id), config=_parse(pb.FlowConfig(), config if isinstance(config, bytes) else None),
        closing=bool(closing), timeout_ms=int(str(timeout_ms)),
    )


def step_from_row(row: tuple[object, ...]) -> StepRow:
    """Build a StepRow from a ``SELECT STEP_COLUMNS`` row."""
    (uid, seid, step_type, n, seq, input_, options, from_seid, recovery, phase, attempt,
     first_attempt_ms, waiting, results, locals_, heartbeat, output_seen, not_before_ms, last_failure) = row

    def blob(value: object) -> bytes | None:
        return value if isinstance(value, bytes) else None

    return StepRow(
        uid=int(str(uid)), seid=str(seid), step_type=str(step_type), n=int(str(n)), seq=int(str(seq)),
        input=_parse(pb.Value(), blob(input_)), options=_parse(pb.StepOptions(), blob(options)),
        from_seid=str(from_seid),
        recovery=_parse(pb.RecoveryErrorInfo(), blob(recovery)) if recovery is not None else None,
        phase=parse_phase(str(phase)), attempt=int(str(attempt)), first_attempt_ms=int(str(first_attempt_ms)),
        waiting=_parse(pb.WaitingCondition(), blob(waiting)) if waiting is not None else None,
        results=_parse(pb.ConditionResults(), blob(results)) if results is not None else None,
        locals=list(_parse(pb.GetAttributesQueryResponse(), blob(locals_)).attributes),
        heartbeat=_parse(pb.Value(), blob(heartbeat)) if heartbeat is not None else None,
        output_seen=bool(output_seen), not_before_ms=int(str(not_before_ms)),
        last_failure=_parse(pb.StepMethodFailure(), blob(last_failure)) if last_failure is not None else None,
    )


def kv_blob(entries: list[pb.KV]) -> bytes:
    """Serialize a KV list (Step-execution locals) for the ``steps.locals`` column."""
    return pb.GetAttributesQueryResponse(attributes=entries).SerializeToString()


@dataclass(slots=True)
class Effects:
    """What to do once a transaction commits: launch methods, cancel tasks, arm timers, ..."""

    launches: list[tuple[int, str]] = field(default_factory=list)
    cancels: list[tuple[int, str]] = field(default_factory=list)
    timers: list[tuple[float, int, str, int]] = field(default_factory=list)
    wait_checks: set[int] = field(default_factory=set)
    closed: set[int] = field(default_factory=set)
    touched: set[int] = field(default_factory=set)
    flow_timeouts: list[tuple[int, int, int]] = field(default_factory=list)
    """Flow timeouts to arm: (run, due time in ms, timeout policy)."""
    written: set[tuple[int, str]] = field(default_factory=set)
    """Attributes (run, key) the transaction wrote (wakes the waits on them)."""
    """Runs whose state the transaction changed otherwise (wakes their long polls)."""
