"""The core's requests, performed: the only module that calls the runner.

A Step transition may end in a request (``endings.Request``); ``perform_request`` does the work and
returns the follow-up input the driver reduces next, in the same attempt:

| Request | Work | Follow-up input |
| --- | --- | --- |
| ``BuildUserMessage`` | ``runner.build_user_message(text)`` | ``UserMessageBuilt`` |
| ``CallModel`` | ``runner.run_model_step(turn)`` under background heartbeats | ``ModelCallFinished``, or ``ModelCallFailed`` when it raised |
| ``SendHeartbeat`` | a heartbeat proven sent (``heartbeats.heartbeat_sent``), then the Step's start confirmed through Dex (``start_confirmation.confirm_start``) | ``HeartbeatSent`` |
| ``ExecuteDeferredToolCall`` | ``runner.execute_deferred_tool_call(call)`` under background heartbeats | ``ToolCallSucceeded``, or ``ToolExecutionFailed`` for a ``ToolExecutionError`` |
| ``SummarizeHistory`` | ``runner.summarize_history(request)`` under background heartbeats | ``HistorySummarized``, or ``SummarizationFailed`` when it raised |
| ``ValidateToolArguments`` | ``runner.validate_tool_arguments(tool_name, arguments)`` when the runner has it (else valid) | ``ToolArgumentsValidated`` |
| ``ReconcileToolCall`` | the tool policy's ``reconcile(tool_name, arguments, idempotency_key, error)`` under background heartbeats | ``ToolOutcomeReconciled`` (what it raises fails the attempt) |

Invariants:
    * Nothing a runner returns reaches a reducer unchecked in type: a wrong type, or an exception from
      ``build_user_message``, is a ``RunnerDefectError`` naming the call, and fails the attempt (the
      reducers then check the values themselves).
    * An exception from ``run_model_step`` becomes ``ModelCallFailed`` (the core decides what it does;
      ``NonRetryableModelError``: not retryable; a retry-after it carries, ``runner.retry_after_of``,
      goes with it) and is kept as the follow-up's ``cause``, so an attempt
      the core then fails carries the runner's traceback. Any other exception from
      ``execute_deferred_tool_call`` propagates: Dex retries the attempt or takes the failure route.
    * A heartbeat that cannot be proven sent, or a start Dex does not confirm, raises
      ``HeartbeatNotProvenError`` (``StartNotConfirmedError``): the tool never runs.
    * Every follow-up input reads the clock again (``StepRun.now``).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, replace
from typing import assert_never, final

from pyrsistent import pvector

from dex_agents.pure.machine.endings import (
    BuildUserMessage,
    CallModel,
    ExecuteDeferredToolCall,
    Request,
    ReconcileToolCall,
    SendHeartbeat,
    SummarizeHistory,
    ValidateToolArguments,
)
from dex_agents.pure.values.runner import (
    AgentTurnOutcome,
    DeferredToolCall,
    ReconciledOutcome,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.pure.machine.step_inputs import (
    HeartbeatSent,
    HistorySummarized,
    ModelCallFailed,
    ModelCallFinished,
    StepInput,
    SummarizationFailed,
    ToolArgumentsValidated,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolOutcomeReconciled,
    UserMessageBuilt,
)
from dex_agents.pure.values.session import AgentUsage, FrameworkMessage
from dex_agents.shell import tracing
from dex_agents.shell.heartbeats import background_heartbeats, heartbeat_sent
from dex_agents.shell.start_confirmation import confirm_start
from dex_agents.shell.tool_context import running_tool_call
from dex_agents.shell.runner import (
    AgentTurnContext,
    ContextWindowExceededError,
    DeferredToolExecution,
    HistorySummaryRequest,
    HistorySummaryResult,
    NonRetryableModelError,
    ToolExecutionError,
    ToolExecutionResult,
    retry_after_of,
)
from dex_agents.shell.step_run import StepRun


class RunnerDefectError(RuntimeError):
    """The runner broke its contract (see ``dex_agents.shell.runner``); the attempt fails."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class FollowUp:
    """A request's result as the core's input; ``cause`` is the exception behind it (a model call that
    raised), chained to the attempt's error if the core then fails the attempt."""

    input: StepInput
    cause: Exception | None = None


