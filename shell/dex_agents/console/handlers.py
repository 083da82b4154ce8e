"""What every console route shares: the app's backend, JSON failures, and reading a request's input.

Invariants: ``json_route`` answers every failure of its handler as JSON (``errors.api_error_of``),
never a traceback; the readers raise ``ApiError("bad_request", ...)`` naming what is wrong, before
anything is sent to the Dex server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from dex_agents.console.backend import ConsoleBackend, ConsoleSettings
from dex_agents.console.errors import ApiError, api_error_of, error_response

__all__ = ["Handler", "backend_of", "int_param", "json_body", "json_route", "optional_text"]

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
