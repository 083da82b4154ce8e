"""Retry and timeout policy with Dex's defaults.

Defaults (a zero field means "server default"): first retry after 1 s, backoff coefficient 2.0,
retry interval capped at 100 s, unlimited attempts, total duration 4 h measured from the first
attempt; method timeout 2 h; heartbeat timeout 1 min (explicit values below 10 s are raised to
10 s). Attempts include the first call; retries stop at the first limit reached. A worker's
``retry_after_seconds`` replaces the computed delay.
"""

from __future__ import annotations

import math
from typing import Literal

from dex.dexpb import dex_pb2 as pb

from .blobs import BLOB_THRESHOLD_BYTES, referenced

Method = Literal["wait_for", "execute"]
DEFAULT_INITIAL_INTERVAL = 1.0
DEFAULT_COEFFICIENT = 2.0
DEFAULT_MAX_INTERVAL = 100.0
DEFAULT_TOTAL_DURATION = 4 * 3600.0
DEFAULT_METHOD_TIMEOUT = 2 * 3600.0
DEFAULT_HEARTBEAT_TIMEOUT = 60.0
MINIMUM_HEARTBEAT_TIMEOUT = 10.0
DEFAULT_RPC_TIMEOUT = 60.0
MAX_REDELIVERIES = 3
"""Re-deliveries of one attempt after lost streams; the next loss fails the attempt (dex.WorkerLost)."""
WORKER_TASK_LIMIT = 4 * 1024 * 1024
"""Largest task frame the SDK's pull Worker receives: its channel keeps gRPC's default 4 MiB limit."""
TASK_FRAME_MARGIN = 64
"""Bytes reserved for what dispatch adds to a task frame (its deadline)."""
NO_WORKER_AVAILABLE = "NO_WORKER_AVAILABLE"
"""Error type of an attempt no Worker accepted within the dispatch wait (Dex's dispatch error reason)."""
ASYNC_LOCAL_ATTEMPTS = 3
"""ASYNC durability, Dex's local phase: the first attempts within ASYNC_LOCAL_SECONDS of the first
retry at once, ignore method and heartbeat timeouts and do not keep heartbeat checkpoints; an
attempt still running at the phase's end falls back in place to a regular attempt (not run again);
later retries continue the backoff sequence."""
ASYNC_LOCAL_SECONDS = 7.0
MAX_BACKOFF_EXPONENT = 64
"""Retries past this many back-offs wait as long as the 64th (the delay is capped long before)."""
MAX_RETRY_DELAY = 365 * 24 * 3600.0
"""No retry waits longer than this, whatever the policy says (keeps due times representable)."""


def retry_policy(options: pb.StepOptions, method: Method) -> pb.RetryPolicy:
    """The configured retry policy of a Step method (may be all zeros)."""
    return options.wait_for_retry_policy if method == "wait_for" else options.execute_retry_policy


def single_attempt(options: pb.StepOptions, method: Method) -> bool:
    """Whether the method may run only once (``maximum_attempts`` 1): the record that an attempt of it
    sent output is what keeps a restarted engine from re-delivering (running) it again, so that record
    must survive an OS crash; any other method may run again anyway (see ``steps.on_progress``)."""
    return retry_policy(options, method).maximum_attempts == 1


def next_retry_delay(
    policy: pb.RetryPolicy,
    failed_attempt: int,
    first_attempt_at: float,
    now: float,
    retry_after: int,
) -> float | None:
    """Seconds until the next attempt, or None when the retry budget is spent."""
    if policy.maximum_attempts > 0 and failed_attempt >= policy.maximum_attempts:
        return None
    initial = float(policy.initial_interval_seconds) or DEFAULT_INITIAL_INTERVAL
    coefficient = float(policy.backoff_coefficient)
    if not math.isfinite(coefficient) or coefficient <= 0:
        coefficient = DEFAULT_COEFFICIENT
    maximum = float(policy.maximum_interval_seconds) or max(DEFAULT_MAX_INTERVAL, initial)
    delay = backoff(initial, coefficient, failed_attempt, maximum)
    if retry_after > 0:
        delay = min(float(retry_after), MAX_RETRY_DELAY)
    total = float(policy.total_duration_seconds) or DEFAULT_TOTAL_DURATION
    if now + delay - first_attempt_at > total:
        return None
    return delay


def backoff(initial: float, coefficient: float, failed_attempt: int, maximum: float) -> float:
    """``initial * coefficient ** (failed_attempt - 1)`` capped at ``maximum`` (and MAX_RETRY_DELAY);
    finite for any attempt number: the exponent stops at MAX_BACKOFF_EXPONENT."""
    exponent = min(max(failed_attempt - 1, 0), MAX_BACKOFF_EXPONENT)
    try:
        grown = initial * coefficient ** exponent
    except OverflowError:
        grown = math.inf
    return max(min(grown, maximum, MAX_RETRY_DELAY), 0.0)


def oversized_task(message: pb.PollWorkerTask) -> str | None:
    """Why the task cannot reach a pull Worker (its frame, large values referenced as blobs, exceeds
    WORKER_TASK_LIMIT), or None."""
    size = pb.PollWorkerTaskResponse(task=referenced(message)[0]).ByteSize() + TASK_FRAME_MARGIN
    if size <= WORKER_TASK_LIMIT:
        return None
    return (f"task of {size} bytes exceeds the pull Worker's {WORKER_TASK_LIMIT}-byte message limit (values over "
            f"{BLOB_THRESHOLD_BYTES} bytes already go by reference); keep the Flow's many smaller values fewer")


def method_timeout(options: pb.StepOptions, method: Method) -> float:
    """Seconds one attempt of the method may run."""
    seconds = options.wait_for_timeout_seconds if method == "wait_for" else options.execute_timeout_seconds
    return float(seconds) if seconds > 0 else DEFAULT_METHOD_TIMEOUT


def heartbeat_timeout(options: pb.StepOptions) -> float:
    """Seconds a regular attempt may go without a heartbeat or Stream write (Dex: 1 min by default,
    10 s at least); the ASYNC local phase is not subject to it."""
    if options.heartbeat_timeout_seconds <= 0:
        return DEFAULT_HEARTBEAT_TIMEOUT
    return max(float(options.heartbeat_timeout_seconds), MINIMUM_HEARTBEAT_TIMEOUT)
