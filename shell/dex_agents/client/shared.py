"""What the sync and the async session client share: argument checks, the lock-retry pacing, the
visibility query of a Flow type's sessions and the wording of a wait's timeout."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypeVar

__all__ = [
    "EVENT_PAGE_SIZE",
    "LOCK_RETRY_FIRST_SECONDS",
    "LOCK_RETRY_MAX_SECONDS",
    "NOTHING_READ",
    "check_positive",
    "expect",
    "run_all",
    "sessions_query",
    "timeout_message",
]

T = TypeVar("T")

EVENT_PAGE_SIZE: Final = 100
"""Stream messages per ``list_stream_messages`` page."""

LOCK_RETRY_FIRST_SECONDS: Final = 0.01
LOCK_RETRY_MAX_SECONDS: Final = 0.2
NOTHING_READ: Final = object()


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


def run_all(steps: Sequence[Callable[[], None]]) -> None:
    """Run every step even if one fails; raise the first failure at the end."""
    errors: list[BaseException] = []
    for step in steps:
        try:
            step()
        except BaseException as error:  # noqa: BLE001 - every step must run
            errors.append(error)
    if errors:
        raise errors[0]


def timeout_message(session_id: str, description: str, seconds: float, last_seen: object,
                    cause: BaseException | None) -> str:
    """Why a wait timed out: the session, what was awaited, the last value seen, the last read error."""
    seen = "nothing was read" if last_seen is NOTHING_READ else repr(last_seen)
    read_error = "" if cause is None else f"; the last read raised {cause!r}"
    return (f"session {session_id!r}: timed out after {seconds:g} s waiting for {description}; "
            f"last value seen: {seen}{read_error}")
