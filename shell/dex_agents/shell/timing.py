"""The shell's clock and timing policy, injectable so tests never wait on real time.

Invariant: the pure core never reads a clock; every ``now_ms`` it sees comes from
``SessionTiming.now_ms`` read once per Step or RPC invocation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, final

DEFAULT_HEARTBEAT_INTERVAL_SECONDS: Final = 20.0
"""The spec's background heartbeat period while the runner works."""

DEFAULT_HEARTBEAT_PROOF_SECONDS: Final = 10.0
"""How long a single-attempt tool Step waits for its heartbeat to be written before it fails."""


def wall_clock_ms() -> int:
    """The Worker's wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionTiming:
    """Time sources of one session Flow.

    Attributes:
        now_ms: Epoch milliseconds (approval deadlines, delta coalescing, attempt deadlines).
        heartbeat_interval_seconds: Period of background heartbeats while the runner works (> 0).
        heartbeat_proof_seconds: How long a single-attempt tool Step waits for its heartbeat frame to
            be written before it fails without running the tool (> 0).
    """

    now_ms: Callable[[], int] = field(default=wall_clock_ms)
    heartbeat_interval_seconds: float = DEFAULT_HEARTBEAT_INTERVAL_SECONDS
    heartbeat_proof_seconds: float = DEFAULT_HEARTBEAT_PROOF_SECONDS

    def __post_init__(self) -> None:
        if not self.heartbeat_interval_seconds > 0:
            raise ValueError(f"heartbeat_interval_seconds must be > 0, got {self.heartbeat_interval_seconds}")
        if not self.heartbeat_proof_seconds > 0:
            raise ValueError(f"heartbeat_proof_seconds must be > 0, got {self.heartbeat_proof_seconds}")


__all__ = ["DEFAULT_HEARTBEAT_INTERVAL_SECONDS", "DEFAULT_HEARTBEAT_PROOF_SECONDS", "SessionTiming", "wall_clock_ms"]
