"""Run one deferred tool call through the runner and report its outcome as a fact.

Invariants: the runner runs under background heartbeats; ``ToolExecutionError`` becomes
``ToolExecutionFailed`` (recorded ``failed``, not retried); any other exception propagates, so Dex
retries the attempt or takes the failure route; a result that is not a ``ToolExecutionResult`` with
a ``str`` output is a runner defect and fails the attempt.
"""

from __future__ import annotations

from dex_agents.pure.step_inputs import ToolCallSucceeded, ToolExecutionFailed
from dex_agents.pure.values import AgentToolCall
from dex_agents.shell.heartbeats import background_heartbeats
from dex_agents.shell.runner import DeferredToolExecution, ToolExecutionError, ToolExecutionResult
from dex_agents.shell.runner_calls import RunnerDefectError
from dex_agents.shell.step_run import StepRun


async def execute_tool_call(
    run: StepRun, tool_call: AgentToolCall, idempotency_key: str, framework_run_state: str | None
) -> ToolCallSucceeded | ToolExecutionFailed:
    """Call ``runner.execute_deferred_tool_call`` for ``tool_call`` (with the turn's
    ``framework_run_state``) and return the observed fact."""
    context = run.context
    execution = DeferredToolExecution(
        flow_id=run.invocation.flow_id,
        tool_call=tool_call,
        idempotency_key=idempotency_key,
        framework_run_state=framework_run_state,
        attempt=run.invocation.attempt,
        events=run.writer,
        deadline=run.deadline,
        is_cancellation_requested=context.is_cancellation_requested,
        heartbeat=context.heartbeat,
    )
    try:
        async with background_heartbeats(context, run.runtime.timing.heartbeat_interval_seconds):
            result: object = await run.runtime.runner.execute_deferred_tool_call(execution)
    except ToolExecutionError as error:
        return ToolExecutionFailed(invocation=run.now(), tool_call_id=tool_call.tool_call_id, error=error.message)
    if not isinstance(result, ToolExecutionResult) or not isinstance(result.output, str):
        raise RunnerDefectError(
            f"runner defect: execute_deferred_tool_call returned {type(result).__name__}, "
            "not a ToolExecutionResult with a str output"
        )
    return ToolCallSucceeded(invocation=run.now(), tool_call_id=tool_call.tool_call_id, output=result.output)


__all__ = ["execute_tool_call"]
