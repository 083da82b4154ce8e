"""``model_retry``: the ``RetryPolicy`` a Flow sets for its model calls, checked at creation, turned into
Dex retry options that replace ``RunModel``'s and ``CompactHistory``'s rows' (and nothing else), and
read by ``model_call_failed``'s ``retrying``; a retry-after the runner reported goes with the failure."""

from __future__ import annotations

import pytest

from dex_agents.pure.flow.rows import RetryPolicy, RetrySpec
from dex_agents.pure.flow.step_options import move_to, movement_with_retries, step_options_for, with_retries
from dex_agents.pure.flow.table import MODEL_CALL_STEPS, STEP_TABLE
from dex_agents.pure.machine.effects import WriteEvent
from dex_agents.pure.machine.endings import CallModel, FailAttempt, Request
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import Invocation, ModelCallFailed, ModelStepStarted, StepInput
from dex_agents.pure.values.persistence import StepType
from tests.pure.scenario_support import started_session

POLICY = RetryPolicy(max_attempts=6, initial_backoff=2, max_backoff=60, total_duration=3600)


def test_a_policy_is_dex_retry_options_in_whole_seconds() -> None:
    assert POLICY.spec() == RetrySpec(maximum_attempts=6, initial_interval_seconds=2, maximum_interval_seconds=60,
                                      total_duration_seconds=3600)
    assert RetryPolicy().spec() == RetrySpec(maximum_attempts=3, initial_interval_seconds=1,
                                             maximum_interval_seconds=100, total_duration_seconds=1800)


@pytest.mark.parametrize(("arguments", "error"), [
    ({"max_attempts": 0}, ValueError), ({"max_attempts": 2.0}, TypeError), ({"max_attempts": True}, TypeError),
    ({"initial_backoff": 0.5}, ValueError), ({"initial_backoff": 0}, ValueError),
    ({"initial_backoff": "1"}, TypeError), ({"initial_backoff": 10, "max_backoff": 5}, ValueError),
    ({"total_duration": 0}, ValueError),
])
def test_a_bad_policy_fails_at_creation(arguments: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        RetryPolicy(**arguments)  # type: ignore[arg-type]


def test_the_policy_replaces_the_model_call_steps_retry_and_nothing_else() -> None:
    overrides = SessionConfig(model_retry=POLICY).retry_overrides()
    assert set(overrides) == MODEL_CALL_STEPS == {StepType.RUN_MODEL, StepType.COMPACT_HISTORY}
    for step_type in STEP_TABLE:
        options = step_options_for(step_type, "call-1")
        replaced = with_retries(options, step_type, overrides)
        if step_type in MODEL_CALL_STEPS:
            assert replaced.execute_retry == POLICY.spec()
            assert replaced.failure_route == options.failure_route  # RecordTurnFailure keeps its own
        else:
            assert replaced is options
    moved = movement_with_retries(move_to(StepType.RUN_MODEL), overrides)
    assert moved.options.execute_retry == POLICY.spec() and moved.step_type is StepType.RUN_MODEL
    unchanged = move_to(StepType.AWAIT_USER_MESSAGE)
    assert movement_with_retries(unchanged, overrides) is unchanged
    assert SessionConfig().retry_overrides() == {}
    assert movement_with_retries(move_to(StepType.RUN_MODEL), {}) == move_to(StepType.RUN_MODEL)


@pytest.mark.parametrize(("config", "attempt", "retrying"), [
    (SessionConfig(), 3, False),
    (SessionConfig(model_retry=POLICY), 3, True),
    (SessionConfig(model_retry=POLICY), 5, True),
    (SessionConfig(model_retry=POLICY), 6, False),
    (SessionConfig(model_retry=RetryPolicy(max_attempts=1)), 1, False),
])
def test_retrying_reads_the_configured_attempts(config: SessionConfig, attempt: int, retrying: bool) -> None:
    session = started_session(config=config)
    t = session.model_fails("503 Service Unavailable", retryable=True, attempt=attempt)
    [written] = t.effects
    assert isinstance(written, WriteEvent) and written.event.payload["retrying"] is retrying
    assert t.ending == FailAttempt(error="503 Service Unavailable")


def test_a_retry_after_goes_with_the_failed_attempt() -> None:
    session = started_session()

    def answer(request: Request, now: Invocation) -> StepInput | None:
        if isinstance(request, CallModel):
            return ModelCallFailed(invocation=now, error="429 Too Many Requests", retryable=True,
                                   retry_after_seconds=20)
        return None

    t = session.run_step(ModelStepStarted(invocation=session.inv(1)), answer)
    assert t.ending == FailAttempt(error="429 Too Many Requests", retry_after_seconds=20)
