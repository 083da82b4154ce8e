"""``create_app``: the console's one ASGI app (Starlette): JSON API, SSE events, pages, static files.

Invariants:
    * The backend (its Dex Clients) is made on the first request, on the serving event loop, and
      closed when the app shuts down (``close_app``; uvicorn's lifespan calls it).
    * Unknown routes answer 404 JSON ``not_found``; a wrong method 400-class JSON; never a traceback.
    * ``BearerAuth`` guards ``/api/`` and ``/ui/`` when the settings carry a credential.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from dex_agents.console.api import api_routes
from dex_agents.console.auth import BearerAuth
from dex_agents.console.backend import ConsoleBackend, ConsoleSettings
from dex_agents.console.events import events_route
from dex_agents.console.pages import page_routes

__all__ = ["STATIC_DIRECTORY", "close_app", "create_app"]

STATIC_DIRECTORY: Final = Path(__file__).with_name("static")


async def close_app(app: Starlette) -> None:
    """Close the backend if one was made (idempotent)."""
    backend: ConsoleBackend | None = app.state.backend
    app.state.backend = None
    if backend is not None:
        await backend.close()


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    code = "not_found" if error.status_code == 404 else "bad_request"
    return JSONResponse({"error": {"code": code, "message": str(error.detail)}}, status_code=error.status_code)


def create_app(settings: ConsoleSettings) -> Starlette:
    """The console app for ``settings`` (see the module docstring)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await close_app(app)

    routes = [*api_routes(), events_route(), *page_routes(),
              Mount("/static", StaticFiles(directory=STATIC_DIRECTORY), name="static")]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error},
                    middleware=[Middleware(BearerAuth, credential=settings.credential)])
    app.state.settings = settings
    app.state.backend = None
    return app
