"""Engine core, one bad run never stops others: retry back-off stays finite at any attempt number,
and the periodic deadline check survives a failing pass. Runs in-process ``EngineServer``s."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine import policy
from dex_agents.engine.server import EngineServer

WAIT = 10.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EngineServer]:
    running = EngineServer(tmp_path / "engine.db")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.parametrize("attempt", [1, 8, 1025, 5000, 10**9])
def test_default_backoff_is_finite_and_capped_at_any_attempt(attempt: int) -> None:
    delay = policy.next_retry_delay(pb.RetryPolicy(total_duration_seconds=10**9), attempt, 0.0, 0.0, 0)
    assert delay == min(2.0 ** (min(attempt, 100) - 1), policy.DEFAULT_MAX_INTERVAL)


def test_backoff_honours_maximum_interval_with_a_huge_coefficient() -> None:
    retry = pb.RetryPolicy(backoff_coefficient=1e30, maximum_interval_seconds=30, total_duration_seconds=10**9)
    assert policy.next_retry_delay(retry, 3, 0.0, 0.0, 0) == 30.0
    assert policy.next_retry_delay(retry, 2000, 0.0, 0.0, 0) == 30.0


def test_backoff_never_exceeds_a_year_whatever_the_policy() -> None:
    retry = pb.RetryPolicy(maximum_interval_seconds=2**31 - 1, total_duration_seconds=2**31 - 1)
    assert policy.next_retry_delay(retry, 200, 0.0, 0.0, 0) == policy.MAX_RETRY_DELAY
    assert policy.next_retry_delay(retry, 1, 0.0, 0.0, 2**31 - 1) == policy.MAX_RETRY_DELAY


def test_deadline_checks_go_on_after_a_failing_pass(server: EngineServer, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    checked_again = threading.Event()

    def flaky_check() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OverflowError("one Step's bookkeeping failed")
        checked_again.set()

    monkeypatch.setattr(server.engine.steps, "check_deadlines", flaky_check)
    assert checked_again.wait(WAIT), "method and heartbeat timeouts stopped after one failing check"
