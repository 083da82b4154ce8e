"""The session clients' one error rule: what a ``SessionClient`` or ``AsyncSessionClient`` method raises.

Every public method (both colours) checks its arguments before it calls the server and raises only:

* ``ValueError`` (or ``TypeError`` for a value of the wrong type) naming the bad argument;
* ``SessionNotFoundError``: no session has that ID;
* ``SessionStoppedError``: the session is stopped (its Dex run closed) and the call writes;
* ``SessionExistsError``: ``start`` of an existing session with another first message;
* ``NoWorkerError``: no Worker serving the Flow type took the call within its timeout (a wait that
  timed out while no Worker answers raises it too: it is a ``TimeoutError``);
* ``TimeoutError``: a wait timed out while a Worker answers;
* ``SessionRefusedError``: a Worker ran the call and the session refused it;
* ``SessionBusyError``: the session's lock stayed held through the call's retries;
* ``SessionServerError``: anything else the Dex server answered (unreachable through the retries,
  refused the credential, ...); other SDK failures are a plain ``SessionClientError``.

All of them but ``ValueError``/``TypeError``/``TimeoutError`` are ``SessionClientError``s, and no
other ``dex.runtime_errors`` type leaves a client: ``translated`` turns one into its
``SessionClientError``, the original chained as ``__cause__``. Each also subclasses the SDK error it
stands for (``SessionNotFoundError`` is a ``FlowNotFoundError`` and a ``FlowNotActiveOrNotFoundError``,
``SessionRefusedError`` a ``WorkerInvocationError``, ...), with the same attributes, so an ``except``
written against the SDK keeps working.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, final

import grpc
from dex import (
    DexServiceError,
    ErrorSubStatus,
    FlowAlreadyStartedError,
    FlowNotActiveOrNotFoundError,
    FlowNotFoundError,
    RpcLockConflictError,
    WorkerInvocationError,
)
from dex import runtime_errors as _runtime_errors

__all__ = [
    "NoWorkerError",
    "RewindNotRecordedError",
    "SessionBusyError",
    "SessionClientError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRefusedError",
    "SessionRewindError",
    "SessionServerError",
    "client_errors",
    "translated",
]

F = TypeVar("F", bound=Callable[..., Any])


class SessionClientError(RuntimeError):
    """The base of every error a session client raises about a session or the server (the module
    docstring lists them); the SDK's own error, when there was one, is the ``__cause__``."""


@final
class SessionNotFoundError(SessionClientError, FlowNotFoundError, FlowNotActiveOrNotFoundError):
    """No session has this ID (on this server). Attributes: ``flow_id``, the session asked for."""

    def __init__(self, session_id: str, cause: DexServiceError | None = None) -> None:
        super().__init__(grpc.StatusCode.NOT_FOUND if cause is None else cause.code,
                         ErrorSubStatus.FLOW_NOT_EXISTS if cause is None else cause.sub_status,
                         f"session {session_id!r} does not exist", "" if cause is None else cause.operation,
                         session_id)


class SessionExistsError(SessionClientError, FlowAlreadyStartedError):
    """The session already exists, started by another request: another first message (or request ID)
    than this start's, which is not queued. Attributes: ``flow_id``, the session."""

    def __init__(self, session_id: str, detail: str | None = None) -> None:
        super().__init__(grpc.StatusCode.ALREADY_EXISTS, ErrorSubStatus.FLOW_ALREADY_STARTED,
                         detail or f"session {session_id!r} already exists, started with another first message or "
                         f"request ID; this start's message was not queued (send it with send(), or use another "
                         f"session ID)", "start_flow", session_id)


class NoWorkerError(SessionClientError, TimeoutError):
    """No Worker serving the session's Flow type took a request within the wait (a ``TimeoutError``).

    A wait on committed state that timed out raises it, instead of a bare ``TimeoutError``, when a
    probe then finds no Worker: the message starts with what the wait awaited. A misspelt Flow type
    looks exactly like this (no Worker serves it), so ``hint`` says to check it.

    Attributes:
        flow_type: The Flow type nobody serves.
        server_address: The Dex server asked.
        seconds: How long the request waited for a Worker.
        hint: What to do about it.
    """

    def __init__(self, flow_type: str, server_address: str, seconds: float, *, waited: str | None = None) -> None:
        self.flow_type = flow_type
        self.server_address = server_address
        self.seconds = seconds
        self.hint = (f"start a Worker serving {flow_type} (dex-agents worker --agent MODULE:ATTRIBUTE --server "
                     f"{server_address}), or check the spelling of the Flow type")
        message = f"no Worker serving {flow_type} answered on {server_address} within {seconds:g} s"
        super().__init__(message if waited is None else f"{waited}; {message}: {self.hint}")


