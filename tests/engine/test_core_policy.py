"""Engine core, retry and timeout policy: Dex's defaults, limits and overrides (pure)."""

from __future__ import annotations

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine import policy


def test_defaults_back_off_exponentially_from_one_second_capped_at_100() -> None:
    empty = pb.RetryPolicy()
    delays = [policy.next_retry_delay(empty, attempt, 0.0, 0.0, 0) for attempt in (1, 2, 3, 10)]
    assert delays == [1.0, 2.0, 4.0, 100.0]


def test_maximum_attempts_counts_the_first_call() -> None:
    single = pb.RetryPolicy(maximum_attempts=1)
    assert policy.next_retry_delay(single, 1, 0.0, 0.0, 0) is None
    three = pb.RetryPolicy(maximum_attempts=3, initial_interval_seconds=2, backoff_coefficient=3.0)
    assert [policy.next_retry_delay(three, a, 0.0, 0.0, 0) for a in (1, 2, 3)] == [2.0, 6.0, None]


def test_total_duration_and_maximum_interval_limit_retries() -> None:
    capped = pb.RetryPolicy(initial_interval_seconds=4, maximum_interval_seconds=5)
    assert policy.next_retry_delay(capped, 3, 0.0, 0.0, 0) == 5.0
    short = pb.RetryPolicy(total_duration_seconds=10)
    assert policy.next_retry_delay(short, 1, 0.0, 8.0, 0) == 1.0
    assert policy.next_retry_delay(short, 2, 0.0, 9.5, 0) is None, "the next attempt would start past 10 s"


def test_worker_retry_after_replaces_the_computed_delay() -> None:
    assert policy.next_retry_delay(pb.RetryPolicy(), 1, 0.0, 0.0, 7) == 7.0


def test_method_and_heartbeat_timeouts() -> None:
    assert policy.method_timeout(pb.StepOptions(), "execute") == 7200.0
    assert policy.method_timeout(pb.StepOptions(execute_timeout_seconds=3), "execute") == 3.0
    assert policy.method_timeout(pb.StepOptions(wait_for_timeout_seconds=4), "wait_for") == 4.0
    assert policy.heartbeat_timeout(pb.StepOptions()) == 60.0, "Dex's default applies to every regular attempt"
    assert policy.heartbeat_timeout(pb.StepOptions(heartbeat_timeout_seconds=2)) == 10.0, "10 s minimum"
