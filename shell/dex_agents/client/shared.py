"""What the sync and the async session client share besides their loops: argument checks, the
visibility query of a Flow type's sessions, and ``run_all`` (the synchronous ``loops.close_all``)."""

from __future__ import annotations

from typing import Final, TypeVar

from dex_agents.client.loops import close_all as run_all

__all__ = [
    "EVENT_PAGE_SIZE",
    "check_positive",
    "expect",
    "run_all",
    "sessions_query",
]

T = TypeVar("T")

EVENT_PAGE_SIZE: Final = 100
"""Stream messages per ``list_stream_messages`` page."""


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