@final
class SessionRefusedError(SessionClientError, WorkerInvocationError):
    """A Worker ran the call and the session refused it (``worker_error_type`` and
    ``worker_error_detail`` say why: a message ID sent with another text, a Flow without compaction)."""


@final
class SessionBusyError(SessionClientError, RpcLockConflictError):
    """The session's lock stayed held (a running Step) through the call's retries; try again."""


@final
class SessionRewindError(SessionClientError, ValueError):
    """``rewind`` or ``fork`` named a turn the session has no point for: it has not ended, nothing came
    after it, or (``rewind``) it ended in an earlier run. Nothing was changed."""


@final
class RewindNotRecordedError(SessionClientError):
    """``rewind`` moved the session back (Dex started the run ``run_id``), but the session did not record
    the rewind (its ``SessionRewinds`` audit and event are missing): the cause is chained. The replaced
    run ``previous_run_id`` keeps the removed turns (``export``'s ``rewound_runs``); do not rewind again
    to record it (the session is right after ``to_turn`` already)."""

    def __init__(self, session_id: str, to_turn: int, run_id: str, previous_run_id: str, cause: BaseException) -> None:
        super().__init__(f"session {session_id} was rewound to right after turn {to_turn} (run {run_id}), but the "
                         f"session did not record the rewind: {cause}; the replaced run {previous_run_id} keeps the "
                         f"removed turns (export the session to read them)")
        self.session_id = session_id
        self.to_turn = to_turn
        self.run_id = run_id
        self.previous_run_id = previous_run_id


@final
class SessionServerError(SessionClientError, DexServiceError):
    """The Dex server failed or refused the call otherwise (``code``, ``sub_status`` and ``detail`` are
    its answer): unreachable through the retries, a refused credential, a bad request."""


def _copy(kind: type[DexServiceError], error: DexServiceError) -> DexServiceError:
    if isinstance(error, WorkerInvocationError) and issubclass(kind, WorkerInvocationError):
        return kind(error.code, error.sub_status, error.detail, error.operation, error.flow_id,
                    error.worker_code, error.worker_error_type, error.worker_error_detail)
    return kind(error.code, error.sub_status, error.detail, error.operation, error.flow_id)


def translated(error: BaseException, session_id: str | None) -> BaseException:
    """The ``SessionClientError`` that stands for ``error`` (raised serving ``session_id``), or
    ``error`` itself when it is not an SDK error (or is already a client error). The caller chains it."""
    if isinstance(error, SessionClientError):
        return error
    if isinstance(error, FlowAlreadyStartedError):
        return SessionExistsError(session_id or error.flow_id or "", error.detail)
    if isinstance(error, FlowNotFoundError | FlowNotActiveOrNotFoundError):
        return SessionNotFoundError(session_id or error.flow_id or "", error)
    if isinstance(error, WorkerInvocationError):
        return _copy(SessionRefusedError, error)
    if isinstance(error, RpcLockConflictError):
        return _copy(SessionBusyError, error)
    if isinstance(error, DexServiceError):
        return _copy(SessionServerError, error)
    if type(error).__module__ == _runtime_errors.__name__:
        return SessionClientError(f"{type(error).__name__}: {error}")
    return error


def _session_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    session_id = kwargs.get("session_id", args[0] if args else None)
    return session_id if isinstance(session_id, str) else None


def client_errors(method: F) -> F:
    """Wrap a client method (sync or coroutine) so that an SDK error leaves it ``translated``."""
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def async_wrapper(self: object, *args: Any, **kwargs: Any) -> Any:
            try:
                return await method(self, *args, **kwargs)
            except Exception as error:
                replacement = translated(error, _session_of(args, kwargs))
                if replacement is error:
                    raise
                raise replacement from error

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(method)
    def wrapper(self: object, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as error:
            replacement = translated(error, _session_of(args, kwargs))
            if replacement is error:
                raise
            raise replacement from error

    return wrapper  # type: ignore[return-value]