async def perform_request(request: Request, run: StepRun) -> FollowUp:
    """Do what ``request`` asks (see the module table) and return its follow-up input."""
    match request:
        case BuildUserMessage(text=text, purpose=purpose):
            message = _build_user_message(run, text)
            return FollowUp(input=UserMessageBuilt(invocation=run.now(), purpose=purpose, message=message))
        case CallModel():
            return await _call_model(run, request)
        case SendHeartbeat(tool_call_id=tool_call_id):
            proof_seconds = run.runtime.timing.heartbeat_proof_seconds
            await heartbeat_sent(run.context, deadline_seconds=proof_seconds)
            await confirm_start(run.context, run.runtime.confirmations, tool_call_id, deadline_seconds=proof_seconds)
            return FollowUp(input=HeartbeatSent(invocation=run.now(), tool_call_id=tool_call_id))
        case ExecuteDeferredToolCall():
            return await _execute_tool_call(run, request)
        case SummarizeHistory():
            return await _summarize_history(run, request)
        case ValidateToolArguments():
            return FollowUp(input=ToolArgumentsValidated(invocation=run.now(), tool_call_id=request.tool_call_id,
                                                         resolution=request.resolution,
                                                         problem=await _validate(run, request)))
        case ReconcileToolCall():
            return await _reconcile(run, request)
        case _:
            assert_never(request)


async def _validate(run: StepRun, request: ValidateToolArguments) -> str | None:
    """``runner.validate_tool_arguments(tool_name, arguments)`` (awaited when it returns an awaitable):
    ``None`` (valid) or the validation error; a runner without the hook accepts every JSON object."""
    runner = run.runtime.runner
    validate = getattr(runner, "validate_tool_arguments", None)
    if validate is None:
        return None
    problem: object = validate(request.tool_name, request.arguments)
    if inspect.isawaitable(problem):
        problem = await problem
    if problem is not None and not isinstance(problem, str):
        raise RunnerDefectError(f"runner defect: validate_tool_arguments returned {type(problem).__name__}, "
                                "not a str or None")
    return problem


async def _reconcile(run: StepRun, request: ReconcileToolCall) -> FollowUp:
    """The tool policy's ``reconcile(tool_name, arguments, idempotency_key, error)`` (awaited when it
    returns an awaitable) under background heartbeats; what it raises fails the attempt (retried)."""
    record = request.tool_call
    policy = run.runtime.config.tool_policies.get(record.tool_name)
    reconcile = None if policy is None else policy.reconcile
    if reconcile is None:
        answer: object = ReconciledOutcome.still_unknown()
    else:
        async with background_heartbeats(run.context, run.runtime.timing.heartbeat_interval_seconds):
            answer = reconcile(record.tool_name, record.arguments, request.idempotency_key, request.error)
            if inspect.isawaitable(answer):
                answer = await answer
    if not isinstance(answer, ReconciledOutcome):
        raise RunnerDefectError(f"reconcile of {record.tool_name!r} returned {type(answer).__name__}, "
                                "not a ReconciledOutcome")
    return FollowUp(input=ToolOutcomeReconciled(invocation=run.now(), tool_call_id=record.tool_call_id,
                                                status=answer.status.value, text=answer.text))


def _build_user_message(run: StepRun, text: str) -> FrameworkMessage:
    """``runner.build_user_message(text)``, checked to be a ``FrameworkMessage``."""
    try:
        message = run.runtime.runner.build_user_message(text)
    except Exception as error:
        raise RunnerDefectError(f"runner defect: build_user_message raised {error!r}") from error
    if not isinstance(message, FrameworkMessage):
        raise RunnerDefectError(f"runner defect: build_user_message returned {type(message).__name__}, "
                                "not a FrameworkMessage")
    return message


def error_text(error: BaseException) -> str:
    """The text Dex records for a failed attempt that raised ``error``: ``str(error)``, or its type's
    name when that is empty."""
    return str(error) or type(error).__name__


async def _call_model(run: StepRun, request: CallModel) -> FollowUp:
    """``runner.run_model_step`` with the turn the core asked for, under background heartbeats."""
    context = run.context
    turn = AgentTurnContext(
        flow_id=run.invocation.flow_id,
        turn_id=request.turn_id,
        attempt=run.invocation.attempt,
        messages=tuple(request.messages),
        framework_run_state=request.framework_run_state,
        tool_calls=tuple(request.tool_calls),
        events=run.writer,
        deadline=run.deadline,
        resolve_tool_policy=run.runtime.config.resolve_tool_policy,
        is_cancellation_requested=context.is_cancellation_requested,
        heartbeat=context.heartbeat,
        history_summary=request.history_summary,
    )
    started_ns = time.time_ns() if tracing.tracing_enabled() else 0
    try:
        async with background_heartbeats(context, run.runtime.timing.heartbeat_interval_seconds):
            outcome: object = await run.runtime.runner.run_model_step(turn)
    except NonRetryableModelError as error:
        failed = ModelCallFailed(invocation=run.now(), error=error.message or error_text(error), retryable=False,
                                 context_window_exceeded=isinstance(error, ContextWindowExceededError))
        _model_span(run, request, started_ns, "failed_final")
        return FollowUp(input=failed, cause=error)
    except Exception as error:
        failed = ModelCallFailed(invocation=run.now(), error=error_text(error), retryable=True,
                                 retry_after_seconds=retry_after_of(error))
        _model_span(run, request, started_ns, "failed")
        return FollowUp(input=failed, cause=error)
    checked = _checked_outcome(outcome)
    _model_span(run, request, started_ns, "final_answer" if isinstance(checked, TurnCompleted) else "tool_calls")
    return FollowUp(input=ModelCallFinished(invocation=run.now(), outcome=checked))


