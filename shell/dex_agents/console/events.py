"""``GET /api/sessions/{id}/events``: the session's events as Server-Sent Events.

Invariants:
    * Each event is one SSE message whose ``id`` is the session's event cursor after it and whose
      ``data`` is the event's JSON (``views.event_json``); a reconnect with ``Last-Event-ID`` (or
      ``?after=CURSOR``) continues right after that event, never repeating or skipping a retained one.
    * When the cursor's event is no longer retained, the first message is of type
      ``dex_agents.console.missed_events`` (reload the session then).
    * ``?follow=0`` ends after the retained events; otherwise new events follow as they are written,
      with a comment line every ``KEEPALIVE_SECONDS`` so proxies keep the connection. The stream
      ends when the browser goes away (Starlette cancels it).
    * An unknown session answers 404 JSON before the stream starts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from dex_agents.console.handlers import backend_of, json_route
from dex_agents.console.views import EventRow, Json, event_json

__all__ = ["KEEPALIVE_SECONDS", "MISSED_EVENTS", "events_route", "sse_message"]

KEEPALIVE_SECONDS: Final = 10.0
MISSED_EVENTS: Final = "dex_agents.console.missed_events"


def sse_message(data: Json, event_id: str | None = None) -> str:
    """One SSE message (``data`` on one line: JSON escapes newlines)."""
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


def _message(row: EventRow) -> str:
    return sse_message(event_json(row), row[0])


@json_route
async def stream_events(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    cursor = request.headers.get("last-event-id") or request.query_params.get("after", "")
    follow = request.query_params.get("follow", "1") not in ("0", "false", "no")
    backend = backend_of(request)
    client = await backend.client_of(session_id)
    rows, cursor, missed = await backend.events_after(client, session_id, cursor)

    async def body() -> AsyncIterator[str]:
        if missed:
            yield sse_message({"type": MISSED_EVENTS, "cursor": cursor})
        for row in rows:
            yield _message(row)
        if not follow:
            return
        async for item in client.follow(session_id, cursor, wait=KEEPALIVE_SECONDS):
            if item is None:
                yield ": keep-alive\n\n"
            else:
                yield _message((item.cursor, item.event, item.created_at.isoformat()))

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def events_route() -> Route:
    return Route("/api/sessions/{session_id}/events", stream_events, methods=["GET"])
