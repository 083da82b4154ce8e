"""What the sync and the async session client share besides their loops: argument checks, the
visibility query of a Flow type's sessions, and ``run_all`` (the synchronous ``loops.close_all``).

Invariants: an argument check raises ``TypeError`` (a value of the wrong type) or ``ValueError`` (a
value out of range), its message naming the argument, before anything is sent (``errors``' rule)."""

from __future__ import annotations

from typing import Final, TypeVar

from dex_agents.client.loops import close_all as run_all

__all__ = [
    "EVENT_PAGE_SIZE",
    "MAX_MESSAGE_PAGE",
    "check_count",
    "check_name",
    "check_reason",
    "check_positive",
    "check_seconds",
    "check_text",
    "expect",
    "run_all",
    "sessions_query",
]

T = TypeVar("T")

EVENT_PAGE_SIZE: Final = 100
"""Stream messages per ``list_stream_messages`` page."""

MAX_MESSAGE_PAGE: Final = 200
"""The most messages ``list_agent_messages`` returns in one page (a larger ``limit`` gets this many)."""


def check_name(name: str, value: object) -> str:
    """``value``, a non-blank string (a session ID, an interrupt ID, a request ID)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} must not be blank, got {value!r}")
    return value


def check_text(name: str, value: object, *, optional: bool = False) -> str | None:
    """``value``, a string (``None`` too when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string{' or None' if optional else ''}, got {type(value).__name__}")
    return value


def check_reason(value: object) -> str:
    """``value``, a string that is not blank (an operator's reason, which the model reads)."""
    text = check_text("reason", value)
    assert text is not None
    if not text.strip():
        raise ValueError("reason must not be blank: the model is told why")
    return text


def check_count(name: str, value: object, *, minimum: int, optional: bool = False) -> int | None:
    """``value``, an ``int`` (not a ``bool``) of at least ``minimum`` (``None`` too when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int{' or None' if optional else ''}, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_seconds(name: str, value: object, *, optional: bool = True) -> float | None:
    """``value``, a positive number of seconds (``None`` too when ``optional``: the default)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return float(value)


def expect(value: object, expected: type[T], rpc_name: str) -> T:
    """``value`` as ``expected``, or a ``TypeError`` naming the RPC that answered something else."""
    if not isinstance(value, expected):
        raise TypeError(f"{rpc_name} returned {type(value).__name__}, expected {expected.__name__}")
    return value


def check_positive(timeout: float, poll_interval: float) -> None:
    """Raise ``ValueError`` unless both are positive."""
    if timeout <= 0 or poll_interval <= 0:
        raise ValueError(f"timeout and poll_interval must be positive, got {timeout} and {poll_interval}")


def sessions_query(flow_type: str) -> str:
    """The visibility query of a Flow type's sessions."""
    if "'" in flow_type:
        raise ValueError(f"cannot query a Flow type containing a quote: {flow_type!r}")
    return f"FlowType = '{flow_type}'"
