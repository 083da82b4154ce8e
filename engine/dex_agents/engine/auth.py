"""Bearer-token authentication for the local engine, matching the SDK's ``FileCredential``.

The SDK sends every FlowService call and every pull-worker stream open with the gRPC metadata
entry ``authorization: Bearer <token>``, where ``<token>`` is the credential file's UTF-8 text with
surrounding whitespace removed. The engine reads its token from a file of the same format, so one
file serves both sides.

Invariants:
    * With a token configured, a call is served only when it carries exactly one ``authorization``
      entry whose scheme is ``Bearer`` (case-insensitive) and whose token equals the engine's
      token; the comparison is constant-time. Anything else gets ``UNAUTHENTICATED`` with a
      message saying what was wrong, and never the expected token.
    * The token file is re-checked at most once per second (mtime and size), like
      ``FileCredential``, so a rotation takes effect on both sides without a restart. A file that
      becomes unreadable or empty rejects every call (fails closed) until it is restored.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar, final

import grpc

__all__ = ["BearerTokenInterceptor", "TokenFile", "TokenFileError", "read_token_file"]

AUTHORIZATION_KEY: Final = "authorization"
BEARER_SCHEME: Final = "bearer"
_RECHECK_SECONDS: Final = 1.0

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class TokenFileError(Exception):
    """The token file cannot be used: missing, unreadable, not UTF-8, or empty after trimming."""


def read_token_file(path: Path) -> str:
    """Read a bearer token the way the SDK's ``FileCredential`` does.

    Args:
        path: File holding the token as UTF-8 text; surrounding whitespace is removed.

    Returns:
        The trimmed token (never empty).

    Raises:
        TokenFileError: The file is missing, unreadable, not valid UTF-8, or empty.
    """
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise TokenFileError(f"token file {path} does not exist") from None
    except IsADirectoryError:
        raise TokenFileError(f"token file {path} is a directory") from None
    except PermissionError:
        raise TokenFileError(f"token file {path} is not readable (permission denied)") from None
    except UnicodeError:
        raise TokenFileError(f"token file {path} is not valid UTF-8 text") from None
    except OSError as error:
        raise TokenFileError(f"token file {path} cannot be read: {error.strerror or error}") from None
    if not token:
        raise TokenFileError(f"token file {path} is empty")
    return token


@dataclass(frozen=True, slots=True, kw_only=True)
class _Snapshot:
    token: str | None
    error: str | None
    mtime_ns: int
    size: int
    checked_at: float


@final
class TokenFile:
    """The engine's current token, re-read from its file when the file changes.

    Construction reads the file and raises ``TokenFileError`` when it is unusable, so a
    misconfigured engine fails at start. Afterwards ``current()`` never raises.
    """

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Read the initial token.

        Args:
            path: The token file.
            clock: Monotonic clock in seconds (injectable for tests).

        Raises:
            TokenFileError: The file is unusable now.
        """
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        stat = self._stat_or_raise()
        token = read_token_file(path)
        self._snapshot = _Snapshot(
            token=token, error=None, mtime_ns=stat[0], size=stat[1], checked_at=clock()
        )

    @property
    def path(self) -> Path:
        """The file the token is read from."""
        return self._path

    def current(self) -> str | TokenFileError:
        """Return the current token, or the error that makes the file unusable right now."""
        with self._lock:
            snapshot = self._snapshot
            if self._clock() - snapshot.checked_at >= _RECHECK_SECONDS:
                snapshot = self._refresh(snapshot)
                self._snapshot = snapshot
        if snapshot.token is not None:
            return snapshot.token
        return TokenFileError(snapshot.error or f"token file {self._path} is unusable")

    def _stat_or_raise(self) -> tuple[int, int]:
        try:
            stat = self._path.stat()
        except OSError:
            read_token_file(self._path)  # raises the precise TokenFileError
            raise TokenFileError(f"token file {self._path} cannot be read") from None
        return stat.st_mtime_ns, stat.st_size

    def _refresh(self, previous: _Snapshot) -> _Snapshot:
        now = self._clock()
        try:
            mtime_ns, size = self._stat_or_raise()
            unchanged = previous.token is not None and (mtime_ns, size) == (
                previous.mtime_ns,
                previous.size,
            )
            token = previous.token if unchanged else read_token_file(self._path)
        except TokenFileError as error:
            return _Snapshot(token=None, error=str(error), mtime_ns=-1, size=-1, checked_at=now)
        return _Snapshot(token=token, error=None, mtime_ns=mtime_ns, size=size, checked_at=now)


