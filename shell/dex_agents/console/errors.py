"""The console's errors: JSON bodies with a stable code, and the mapping from what the client raises.

Invariants:
    * Every error answer is ``{"error": {"code": ..., "message": ...}}`` with a 4xx or 5xx status;
      ``code`` is one of ``CODES`` and never changes meaning. No answer carries a traceback.
    * ``api_error_of`` maps the client's and the SDK's exceptions to an ``ApiError``; anything it
      does not know is ``internal`` (500, a fixed message; the exception is logged, not sent).
"""

from __future__ import annotations

import logging
from typing import Final, final

from dex import (
    DexServiceError,
    FlowAlreadyStartedError,
    FlowNotActiveOrNotFoundError,
    FlowNotFoundError,
    RequestTimeoutError,
    RpcLockConflictError,
    WorkerInvocationError,
)
from starlette.responses import JSONResponse

from dex_agents.client import NoWorkerError, SessionRewindError
from dex_agents.console.actions import NotApplied

__all__ = ["CODES", "ApiError", "api_error_of", "error_response"]

_LOGGER: Final = logging.getLogger(__name__)

CODES: Final = {
    "bad_request": 400,
    "unauthenticated": 401,
    "session_not_found": 404,
    "not_found": 404,
    "interrupt_not_pending": 409,
    "not_applied": 409,
    "session_not_running": 409,
    "session_exists": 409,
    "refused": 422,
    "internal": 500,
    "server_unavailable": 502,
    "no_worker": 503,
}
"""Every error code and its HTTP status."""


@final
class ApiError(Exception):
    """An error answer: ``code`` (a key of ``CODES``) and a message for people."""

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return CODES[self.code]


def error_response(error: ApiError) -> JSONResponse:
    """The JSON answer of ``error``."""
    headers = {"WWW-Authenticate": "Bearer"} if error.code == "unauthenticated" else None
    return JSONResponse({"error": {"code": error.code, "message": error.message}}, status_code=error.status,
                        headers=headers)


def api_error_of(error: Exception, session_id: str | None = None) -> ApiError:
    """The ``ApiError`` that answers ``error``, raised while serving ``session_id`` (if any)."""
    session = f"session {session_id!r}" if session_id else "the session"
    match error:
        case ApiError():
            return error
        case FlowNotFoundError():
            return ApiError("session_not_found", f"{session} does not exist")
        case FlowNotActiveOrNotFoundError():
            return ApiError("session_not_running", f"{session} is not running")
        case FlowAlreadyStartedError():
            return ApiError("session_exists", f"{session} already exists")
        case NoWorkerError():
            return ApiError("no_worker", str(error))
        case RpcLockConflictError() | RequestTimeoutError():
            return ApiError("server_unavailable", f"{session} is busy: {type(error).__name__}; try again")
        case WorkerInvocationError():
            return ApiError("refused", _first_line(error))
        case NotApplied() | SessionRewindError():
            return ApiError("not_applied", _first_line(error))
        case ValueError() | TypeError():
            return ApiError("bad_request", _first_line(error))
        case DexServiceError() | TimeoutError() | ConnectionError():
            return ApiError("server_unavailable", f"the Dex server did not answer: {_first_line(error)}")
        case _:
            _LOGGER.exception("console: unexpected error", exc_info=error)
            return ApiError("internal", f"unexpected {type(error).__name__}; see the console's log")


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    return text[:300]