def _model_span(run: StepRun, request: CallModel, started_ns: int, outcome: str) -> None:
    if started_ns:
        tracing.emit_span("dex_agents.model_call", session_id=run.invocation.flow_id, turn_id=request.turn_id,
                          attempt=run.invocation.attempt, outcome=outcome, failed=outcome.startswith("failed"),
                          start_ns=started_ns, end_ns=time.time_ns())


def _tool_span(run: StepRun, request: ExecuteDeferredToolCall, started_ns: int, outcome: str) -> None:
    if started_ns:
        call = request.tool_call
        tracing.emit_span("dex_agents.tool_call", session_id=run.invocation.flow_id, turn_id=call.turn_id,
                          attempt=run.invocation.attempt, outcome=outcome, failed=outcome != "succeeded",
                          start_ns=started_ns, end_ns=time.time_ns(),
                          attributes={"dex_agents.tool": call.tool_name, "dex_agents.tool_call_id": call.tool_call_id,
                                      "dex_agents.effect": call.effect.value})


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


async def _summarize_history(run: StepRun, request: SummarizeHistory) -> FollowUp:
    """``runner.summarize_history`` over the span the core chose, under background heartbeats."""
    runner = run.runtime.runner
    summarize = getattr(runner, "summarize_history", None)
    if summarize is None:
        raise RunnerDefectError(f"runner defect: {type(runner).__name__} has no summarize_history, which compaction needs")
    context = run.context
    summary_request = HistorySummaryRequest(
        flow_id=run.invocation.flow_id,
        turn_id=request.turn_id,
        attempt=run.invocation.attempt,
        previous_summary=request.previous_summary,
        messages=tuple(request.messages),
        instructions=request.instructions,
        events=run.writer,
        deadline=run.deadline,
        is_cancellation_requested=context.is_cancellation_requested,
        heartbeat=context.heartbeat,
    )
    try:
        async with background_heartbeats(context, run.runtime.timing.heartbeat_interval_seconds):
            result: object = await summarize(summary_request)
    except NonRetryableModelError as error:
        failed = SummarizationFailed(invocation=run.now(), error=error.message or error_text(error), retryable=False)
        return FollowUp(input=failed, cause=error)
    except Exception as error:
        return FollowUp(input=SummarizationFailed(invocation=run.now(), error=error_text(error), retryable=True),
                        cause=error)
    if not isinstance(result, HistorySummaryResult) or not isinstance(result.text, str):
        raise RunnerDefectError(f"runner defect: summarize_history returned {type(result).__name__}, "
                                "not a HistorySummaryResult with a str text")
    _check_usage(result.usage)
    return FollowUp(input=HistorySummarized(invocation=run.now(), trigger=request.trigger, text=result.text,
                                            usage=result.usage))


async def _execute_tool_call(run: StepRun, request: ExecuteDeferredToolCall) -> FollowUp:
    """``runner.execute_deferred_tool_call`` for the record the core asked to run, under background
    heartbeats."""
    context = run.context
    tool_call_id = request.tool_call.tool_call_id
    execution = DeferredToolExecution(
        flow_id=run.invocation.flow_id,
        tool_call=request.tool_call,
        idempotency_key=request.idempotency_key,
        framework_run_state=request.framework_run_state,
        attempt=run.invocation.attempt,
        events=run.writer,
        deadline=run.deadline,
        is_cancellation_requested=context.is_cancellation_requested,
        heartbeat=context.heartbeat,
    )
    started_ns = time.time_ns() if tracing.tracing_enabled() else 0
    try:
        async with background_heartbeats(context, run.runtime.timing.heartbeat_interval_seconds):
            with running_tool_call(execution):
                result: object = await run.runtime.runner.execute_deferred_tool_call(execution)
    except ToolExecutionError as error:
        failed = ToolExecutionFailed(invocation=run.now(), tool_call_id=tool_call_id, error=error.message)
        _tool_span(run, request, started_ns, "failed")
        return FollowUp(input=failed, cause=error)
    except BaseException:
        _tool_span(run, request, started_ns, "error")
        raise
    _tool_span(run, request, started_ns, "succeeded")
    if not isinstance(result, ToolExecutionResult) or not isinstance(result.output, str):
        raise RunnerDefectError(
            f"runner defect: execute_deferred_tool_call returned {type(result).__name__}, "
            "not a ToolExecutionResult with a str output"
        )
    return FollowUp(input=ToolCallSucceeded(invocation=run.now(), tool_call_id=tool_call_id, output=result.output))


__all__ = ["FollowUp", "RunnerDefectError", "error_text", "perform_request"]