def _rejection(message: str) -> Callable[[object, grpc.ServicerContext], object]:
    def reject(request_or_iterator: object, context: grpc.ServicerContext) -> object:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return reject


def _rejecting_handler(
    handler: grpc.RpcMethodHandler[_Request, _Response] | None, message: str
) -> grpc.RpcMethodHandler[_Request, _Response]:
    """A handler of the same streaming shape as ``handler`` that aborts with UNAUTHENTICATED."""
    reject = _rejection(message)
    request_streaming = handler.request_streaming if handler is not None else False
    response_streaming = handler.response_streaming if handler is not None else False
    deserializer = handler.request_deserializer if handler is not None else None
    serializer = handler.response_serializer if handler is not None else None
    factory: Callable[..., grpc.RpcMethodHandler[_Request, _Response]]
    if request_streaming:
        factory = (
            grpc.stream_stream_rpc_method_handler
            if response_streaming
            else grpc.stream_unary_rpc_method_handler
        )
    else:
        factory = (
            grpc.unary_stream_rpc_method_handler
            if response_streaming
            else grpc.unary_unary_rpc_method_handler
        )
    return factory(
        reject, request_deserializer=deserializer, response_serializer=serializer
    )


def check_authorization(
    metadata: tuple[tuple[str, str | bytes], ...], expected: str | TokenFileError
) -> str | None:
    """Decide whether call metadata carries the expected bearer token.

    Args:
        metadata: The call's invocation metadata (keys are lower case on the wire).
        expected: The engine's token, or the error that makes its token file unusable.

    Returns:
        ``None`` when the call is authenticated, otherwise the rejection message.
    """
    if isinstance(expected, TokenFileError):
        return f"the engine cannot authenticate calls: {expected}"
    values = [value for key, value in metadata if key.lower() == AUTHORIZATION_KEY]
    if not values:
        return (
            "missing bearer credential: this engine requires 'authorization: Bearer <token>' "
            "metadata (use the SDK's FileCredential with the engine's token file)"
        )
    if len(values) > 1:
        return "more than one authorization metadata entry; send exactly one bearer credential"
    value = values[0]
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    scheme, _, presented = text.strip().partition(" ")
    if scheme.lower() != BEARER_SCHEME:
        return "authorization metadata must use the Bearer scheme: 'Bearer <token>'"
    if not hmac.compare_digest(presented.strip().encode("utf-8"), expected.encode("utf-8")):
        return "bearer credential does not match the engine's token"
    return None


@final
class BearerTokenInterceptor(grpc.ServerInterceptor):
    """Serve a call only when it carries the engine's bearer token; else UNAUTHENTICATED."""

    def __init__(self, token_file: TokenFile) -> None:
        """Guard every method of the server with the token held in ``token_file``."""
        self._token_file = token_file

    @classmethod
    def from_path(cls, path: Path) -> BearerTokenInterceptor:
        """Build from a token file path.

        Raises:
            TokenFileError: The file is unusable now.
        """
        return cls(TokenFile(path))

    def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], grpc.RpcMethodHandler[_Request, _Response] | None
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Request, _Response] | None:
        """Check the call's metadata before its handler runs."""
        metadata = tuple(handler_call_details.invocation_metadata or ())
        problem = check_authorization(metadata, self._token_file.current())
        if problem is None:
            return continuation(handler_call_details)
        return _rejecting_handler(continuation(handler_call_details), problem)
