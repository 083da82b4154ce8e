"""The log context of the Steps and RPCs the driver runs, and their expected failures as one line.

Invariants:
    * While ``drive_step``/``drive_rpc`` run, every log line names the session, the Step (or RPC) and,
      once the driver gathered the state, the turn (``dex_agents.logs``).
    * A failed attempt (``AttemptRejectedError``: a model or tool call that raised, a refused result,
      a rate limit with its retry delay) and a refused RPC (``RpcRefusedError``) are logged once, as
      one warning line with the attempt number; the SDK's traceback of the same error is dropped
      unless ``--debug``. Every other failure is the SDK's to log.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, ParamSpec, TypeVar, cast

from dex import Context

from dex_agents.logs import log_context, log_expected
from dex_agents.shell.perform import AttemptRejectedError, RpcRefusedError

__all__ = ["logged_rpc", "logged_step"]

P = ParamSpec("P")
T = TypeVar("T")

_LOGGER: Final = logging.getLogger("dex_agents.worker")


def _rejection(error: BaseException) -> AttemptRejectedError | None:
    """The ``AttemptRejectedError`` behind ``error`` (itself, or wrapped by the SDK's ``retry_after``)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, AttemptRejectedError):
            return current
        seen.add(id(current))
        wrapped = next((argument for argument in getattr(current, "args", ())
                        if isinstance(argument, AttemptRejectedError)), None)
        current = wrapped or current.__cause__ or current.__context__
    return None


def logged_step(drive: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``drive_step`` in its log context (session, Step), its failed attempts logged as one line."""

    @functools.wraps(drive)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        context = cast(Context, args[1])
        step = str(getattr(args[2], "value", args[2]))
        with log_context(session_id=context.flow_id, step=step):
            try:
                return await drive(*args, **kwargs)
            except Exception as error:
                rejected = _rejection(error)
                if rejected is None:
                    raise
                log_expected(_LOGGER, error, "%s attempt %d failed: %s", step, context.attempt, rejected)
                raise

    return run


def logged_rpc(drive: Callable[P, T]) -> Callable[P, T]:
    """``drive_rpc`` in its log context (session, RPC), a refusal logged as one line."""

    @functools.wraps(drive)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        context = cast(Context, args[1])
        rpc = _rpc_name(args[2])
        with log_context(session_id=context.flow_id, step=rpc):
            try:
                return drive(*args, **kwargs)
            except RpcRefusedError as error:
                log_expected(_LOGGER, error, "%s refused: %s", rpc, error)
                raise

    return run


def _rpc_name(call: Any) -> str:
    from dex_agents.pure.machine.flow_shape import rpc_of

    return str(rpc_of(call).value)
