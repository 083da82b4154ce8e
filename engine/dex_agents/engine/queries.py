"""Read-side and long-poll requests: describe, wait for a run, search, history, waits on Step
completion and Attribute values, Attribute reads. Long polls wait on the engine's change conditions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from dex.dexpb import dex_pb2 as pb

from . import history
from .repository import runs, state
from .core import EngineCore
from .errors import ServiceError, flow_not_found, invalid, long_poll_timeout, request_timeout
from .long_polls import LongPoll, Ready, WaitKey, long_poll_seconds, update_deadline
from .request_checks import parse_token
from .rows import FlowRow

DEFAULT_FLOW_WAIT = 60.0
DEFAULT_UPDATE_WAIT = 60.0

_STATUS_NAMES = {
    "running": pb.FLOW_STATUS_RUNNING, "completed": pb.FLOW_STATUS_COMPLETED, "failed": pb.FLOW_STATUS_FAILED,
    "terminated": pb.FLOW_STATUS_TERMINATED, "canceled": pb.FLOW_STATUS_CANCELED, "cancelled": pb.FLOW_STATUS_CANCELED,
    "timeout": pb.FLOW_STATUS_SERVER_SIDE_TIMEOUT_INTERNAL_ONLY,
}
MAX_QUERY_CHARS = 4096
"""Longest SearchFlows query accepted; parsing is done before the engine lock is taken."""
SearchClause = tuple[str, bool, str]
"""(field, equal, value) of one ``Field = 'v'`` or ``Field != 'v'`` clause."""
_CLAUSE = re.compile(r"^\s*([A-Za-z_][\w./-]*)\s*(=|!=)\s*(?:'([^']*)'|\"([^\"]*)\"|([\w.-]+))\s*$")
# A quoted value is consumed whole, so only an AND outside quotes (group 1) separates clauses.
_CLAUSE_SEPARATOR = re.compile(r"""'[^']*'|"[^"]*"|(\s+AND\s+)""", re.IGNORECASE)


def split_clauses(query: str) -> list[str]:
    """The query's clauses: split on ``AND`` (any case) outside quoted values, empty ones dropped."""
    clauses: list[str] = []
    start = 0
    for match in _CLAUSE_SEPARATOR.finditer(query):
        if match.group(1):
            clauses.append(query[start:match.start()])
            start = match.end()
    clauses.append(query[start:])
    return [clause for clause in clauses if clause.strip()]


def parse_search(query: str) -> list[SearchClause]:
    """The clauses of a SearchFlows query (no engine state: call it without the engine lock).

    Raises:
        ServiceError: INVALID_ARGUMENT for a query over MAX_QUERY_CHARS or a clause it cannot parse.
    """
    if len(query) > MAX_QUERY_CHARS:
        raise invalid(f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}")
    clauses = split_clauses(query)
    parsed: list[SearchClause] = []
    for clause in clauses:
        match = _CLAUSE.match(clause)
        if match is None:
            raise invalid(f"unsupported search clause: {clause!r}")
        value = next(v for v in match.group(3, 4, 5) if v is not None)
        parsed.append((match.group(1), match.group(2) == "=", value))
    return parsed


_FLOW_FIELDS = {
    "flowtype": "flow_type", "dexflowtype": "flow_type", "workflowtype": "flow_type", "flow_type": "flow_type",
    "flowid": "flow_id", "workflowid": "flow_id", "flow_id": "flow_id",
    "dexparentflowid": "parent_flow_id",
    "flowstatus": "status", "executionstatus": "status", "status": "status", "flow_status": "status",
}
"""Search fields answered from the ``flows`` row (any case) -> its column."""


def _sql_filter(parsed: list[SearchClause]) -> tuple[str, list[object], list[SearchClause]]:
    """The SQL condition of the clauses on a run's own fields, its parameters, and the clauses left
    (on indexed Attributes)."""
    conditions: list[str] = []
    parameters: list[object] = []
    rest: list[SearchClause] = []
    for field_name, equal, value in parsed:
        column = _FLOW_FIELDS.get(field_name.lower())
        if column is None:
            rest.append((field_name, equal, value))
            continue
        wanted: object = value
        if column == "status":
            wanted = _STATUS_NAMES.get(value.lower())
            if wanted is None:  # no run has an unknown status
                conditions.append("0" if equal else "1")
                continue
        conditions.append(f"{column} {'=' if equal else '!='} ?")
        parameters.append(wanted)
    return " AND ".join(conditions) or "1", parameters, rest


def _attribute_matches(indexed: list[pb.KV], field_name: str, equal: bool, value: str) -> bool:
    """Whether a run's indexed Attribute ``field_name`` is (or, ``equal`` False, is not) ``value``
    (a run without the Attribute is not equal to any value)."""
    found = next((kv.value for kv in indexed if kv.key == field_name), None)
    if found is None:
        return not equal
    kind = found.WhichOneof("kind")
    actual = str(getattr(found, kind)).lower() if kind == "bool_value" else str(getattr(found, kind)) if kind else ""
    return (actual == value) == equal


