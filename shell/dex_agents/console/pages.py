"""The console's pages: public shells (no data) and the fragments their script fetches with the token.

Routes: ``GET /`` and ``GET /sessions/{id}`` (shells), ``GET /ui/sessions`` (the list's table, with
``flow_type``, ``status``, ``page_token``) and ``GET /ui/sessions/{id}`` (the session's body).
Fragments fail as the API does (JSON with a code), which the script shows.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from dex_agents.console.api import DEFAULT_PAGE, list_sessions, session_detail
from dex_agents.console.handlers import backend_of, json_route
from dex_agents.console.render import list_fragment, session_fragment, shell

__all__ = ["page_routes"]

_NO_STORE = {"Cache-Control": "no-store"}


async def list_page(request: Request) -> Response:
    return HTMLResponse(shell("Sessions · dex-agents console", "list"))


async def session_page(request: Request) -> Response:
    session_id = request.path_params["session_id"]
    return HTMLResponse(shell(f"{session_id} · dex-agents console", "session", session_id))


@json_route
async def list_body(request: Request) -> Response:
    query = request.query_params
    flow_type, status = query.get("flow_type") or None, query.get("status") or None
    backend = backend_of(request)
    page = await list_sessions(backend, flow_type, status, DEFAULT_PAGE, query.get("page_token", ""),
                               last_activity=True)
    known = (await backend.search(None, 1000, "")).flows
    flow_types = sorted({entry.flow_type for entry in known})
    return HTMLResponse(list_fragment(page, flow_types, flow_type, status), headers=_NO_STORE)


@json_route
async def session_body(request: Request) -> Response:
    detail = await session_detail(backend_of(request), request.path_params["session_id"])
    return HTMLResponse(session_fragment(detail), headers=_NO_STORE)


def page_routes() -> list[Route]:
    return [
        Route("/", list_page, methods=["GET"]),
        Route("/sessions/{session_id}", session_page, methods=["GET"]),
        Route("/ui/sessions", list_body, methods=["GET"]),
        Route("/ui/sessions/{session_id}", session_body, methods=["GET"]),
    ]
