"""``model_retry`` on a real engine: the Flow's ``RetryPolicy`` replaces ``RunModel``'s retry options
(attempts and backoff), ``model_call_failed``'s ``retrying`` follows the configured attempts, and a
model error carrying a retry-after makes Dex wait that long before the next attempt.

Times are read from when the runner was called (monotonic), after the turn ended: nothing sleeps to
judge; the waits are on committed values."""

from __future__ import annotations

import time
from pathlib import Path

from dex_agents import ModelRetryAfterError, RetryPolicy
from dex_agents.pure.values.runner import AgentTurnOutcome
from dex_agents.pure.values.session import AgentStatus
from dex_agents.shell import AgentTurnContext
from dex_agents.shell.flow import create_agent_session_flow
from dex_agents.testing import ScriptedModelCall
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.agents import unique_flow_type
from tests.shell.scenario_flows import RecordingRunner, StepFailure, new_session_id, of_type, scripted_runner, step_failures

RETRIES_SECONDS = 60.0
MESSAGE = "Where is order 42?"


def _attempt_times(runner: RecordingRunner, turn_id: str, started: dict[int, float]) -> list[float]:
    return [started[attempt] for attempt in sorted(started)] if runner.calls_of(turn_id) else []


def test_model_retry_sets_the_attempts_and_the_backoff_and_retrying_follows_them(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """Two attempts 2 s apart (Dex's default would give 3, 1 s then 2 s apart): the turn fails after
    the second, whose ``model_call_failed`` says ``retrying`` false."""
    started: dict[int, float] = {}

    async def always_fail(turn: AgentTurnContext) -> AgentTurnOutcome | None:
        started[turn.attempt] = time.monotonic()
        raise RuntimeError(f"model down (attempt {turn.attempt})")

    runner = RecordingRunner(inner=scripted_runner(tmp_path, {}), before_model=always_fail)
    flow = create_agent_session_flow(runner, unique_flow_type("ModelRetry"),
                                     model_retry=RetryPolicy(max_attempts=2, initial_backoff=2, max_backoff=2))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id, MESSAGE)

    state = sessions.wait_for_turns(session_id, 1)
    assert (state.failed_turn_count, state.status) == (1, AgentStatus.WAITING_FOR_USER_MESSAGE)
    assert state.last_turn_error == "model down (attempt 2)"
    assert step_failures(environment.server_address, session_id) == [StepFailure(
        step_type="RunModel", step_execution_id="RunModel-1", attempt=2, error="model down (attempt 2)")]
    failed = of_type(sessions.events(session_id), "dex_agents.model_call_failed")
    assert [(e.attempt, e.payload["retrying"]) for e in failed] == [(1, True), (2, False)]
    first, second = _attempt_times(runner, "turn-1", started)
    assert second - first >= 1.9, f"the retry came {second - first:.2f} s after the first attempt, not 2 s"


def test_a_retry_after_from_the_model_replaces_the_backoff(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """A ``ModelRetryAfterError`` of 2.5 s (rounded up to 3) makes the next attempt wait 3 s instead of
    the 1 s backoff; then the call succeeds and the turn completes."""
    started: dict[int, float] = {}

    async def rate_limited_once(turn: AgentTurnContext) -> AgentTurnOutcome | None:
        started[turn.attempt] = time.monotonic()
        if turn.attempt == 1:
            raise ModelRetryAfterError("429 Too Many Requests", retry_after_seconds=2.5)
        return None

    script = {MESSAGE: (ScriptedModelCall(text="It ships today."),)}
    runner = RecordingRunner(inner=scripted_runner(tmp_path, script), before_model=rate_limited_once)
    flow = create_agent_session_flow(runner, unique_flow_type("RetryAfter"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow, timeout=RETRIES_SECONDS)
    session_id = new_session_id()
    sessions.start_session(session_id, MESSAGE)

    state = sessions.wait_for_completed_turns(session_id, 1)
    assert state.failed_turn_count == 0
    first, second = _attempt_times(runner, "turn-1", started)
    assert second - first >= 2.9, f"the retry came {second - first:.2f} s after the rate limit, not 3 s"
    failed = of_type(sessions.events(session_id), "dex_agents.model_call_failed")
    assert [(e.attempt, e.payload["retrying"], e.payload["error"]) for e in failed] == [
        (1, True, "429 Too Many Requests")]
