"""Bearer-token authentication of the console's data routes (the engine's ``--token-file`` format).

Invariants:
    * With a token, every ``/api/`` and ``/ui/`` request needs exactly ``Authorization: Bearer <token>``
      (the scheme case-insensitive, the token compared in constant time); anything else is answered
      401 ``unauthenticated`` before a route runs. The token is read from its file through
      ``dex.FileCredential`` (rotation picked up within a second); an unreadable file refuses everything.
    * There is no cookie: a browser's page sends the header from script, so a cross-site form cannot
      act for an operator (no CSRF). The page shells and static files carry no session data and are public.
    * Without a token (``--no-auth``) the console serves loopback only (``check_bind``).
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Final, final

from dex import FileCredential
from starlette.types import ASGIApp, Receive, Scope, Send

from dex_agents.console.errors import ApiError, error_response

__all__ = ["PROTECTED_PREFIXES", "BearerAuth", "check_bind", "is_loopback"]

PROTECTED_PREFIXES: Final = ("/api/", "/ui/")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, credential: FileCredential | None) -> None:
    """Raise ``ValueError`` when the console would serve without a token beyond loopback."""
    if credential is None and not is_loopback(host):
        raise ValueError(f"--no-auth serves only on loopback (127.0.0.1, ::1, localhost), not on {host}; "
                         f"pass --token-file to serve on {host}")


@final
class BearerAuth:
    """ASGI middleware: 401 for a protected request without the right bearer token."""

    def __init__(self, app: ASGIApp, credential: FileCredential | None) -> None:
        self.app = app
        self.credential = credential

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.credential is not None and scope["path"].startswith(PROTECTED_PREFIXES):
            problem = self._problem(dict(scope["headers"]).get(b"authorization"))
            if problem is not None:
                await error_response(ApiError("unauthenticated", problem))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _problem(self, header: bytes | None) -> str | None:
        assert self.credential is not None
        if header is None:
            return "missing 'Authorization: Bearer <token>' header"
        scheme, _, token = header.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return "the Authorization header is not 'Bearer <token>'"
        try:
            expected = self.credential.token()
        except (OSError, UnicodeError, ValueError):
            return "the console cannot read its token file"
        if not hmac.compare_digest(token.strip().encode("utf-8"), expected.encode("utf-8")):
            return "wrong bearer token"
        return None
