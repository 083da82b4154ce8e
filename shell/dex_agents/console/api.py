"""The console's JSON API (every route answers JSON; errors as ``errors`` describes).

Routes: ``GET/POST /api/sessions``, ``GET /api/sessions/{id}``, ``GET/POST /api/sessions/{id}/messages``,
``POST /api/sessions/{id}/interrupts/{interrupt_id}`` (``approvals``'), and ``POST /api/sessions/{id}/<action>`` for
each of ``OPERATOR_ACTIONS``. ``GET /api/sessions/{id}/events`` (SSE) is ``events``'.

Invariants: a session route first reads the session's run (404 ``session_not_found`` when there is
none), then uses the client of its Flow type; bad input is 400 with the reason, before anything is sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dex_agents.console.actions import OPERATOR_ACTIONS, OperatorAction, action_values
from dex_agents.console.approvals import post_interrupt
from dex_agents.console.backend import ConsoleBackend
from dex_agents.console.errors import ApiError
from dex_agents.console.handlers import backend_of, int_param, json_body, json_route, optional_text
from dex_agents.console.views import (
    EventRow,
    Json,
    interrupt_json,
    open_calls_json,
    rewound_calls_json,
    settlement_json,
    state_json,
    summary_json,
    transcript_json,
    turn_usage,
    usage_json,
)
from dex_agents.client import AsyncSessionClient
from dex_agents.pure.values.session import AgentMessage, AgentState, ToolCallStatus

__all__ = ["api_routes", "list_sessions", "session_detail"]

MAX_PAGE: Final = 1000
DEFAULT_PAGE: Final = 50
INCLUDABLE: Final = frozenset({"last_activity"})
"""The list's optional fields (``include=``): each costs a read per session more."""


async def list_sessions(backend: ConsoleBackend, flow_type: str | None, status: str | None, limit: int,
                        page_token: str, *, last_activity: bool) -> Json:
    """A page of sessions (newest first) with their summaries; ``status`` filters this page by the
    agent status or the run status; ``last_activity`` adds each one's latest event time (a second
    read per session, so only on request)."""
    page = await backend.search(flow_type, limit, page_token)
    now = datetime.now(UTC)
    summaries = await backend.summaries(page.flows, last_activity=last_activity)
    sessions = [summary_json(summary, now, last_activity=last_activity) for summary in summaries]
    if status:
        sessions = [item for item in sessions if status in (item["status"], item["run_status"])]
    return {"sessions": sessions, "next_page_token": page.next_page_token or None}


@json_route
async def get_sessions(request: Request) -> Response:
    limit = int_param(request, "limit", DEFAULT_PAGE, low=1, high=MAX_PAGE)
    assert limit is not None
    query = request.query_params
    return JSONResponse(await list_sessions(backend_of(request), query.get("flow_type") or None,
                                            query.get("status") or None, limit, query.get("page_token", ""),
                                            last_activity="last_activity" in included(request)))


def included(request: Request) -> set[str]:
    """The optional fields the query's ``include`` names (comma-separated; 400 for an unknown one)."""
    names = {name.strip() for name in request.query_params.get("include", "").split(",") if name.strip()}
    if unknown := names - INCLUDABLE:
        raise ApiError("bad_request", f"include: unknown field(s) {sorted(unknown)}; known: {sorted(INCLUDABLE)}")
    return names


@json_route
async def post_sessions(request: Request) -> Response:
    body = await json_body(request)
    flow_type = optional_text(body, "flow_type")
    if not flow_type:
        raise ApiError("bad_request", "flow_type is required")
    session_id = optional_text(body, "session_id") or f"session-{uuid.uuid4().hex[:12]}"
    client = await backend_of(request).client_for(flow_type)
    run_id = await client.start(session_id, optional_text(body, "message"), request_id=optional_text(body, "request_id"))
    return JSONResponse({"session_id": session_id, "run_id": run_id}, status_code=201)


async def session_detail(backend: ConsoleBackend, session_id: str) -> Json:
    """Everything the session page shows: run, state, usage (per turn too), approvals, transcript, cursor."""
    info = await backend.describe(session_id)
    client = await backend.client_for(info.flow_type)
    snapshot = await backend.snapshot(client, session_id)
    rows, cursor, _ = await backend.events_after(client, session_id, "")
    now = datetime.now(UTC)
    if snapshot is None:
        overview = await client.overview(session_id)
        state, pending, usage = overview.state, overview.pending_interrupts, overview.usage
        messages: tuple[AgentMessage, ...] = ()
    else:
        state, pending, usage, messages = snapshot.state, snapshot.pending_interrupts, snapshot.usage, tuple(
            snapshot.messages)
    return {
        "session_id": session_id, "flow_type": info.flow_type, "run_status": info.status.name.lower(),
        "started_at": info.started_at.isoformat(), "worker": snapshot is not None,
        "state": state_json(state), "usage": usage_json(usage), "turn_usage": turn_usage(rows),
        "queued_messages": None if snapshot is None else snapshot.queued_message_count,
        "pending_interrupts": [interrupt_json(interrupt, now) for interrupt in pending],
        "open_tool_calls": [] if snapshot is None else open_calls_json(snapshot.tool_calls),
        "transcript": await settled(client, session_id, transcript_json(
            session_id, messages, rows, () if snapshot is None else tuple(snapshot.tool_calls))),
        "event_cursor": live_cursor(rows, state, cursor), "actions": [action.name for action in OPERATOR_ACTIONS],
        **await sub_agents(client, session_id, now),
    }


