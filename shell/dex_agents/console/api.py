"""The console's JSON API (every route answers JSON; errors as ``errors`` describes).

Routes: ``GET/POST /api/sessions``, ``GET /api/sessions/{id}``, ``GET/POST /api/sessions/{id}/messages``,
``POST /api/sessions/{id}/interrupts/{interrupt_id}``, and ``POST /api/sessions/{id}/<action>`` for
each of ``OPERATOR_ACTIONS``. ``GET /api/sessions/{id}/events`` (SSE) is ``events``'.

Invariants: a session route first reads the session's run (404 ``session_not_found`` when there is
none), then uses the client of its Flow type; bad input is 400 with the reason, before anything is sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from dex_agents.console.actions import OPERATOR_ACTIONS, OperatorAction, action_values
from dex_agents.console.backend import ConsoleBackend, ConsoleSettings
from dex_agents.console.errors import ApiError, api_error_of, error_response
from dex_agents.console.views import (
    EventRow,
    Json,
    interrupt_json,
    open_calls_json,
    state_json,
    summary_json,
    transcript_json,
    turn_usage,
    usage_json,
)
from dex_agents.pure.values.session import AgentMessage, AgentState

__all__ = ["api_routes", "backend_of", "json_route", "list_sessions", "session_detail"]

MAX_PAGE: Final = 1000
DEFAULT_PAGE: Final = 50
INCLUDABLE: Final = frozenset({"last_activity"})
"""The list's optional fields (``include=``): each costs a read per session more."""
Handler = Callable[[Request], Awaitable[Response]]


def backend_of(request: Request) -> ConsoleBackend:
    """The app's backend (made on first use, on the serving event loop: its Clients belong to it)."""
    settings: ConsoleSettings = request.app.state.settings
    if request.app.state.backend is None:
        request.app.state.backend = ConsoleBackend(settings.server_address, settings.credential)
    backend: ConsoleBackend = request.app.state.backend
    return backend


def json_route(handler: Handler) -> Handler:
    """``handler`` with every failure answered as JSON (``api_error_of``)."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as error:  # noqa: BLE001 - every failure is a JSON answer, never a traceback
            return error_response(api_error_of(error, request.path_params.get("session_id")))

    return run


def int_param(request: Request, name: str, default: int | None, *, low: int, high: int) -> int | None:
    """The query parameter ``name`` as an int in low..high (400 otherwise)."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError("bad_request", f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ApiError("bad_request", f"{name} must be in {low}..{high}, got {value}")
    return value


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (400 for anything else)."""
    try:
        body = await request.json()
    except ValueError:
        raise ApiError("bad_request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError("bad_request", "the body must be a JSON object")
    return body


def optional_text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise ApiError("bad_request", f"{name} must be a string")
    return value


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
        "transcript": transcript_json(session_id, messages, rows,
                                      () if snapshot is None else tuple(snapshot.tool_calls)),
        "event_cursor": live_cursor(rows, state, cursor), "actions": [action.name for action in OPERATOR_ACTIONS],
    }


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


EDIT_CHECK_SECONDS: Final = 10.0
"""How long an edited approval's answer waits for the session's check of the edit."""
RESOLUTION_TEXTS: Final = ("rejection_message", "edited_arguments", "arguments_sha256", "approver", "reason")
"""The optional text fields of an approval's answer (``resolve_interrupt``'s)."""


def resolution_of(body: dict[str, Any]) -> tuple[bool, dict[str, str | None]]:
    """``approved`` and the optional fields of an approval's answer, checked (400 before anything is
    sent): ``edited_arguments`` only with an approval, and the text of a JSON object."""
    if unknown := sorted(set(body) - {"approved", *RESOLUTION_TEXTS}):
        raise ApiError("bad_request", f"unknown field(s) {unknown}; an answer takes approved and "
                                      f"{', '.join(RESOLUTION_TEXTS)}")
    approved = body.get("approved")
    if not isinstance(approved, bool):
        raise ApiError("bad_request", "approved (true or false) is required")
    texts = {name: optional_text(body, name) for name in RESOLUTION_TEXTS}
    edited = texts["edited_arguments"]
    if edited is not None:
        if not approved:
            raise ApiError("bad_request", "edited_arguments go with an approval (approved: true)")
        try:
            parsed = json.loads(edited)
        except ValueError as error:
            raise ApiError("bad_request", f"edited_arguments is not JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise ApiError("bad_request", "edited_arguments must be a JSON object")
    return approved, texts


@json_route
async def post_interrupt(request: Request) -> Response:
    """Approve or reject; an edited approval answers once the session checked the edit against the
    tool's schema (422 ``refused`` with its reason when it did not take it; 202 with ``checked:
    false`` when the check took longer than ``EDIT_CHECK_SECONDS``)."""
    session_id, interrupt_id = request.path_params["session_id"], request.path_params["interrupt_id"]
    approved, texts = resolution_of(await json_body(request))
    backend = backend_of(request)
    client = await backend.client_of(session_id)
    await client.check_worker(session_id)
    edited = texts["edited_arguments"] is not None
    after = await backend.latest_cursor(client, session_id) if edited else ""
    if not await client.resolve_interrupt(session_id, interrupt_id, approved, texts["rejection_message"],
                                          edited_arguments=texts["edited_arguments"],
                                          arguments_sha256=texts["arguments_sha256"], approver=texts["approver"],
                                          reason=texts["reason"]):
        raise ApiError("interrupt_not_pending", f"interrupt {interrupt_id!r} is not pending (answered, "
                                                f"expired or unknown)")
    answer = {"resolved": True, "approved": approved, "edited": edited}
    if not edited:
        return JSONResponse(answer)
    checked = await backend.edit_check(client, session_id, interrupt_id, after, EDIT_CHECK_SECONDS)
    if checked is None:
        return JSONResponse({**answer, "checked": False}, status_code=202)
    taken, why = checked
    if not taken:
        raise ApiError("refused", f"the session refused the edited arguments (the approval is pending again): {why}")
    return JSONResponse({**answer, "checked": True})


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


def api_routes() -> list[Route]:
    """Every JSON route (the SSE route is added by ``app``)."""
    return [
        Route("/api/sessions", get_sessions, methods=["GET"]),
        Route("/api/sessions", post_sessions, methods=["POST"]),
        Route("/api/sessions/{session_id}", get_session, methods=["GET"]),
        Route("/api/sessions/{session_id}/messages", get_messages, methods=["GET"]),
        Route("/api/sessions/{session_id}/messages", post_message, methods=["POST"]),
        Route("/api/sessions/{session_id}/interrupts/{interrupt_id}", post_interrupt, methods=["POST"]),
        *(action_route(action) for action in OPERATOR_ACTIONS),
    ]
