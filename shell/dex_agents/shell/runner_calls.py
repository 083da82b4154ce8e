"""Calls into the runner that turn its objects into the pure core's values.

Invariants: nothing a runner returns reaches a reducer unchecked in type; a wrong type or an
exception from ``build_user_message`` is a ``RunnerDefectError`` naming the call, and fails the
attempt (the reducers then check the values themselves). An exception from ``run_model_step`` is
observed as ``ModelCallFailed`` (the core decides what it does), never raised past ``RunModel``'s
observation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import final

from dex import AsyncContext
from pyrsistent import pvector

from dex_agents.pure.runner_values import AgentTurnOutcome, DeferredToolCall, ToolCallsRequested, TurnCompleted
from dex_agents.pure.step_inputs import Invocation, ModelCallFailed, ModelCallFinished
from dex_agents.pure.values import AgentUsage, FrameworkMessage
from dex_agents.shell.heartbeats import background_heartbeats
from dex_agents.shell.runner import AgentFrameworkRunner, AgentTurnContext, NonRetryableModelError


class RunnerDefectError(RuntimeError):
    """The runner broke its contract (see ``dex_agents.shell.runner``); the attempt fails."""


def build_user_message(runner: AgentFrameworkRunner, text: str) -> FrameworkMessage:
    """``runner.build_user_message(text)``, checked to be a ``FrameworkMessage``."""
    try:
        message = runner.build_user_message(text)
    except Exception as error:
        raise RunnerDefectError(f"runner defect: build_user_message raised {error!r}") from error
    if not isinstance(message, FrameworkMessage):
        raise RunnerDefectError(f"runner defect: build_user_message returned {type(message).__name__}, "
                                "not a FrameworkMessage")
    return message


def _checked_outcome(outcome: object) -> AgentTurnOutcome:
    """The outcome with its sequences as ``PVector``s; a wrong type is a ``RunnerDefectError``."""
    if isinstance(outcome, TurnCompleted):
        messages = tuple(outcome.new_messages)
        if not all(isinstance(message, FrameworkMessage) for message in messages):
            raise RunnerDefectError("runner defect: TurnCompleted.new_messages must hold FrameworkMessages")
        _check_usage(outcome.usage)
        return replace(outcome, new_messages=pvector(messages))
    if isinstance(outcome, ToolCallsRequested):
        calls = tuple(outcome.tool_calls)
        if not all(isinstance(call, DeferredToolCall) for call in calls):
            raise RunnerDefectError("runner defect: ToolCallsRequested.tool_calls must hold DeferredToolCalls")
        if not isinstance(outcome.framework_run_state, str):
            raise RunnerDefectError("runner defect: ToolCallsRequested.framework_run_state must be a str")
        _check_usage(outcome.usage)
        return replace(outcome, tool_calls=pvector(calls))
    raise RunnerDefectError(f"runner defect: run_model_step returned {type(outcome).__name__}, "
                            "not TurnCompleted or ToolCallsRequested")


def _check_usage(usage: object) -> None:
    if not isinstance(usage, AgentUsage):
        raise RunnerDefectError(f"runner defect: usage must be an AgentUsage, got {type(usage).__name__}")


def error_text(error: BaseException) -> str:
    """The text Dex records for a failed attempt that raised ``error``: ``str(error)``, or its type's
    name when that is empty."""
    return str(error) or type(error).__name__


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallObserved:
    """What ``run_model_step`` did, as the core's fact; ``raised`` is the exception behind a
    ``ModelCallFailed`` (the shell chains it to the failed attempt's error for its traceback)."""

    fact: ModelCallFinished | ModelCallFailed
    raised: Exception | None


async def run_model_step(
    runner: AgentFrameworkRunner,
    turn: AgentTurnContext,
    context: AsyncContext,
    heartbeat_interval_seconds: float,
    invocation: Callable[[], Invocation],
) -> ModelCallObserved:
    """``runner.run_model_step(turn)`` under background heartbeats: its checked outcome, or the error it
    raised (``NonRetryableModelError``: not retryable) as ``ModelCallFailed``. ``invocation`` reads the
    invocation facts once the call ended. A wrong outcome type raises ``RunnerDefectError``."""
    try:
        async with background_heartbeats(context, heartbeat_interval_seconds):
            outcome: object = await runner.run_model_step(turn)
    except NonRetryableModelError as error:
        failed = ModelCallFailed(invocation=invocation(), error=error.message or error_text(error), retryable=False)
        return ModelCallObserved(fact=failed, raised=error)
    except Exception as error:
        failed = ModelCallFailed(invocation=invocation(), error=error_text(error), retryable=True)
        return ModelCallObserved(fact=failed, raised=error)
    finished = ModelCallFinished(invocation=invocation(), outcome=_checked_outcome(outcome))
    return ModelCallObserved(fact=finished, raised=None)


__all__ = ["ModelCallObserved", "RunnerDefectError", "build_user_message", "error_text", "run_model_step"]
