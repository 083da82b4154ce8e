"""One logging setup for ``dex-agents engine``, ``worker``, ``console`` and ``chat``: each line of ours
carries a time, the level, and the session ID, turn ID and Step it is about; expected failures are
one line; tracebacks only with ``--debug``; ``--log-format json`` writes one JSON object per line.

Invariants:
    * The session, turn and Step of a line come from context variables the shell's driver sets for
      the Step or RPC it runs (``log_context``), or from a record's own ``extra``; a line outside any
      session leaves them out (text) or ``null`` (JSON).
    * An expected failure (a refused RPC, a failed model or tool attempt) is logged once, as one
      line, by the driver that saw it (``log_expected``), which marks the exception; the SDK's own
      record of the same exception ("Worker invocation failed", with its traceback) is then dropped,
      unless ``debug``.
    * Without ``debug`` no record carries a traceback: an exception becomes ``: <Type>: <first line>``
      at the end of its line. With ``debug`` every traceback is kept (and the SDK's records too).
    * The Worker's lost connection is one line (``the Dex server ... is unreachable``), not one per
      reconnect attempt; ``server_back`` logs one line when it is registered again.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal, TextIO

__all__ = [
    "LOG_FORMATS",
    "LogFormat",
    "LoggingSetup",
    "configure_logging",
    "log_context",
    "log_expected",
    "server_back",
    "set_log_turn",
]

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final = ("text", "json")

_SESSION: Final = contextvars.ContextVar[str | None]("dex_agents_log_session", default=None)
_TURN: Final = contextvars.ContextVar[str | None]("dex_agents_log_turn", default=None)
_STEP: Final = contextvars.ContextVar[str | None]("dex_agents_log_step", default=None)
_FIELDS: Final = ("session_id", "turn_id", "step")
_LOGGED_MARK: Final = "_dex_agents_logged"
_UNAVAILABLE_PREFIX: Final = "Worker task stream disconnected"
_LOGGER: Final = logging.getLogger("dex_agents")


@contextlib.contextmanager
def log_context(*, session_id: str | None, turn_id: str | None = None, step: str | None = None) -> Iterator[None]:
    """Within the block, every log line names this session, turn and Step."""
    tokens = (_SESSION.set(session_id), _TURN.set(turn_id), _STEP.set(step))
    try:
        yield
    finally:
        _STEP.reset(tokens[2])
        _TURN.reset(tokens[1])
        _SESSION.reset(tokens[0])


def set_log_turn(turn_id: str | None) -> None:
    """Name ``turn_id`` on the following lines of the current ``log_context`` (the driver, once it knows it)."""
    _TURN.set(turn_id)


def log_expected(logger: logging.Logger, error: BaseException, message: str, *args: object) -> None:
    """Log an expected failure as one warning line (in the current ``log_context``) and mark ``error``,
    so the SDK's traceback of it is not logged again (unless ``--debug``)."""
    with contextlib.suppress(AttributeError, TypeError):
        setattr(error, _LOGGED_MARK, True)
    logger.warning(message, *args, exc_info=error)


class _Connection:
    """Whether the Worker's server was reported unreachable (one line until it is back)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down = False


_CONNECTION: Final = _Connection()


def server_back(server_address: str) -> None:
    """Log once that the Dex server answers again, if it was reported unreachable."""
    with _CONNECTION.lock:
        was_down, _CONNECTION.down = _CONNECTION.down, False
    if was_down:
        _LOGGER.warning("the Dex server at %s is reachable again: the Worker is registered", server_address)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _grpc_reason(args: object) -> str:
    """``CODE: details`` of the gRPC error a record carries, else its first line."""
    for argument in args if isinstance(args, tuple) else (args,):
        code, details = getattr(argument, "code", None), getattr(argument, "details", None)
        if callable(code) and callable(details):
            return f"{getattr(code(), 'name', code())}: {details()}"
    lines = str(args).splitlines()
    return lines[0][:300] if lines else ""


class _Shape(logging.Filter):
    """Adds the context fields; drops or shortens what the setup's rules say (see the module docstring)."""

    def __init__(self, debug: bool) -> None:
        super().__init__()
        self.debug = debug

    def filter(self, record: logging.LogRecord) -> bool:
        for name, variable in zip(_FIELDS, (_SESSION, _TURN, _STEP), strict=True):
            if getattr(record, name, None) is None:
                setattr(record, name, variable.get())
        error = record.exc_info[1] if record.exc_info else None
        if self.debug:
            return True
        if error is not None and getattr(error, _LOGGED_MARK, False) and not record.name.startswith("dex_agents"):
            return False  # the driver logged it as one line
        if record.name.startswith("dex.") and record.getMessage().startswith(_UNAVAILABLE_PREFIX):
            with _CONNECTION.lock:
                if _CONNECTION.down:
                    return False
                _CONNECTION.down = True
            record.msg, record.args = "the Dex server is unreachable; the Worker retries: %s", (
                _grpc_reason(record.args),)
        if error is not None:
            if not getattr(error, _LOGGED_MARK, False):  # an expected failure's line already says it
                record.msg, record.args = f"{record.getMessage()}: {_one_line(error)}", None
            record.exc_info, record.exc_text = None, None
        return True


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        time = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        where = " ".join(f"{label}={value}" for label, value in (
            ("session", getattr(record, "session_id", None)), ("turn", getattr(record, "turn_id", None)),
            ("step", getattr(record, "step", None))) if value is not None)
        line = f"{time} {record.levelname} {record.name}{' ' + where if where else ''}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            **{name: getattr(record, name, None) for name in _FIELDS}}
        if record.exc_info:
            document["traceback"] = self.formatException(record.exc_info)
        return json.dumps(document, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class LoggingSetup:
    """An installed setup: ``close`` removes its handler (tests; a process keeps it)."""

    handler: logging.Handler
    previous_level: int

    def close(self) -> None:
        root = logging.getLogger()
        root.removeHandler(self.handler)
        root.setLevel(self.previous_level)


def configure_logging(*, log_format: LogFormat = "text", debug: bool = False, level: int | str = logging.INFO,
                      stream: TextIO | None = None) -> LoggingSetup:
    """Install the setup on the root logger: one handler to ``stream`` (standard error) in ``log_format``.

    Raises:
        ValueError: ``log_format`` is not ``text`` or ``json``.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(_JsonFormatter() if log_format == "json" else _TextFormatter())
    handler.addFilter(_Shape(debug))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    return LoggingSetup(handler=handler, previous_level=previous)