def _entry(flow: FlowRow, indexed: list[pb.KV]) -> pb.SearchFlowsResponseEntry:
    entry = pb.SearchFlowsResponseEntry(flow_id=flow.flow_id, run_id=flow.run_id, flow_type=flow.flow_type,
                                        flow_status=flow.status, start_time=_stamp(flow.start_ms),  # type: ignore[arg-type]
                                        indexed_attributes=indexed)
    if flow.close_ms:
        entry.close_time.CopyFrom(_stamp(flow.close_ms))
    return entry


def _stamp(ms: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp


class Queries:
    """Read and wait requests; ``wait_*`` methods are called with the engine lock held."""

    def __init__(self, engine: EngineCore) -> None:
        self.engine = engine

    def _flow(self, flow_id: str, run_id: str = "") -> FlowRow:
        return self.engine.require_flow(flow_id, run_id)

    def summary(self, request: pb.GetFlowSummaryRequest) -> pb.GetFlowSummaryResponse:
        self.engine.assert_locked()
        flow = self._flow(request.flow_id, request.run_id)
        response = pb.GetFlowSummaryResponse(
            flow_execution_id=pb.FlowExecutionID(flow_id=flow.flow_id, run_id=flow.run_id),
            first_run_id=flow.run_id, request_id=flow.request_id, flow_type=flow.flow_type,
            flow_status=flow.status, start_time=_stamp(flow.start_ms), run_attempt=1)  # type: ignore[arg-type]
        if flow.close_ms:
            response.close_time.CopyFrom(_stamp(flow.close_ms))
        return response

    def wait_for_flow(self, request: pb.WaitForFlowRequest, poll: LongPoll | None = None) -> pb.FlowResult:
        self.engine.assert_locked()
        if request.wait_time_seconds < 0:
            raise invalid("wait_time_seconds must not be negative")
        deadline = time.monotonic() + long_poll_seconds(request.wait_time_seconds, DEFAULT_FLOW_WAIT,
                                                        self.engine.timing.long_poll_cap)

        def closed() -> Ready[pb.FlowResult] | WaitKey:
            flow = self._flow(request.flow_id, request.run_id)
            return ("closed", flow.uid) if flow.running else Ready(self.engine.flow_result(flow.uid))

        return self.engine.long_polls.wait_until(
            closed, deadline, poll, lambda: long_poll_timeout(f"flow {request.flow_id} is still running"))

    def search(self, request: pb.SearchFlowsRequest, parsed: list[SearchClause]) -> pb.SearchFlowsResponse:
        """One page of the runs matching ``parsed`` (see :func:`parse_search`), newest first.

        Runs without the engine lock, on a read-only connection of its own (the last committed
        state): however many runs a query scans, no other call waits for it. Clauses on the run's
        own fields (type, id, status, parent Flow ID) are answered by SQLite with its indexes;
        clauses on indexed Attributes are checked per candidate run; the scan stops once the page
        and one more match are found."""
        if request.page_size < 0:
            raise invalid("page_size must not be negative")
        offset = parse_token(request.next_page_token, "next_page_token")
        size = request.page_size or 100
        where, parameters, on_attributes = _sql_filter(parsed)
        if not request.include_continued_as_new:
            where = f"({where}) AND status != {pb.FLOW_STATUS_CONTINUED_AS_NEW}"
        page: list[pb.SearchFlowsResponseEntry] = []
        matched = 0
        with self.engine.store.reader() as db:
            for flow in runs.search(db, where, parameters):
                indexed = state.indexed_attributes(db, flow.uid)
                if not all(_attribute_matches(indexed, *clause) for clause in on_attributes):
                    continue
                matched += 1
                if matched > offset + size:
                    break
                if matched > offset:
                    page.append(_entry(flow, indexed))
        response = pb.SearchFlowsResponse(flow_runs=page)
        if matched > offset + size:
            response.next_page_token = str(offset + size)
        return response

    def history(self, request: pb.GetHistoryEventsRequest) -> pb.GetHistoryEventsResponse:
        self.engine.assert_locked()
        flow = self._flow(request.flow_id, request.run_id)
        if request.estimate_page_size < 0:
            raise invalid("estimate_page_size must not be negative")
        after = max(request.start_internal_event_id - 1, 0) if request.start_internal_event_id else 0
        if request.next_page_token:
            after = parse_token(request.next_page_token.decode("ascii", "replace"), "next_page_token")
        limit = request.estimate_page_size or 1000
        events = history.events(self.engine.store.db, flow.uid, after, limit + 1)
        response = pb.GetHistoryEventsResponse(events=events[:limit])
        if len(events) > limit:
            last = events[limit - 1].event_id
            response.next_page_token = str(last).encode()
            response.next_internal_event_id = last + 1
        return response

    def _update_deadline(self, request_timeout_seconds: int, handler_timeout_seconds: int) -> tuple[float, bool]:
        return update_deadline(request_timeout_seconds, handler_timeout_seconds, DEFAULT_UPDATE_WAIT,
                               self.engine.timing.long_poll_cap)

    def wait_for_step(self, request: pb.WaitForStepCompletionRequest, poll: LongPoll | None = None) -> None:
        """Return once the execution completed or was canceled in a running run; a run that closes first
        is ``FLOW_NOT_ACTIVE`` (its remaining Steps are canceled by the close, not by a decision)."""
        self.engine.assert_locked()
        if not request.step_type or not request.step_execution_number.isdigit():
            raise invalid("step_type and a positive step_execution_number are required")
        seid = f"{request.step_type}-{int(request.step_execution_number)}"
        deadline, is_request = self._update_deadline(request.request_timeout_seconds,
                                                     request.internal_handler_timeout_seconds)

        def completed() -> Ready[None] | WaitKey:
            flow = self._flow(request.flow_id)
            step = self.engine.step(flow.uid, seid)
            if step is not None and (step.phase == "done" or (step.phase == "canceled" and flow.running)):
                return Ready(None)
            if not flow.running:
                raise flow_not_found(request.flow_id, f"flow {request.flow_id} closed before {seid} completed")
            return ("state", flow.uid)

        self.engine.long_polls.wait_until(completed, deadline, poll,
                                          _expired(is_request, f"{seid} has not completed"))

    def wait_for_attribute(self, request: pb.WaitForAttributeRequest,
                           poll: LongPoll | None = None) -> pb.WaitForAttributeResponse:
        self.engine.assert_locked()
        match = request.match
        if not match.key or match.operator == pb.ATTRIBUTE_MATCH_OPERATOR_UNSPECIFIED or not match.HasField("operand"):
            raise invalid("match requires key, operator and operand")
        deadline, is_request = self._update_deadline(request.request_timeout_seconds,
                                                      request.internal_handler_timeout_seconds)

        def matched() -> Ready[pb.WaitForAttributeResponse] | WaitKey:
            flow = self._flow(request.flow_id)
            value = state.attribute(self.engine.store.db, flow.uid, match.key)
            if _compare(value, match.operator, match.operand):
                return Ready(pb.WaitForAttributeResponse(matched_value=value))
            if not flow.running:
                raise flow_not_found(request.flow_id, f"flow {request.flow_id} closed before the attribute matched")
            return ("attribute", (flow.uid, match.key))

        return self.engine.long_polls.wait_until(matched, deadline, poll,
                                                 _expired(is_request, f"attribute {match.key} has not matched"))

    def get_attributes(self, request: pb.GetAttributesRequest) -> pb.GetAttributesResponse:
        self.engine.assert_locked()
        flow = self._flow(request.flow_id, request.run_id)
        db = self.engine.store.db
        if request.all_keys:
            kvs = state.all_attributes(db, flow.uid)
        else:
            kvs = [pb.KV(key=k, value=v) for k in request.keys if (v := state.attribute(db, flow.uid, k)) is not None]
        return pb.GetAttributesResponse(attributes=kvs)


def _expired(is_request: bool, what: str) -> Callable[[], ServiceError]:
    """The error of a wait on an update whose deadline passed: the request's own timeout or the
    long poll's."""
    return lambda: request_timeout(what) if is_request else long_poll_timeout(what)


def _scalar(value: pb.Value) -> object:
    kind = value.WhichOneof("kind")
    if kind in ("string_value", "int_value", "double_value", "bool_value"):
        return getattr(value, kind)
    if kind == "null_value" or kind is None:
        return None
    raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "only scalar attributes can be awaited")


def _compare(value: pb.Value | None, operator: int, operand: pb.Value) -> bool:
    right = _scalar(operand)
    left = _scalar(value) if value is not None else None
    if left is None:
        if isinstance(right, bool):
            left = False
        elif isinstance(right, (int, float)):
            left = 0
        elif isinstance(right, str):
            left = ""
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_EQUAL:
        return bool(left == right)
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_NOT_EQUAL:
        return bool(left != right)
    if not isinstance(left, (int, float)) or not isinstance(right, (int, float)) or isinstance(left, bool):
        raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, "ordering matches need numeric attributes")
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_GREATER_THAN:
        return left > right
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_GREATER_THAN_OR_EQUAL:
        return left >= right
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_LESS_THAN:
        return left < right
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_LESS_THAN_OR_EQUAL:
        return left <= right
    raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, f"unknown match operator {operator}")