async def sub_agents(client: AsyncSessionClient, session_id: str, now: datetime) -> Json:
    """The session's sub-agents' child sessions (``children``) and their pending approvals
    (``child_approvals``, each with the ``session_id`` that holds it; answered through that session)."""
    children = await client.children(session_id)
    held = [] if not children else [approval for approval in await client.pending_approvals(session_id)
                                    if approval.session_id != session_id]
    return {"children": [{"session_id": entry.flow_id, "flow_type": entry.flow_type,
                          "run_status": entry.status.name.lower()} for entry in children],
            "child_approvals": [{**interrupt_json(approval.interrupt, now), "session_id": approval.session_id}
                                for approval in held]}


async def settled(client: AsyncSessionClient, session_id: str, transcript: list[Json]) -> list[Json]:
    """``transcript`` with each call the events leave ``outcome_unknown`` read again from the session's
    ``UnknownToolOutcomes`` (an operator's settlement writes no event): its status and ``settlement``."""
    for item in transcript:
        tool = item["tool"]
        if tool is None or tool["status"] != ToolCallStatus.OUTCOME_UNKNOWN.value:
            continue
        record = await client.unknown_outcome(session_id, tool["tool_call_id"])
        if record is not None and record.settlement is not None:
            tool["status"] = record.status.value
            tool["settlement"] = settlement_json(record.status, record.settlement)
    return transcript


def live_cursor(rows: Sequence[EventRow], state: AgentState | None, latest: str) -> str:
    """Where the page's live events start: before the running turn's ``turn_started`` (so its streamed
    text so far is shown), else after the latest event."""
    turn = None if state is None else state.current_turn_id
    starts = [index for index, (_, event, _) in enumerate(rows) if event.type == "turn_started" and event.turn_id == turn]
    if turn is None or not starts:
        return latest
    return rows[starts[-1] - 1][0] if starts[-1] > 0 else ""


@json_route
async def get_session(request: Request) -> Response:
    return JSONResponse(await session_detail(backend_of(request), request.path_params["session_id"]))


@json_route
async def get_messages(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    before = int_param(request, "before_sequence", None, low=1, high=2**53)
    limit = int_param(request, "limit", None, low=1, high=200)
    client = await backend_of(request).client_of(session_id)
    page = await client.messages(session_id, before_sequence=before, limit=limit)
    items = transcript_json(session_id, page.messages, (), ())
    return JSONResponse({"messages": items, "next_before_sequence": page.next_before_sequence})


@json_route
async def post_message(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    body = await json_body(request)
    text = optional_text(body, "text")
    if text is None or not text.strip():
        raise ApiError("bad_request", "text is required and must not be blank")
    message_id = optional_text(body, "message_id") or str(uuid.uuid4())
    client = await backend_of(request).client_of(session_id)
    await client.check_worker(session_id)
    queued = await client.send(session_id, text, message_id=message_id)
    return JSONResponse({"queued": queued, "message_id": message_id}, status_code=202)


def action_route(action: OperatorAction) -> Route:
    """The route of one operator action: its fields checked, then the session's client runs it."""

    @json_route
    async def run(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = await json_body(request) if await request.body() else {}
        values = action_values(action, body)
        client = await backend_of(request).client_of(session_id)
        return JSONResponse(await action.run(client, session_id, values))

    return Route(f"/api/sessions/{{session_id}}/{action.name}", run, methods=["POST"], name=f"action_{action.name}")


@json_route
async def get_rewind_preview(request: Request) -> Response:
    """What ``POST .../rewind`` with ``to_turn`` would remove now (``rewind_preview``), changing nothing."""
    session_id = request.path_params["session_id"]
    to_turn = int_param(request, "to_turn", None, low=0, high=2**31)
    if to_turn is None:
        raise ApiError("bad_request", "to_turn is required")
    client = await backend_of(request).client_of(session_id)
    removal = await client.rewind_preview(session_id, to_turn)
    return JSONResponse({"to_turn": removal.to_turn, "removed_turn_count": removal.removed_turn_count,
                         "tool_calls": rewound_calls_json(removal.tool_calls)})


def api_routes() -> list[Route]:
    """Every JSON route (the SSE route is added by ``app``)."""
    return [
        Route("/api/sessions", get_sessions, methods=["GET"]),
        Route("/api/sessions", post_sessions, methods=["POST"]),
        Route("/api/sessions/{session_id}", get_session, methods=["GET"]),
        Route("/api/sessions/{session_id}/messages", get_messages, methods=["GET"]),
        Route("/api/sessions/{session_id}/messages", post_message, methods=["POST"]),
        Route("/api/sessions/{session_id}/interrupts/{interrupt_id}", post_interrupt, methods=["POST"]),
        Route("/api/sessions/{session_id}/rewind", get_rewind_preview, methods=["GET"]),
        *(action_route(action) for action in OPERATOR_ACTIONS),
    ]
