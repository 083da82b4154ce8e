"""The performs: each kind of transition the core returns, turned into the Dex calls it names.

* ``perform_step(transition, run)``: the Step's writes and events, its invocation record if the core
  gave one, then its ending: a decision becomes the SDK's ``StepDecision``, a request is handed back
  to the driver (``requests`` performs it), ``FailAttempt`` raises ``AttemptRejectedError``.
* ``perform_wait(transition, context, sub_agents)``: its invocation record, then the ``Wait`` a
  ``wait_for`` returns.
* ``perform_rpc(transition, context)``: the RPC's invocation record if the core gave one and its writes,
  then its answer (returned) or its refusal (``RpcRefusedError``).
* ``perform_record(record, context)``: a ``RecordInvocation`` staged as the Dex history event
  ``INVOCATION_RECORD_EVENT``. The shell never decides whether an invocation records: the core
  (``reducers.dispatch``) puts the record on the transitions that commit one.

Each is one exhaustive ``match`` over its own effect union (``effects.StepEffect`` and
``endings.StepEnding``, ``ApprovalWait``, ``Write`` and ``RpcEnding``), so an effect only an RPC may
perform cannot reach a Step, and a Stream write cannot reach an RPC.

Invariants:
    * A persistence effect names its typed key; it is written through that key's one definition
      (``definitions.attribute_of`` and its siblings), with the value the key's type pins.
    * Writes are staged on the Context; Dex commits them atomically with the handler's result.
    * ``FailAttempt`` and ``RefuseRpc`` raise: Dex fails the attempt (Stream writes performed before it
      stay) or the caller gets the error; nothing staged is kept.
"""

from __future__ import annotations

from datetime import timedelta
from collections.abc import Mapping
from typing import Any, Final, assert_never

from dex import (
    Context,
    Flow,
    StepDecision,
    SubFlow,
    SubFlowOptions,
    SubFlowReusePolicy,
    Timer,
    Wait,
    dead_end,
    go_to_many,
    graceful_complete,
)

from dex_agents.pure.machine.effects import (
    DeleteAttribute,
    DeleteMapInstance,
    PublishToChannel,
    PublishToChannelInstance,
    RecordInvocation,
    SetAttribute,
    SetMapInstance,
    Write,
    WriteEvent,
)
from dex_agents.pure.machine.endings import (
    ReconcileToolCall,
    ValidateToolArguments,
    AnswerRpc,
    BuildUserMessage,
    CompleteSession,
    CallModel,
    DeadEnd,
    ExecuteDeferredToolCall,
    FailAttempt,
    GoToSteps,
    RefuseRpc,
    Request,
    RpcOutput,
    SendHeartbeat,
    SummarizeHistory,
    SkipWait,
    WaitForChildSession,
    WaitForResolution,
)
from dex_agents.pure.machine.invocation_record import INVOCATION_RECORD_EVENT
from dex_agents.pure.flow.step_options import movement_with_retries
from dex_agents.pure.machine.transition import RpcTransition, StepTransition, WaitTransition
from dex_agents.pure.wire import encode
from dex_agents.shell.sdk_private import raisable_retry_after
from dex_agents.shell.definitions import INTERRUPT_RESOLUTIONS, attribute_of, channel_map_of, channel_of, map_of
from dex_agents.shell.dex_options import CachedLoads, dex_movement
from dex_agents.shell.history import message_loads
from dex_agents.shell.step_run import StepRun

CHILD_SESSION_OPTIONS: Final = SubFlowOptions(reuse_policy=SubFlowReusePolicy.ALWAYS_RESTART)
"""A sub-agent's child session is reused only by the wait that started it (Dex attaches a request of the
same run and Step execution: a retry, a re-delivery after a crash); a wait of another run with the same
Step execution ID (after a rewind or a continue-as-new Dex numbers Step executions again) replaces it
instead of taking the earlier call's result."""

DEADLINE_CONDITION_ID: Final = "deadline"
"""Condition ID of the approval deadline Timer (``Client.skip_timer`` addresses it)."""


class AttemptRejectedError(RuntimeError):
    """The core rejected the invocation's input (a runner defect or an input that does not fit the
    state) or failed the attempt (a model call that raised); the message says why. Dex fails the
    attempt; nothing of it is committed."""


class RpcRefusedError(RuntimeError):
    """The core refused an RPC's input (text that cannot be encoded); the message says why. The caller's
    Client raises ``dex.WorkerInvocationError`` with this message as ``worker_error_detail`` (and this
    class as ``worker_error_type``); nothing is written. Not a ``ValueError``: the SDK would rewrap it."""


def perform_write(write: Write, context: Context) -> None:
    """Stage one write on ``context``."""
    match write:
        case SetAttribute(attribute=attribute, value=value):
            attribute_of(attribute).set(context, value)
        case DeleteAttribute(attribute=attribute):
            attribute_of(attribute).delete(context)
        case SetMapInstance(map=attribute_map, key=key, value=value):
            map_of(attribute_map).set(context, key, value)
        case DeleteMapInstance(map=attribute_map, key=key):
            map_of(attribute_map).delete(context, key)
        case PublishToChannel(channel=channel, value=value):
            channel_of(channel).publish(context, value)
        case PublishToChannelInstance(channel_map=channel_map, key=key, value=value):
            channel_map_of(channel_map).publish(context, key, value)
        case _:
            assert_never(write)


def perform_record(record: RecordInvocation | None, context: Context) -> None:
    """Stage the invocation record the core gave (if any) as a Dex history event; it commits with the
    invocation's writes."""
    if record is not None:
        context.record_event(INVOCATION_RECORD_EVENT, encode(record.record))


def perform_step(transition: StepTransition, run: StepRun, cause: BaseException | None = None) -> StepDecision | Request:
    """Perform a Step transition's effects, then its ending: the SDK decision, or the request for the
    driver to perform. ``FailAttempt`` raises ``AttemptRejectedError`` (chained to ``cause``, the
    exception behind the input, if any; wrapped in ``dex.retry_after`` when it carries a retry-after).
    Movements carry the Flow's retry options where they replace the rows' (``model_retry``)."""
    for effect in transition.effects:
        match effect:
            case WriteEvent(event=event):
                run.writer.write_session_event(event)
            case _:
                perform_write(effect, run.context)
    perform_record(transition.record, run.context)
    ending = transition.ending
    match ending:
        case GoToSteps(movements=movements, cancel_steps=cancel_steps):
            loads = _message_loads(transition, run) if any(m.options.execute_cached_maps for m in movements) else None
            retries = run.runtime.retry_overrides
            decision = go_to_many(*(dex_movement(movement_with_retries(movement, retries), run.runtime.step_class_of,
                                                 loads) for movement in movements))
            if cancel_steps:
                decision = decision.with_canceling_steps(*(run.runtime.step_class_of(t) for t in cancel_steps))
            return decision
        case DeadEnd():
            return dead_end()
        case CompleteSession(result=result):
            return graceful_complete(encode(result))
        case (BuildUserMessage() | CallModel() | SendHeartbeat() | ExecuteDeferredToolCall() | SummarizeHistory()
              | ValidateToolArguments() | ReconcileToolCall()):
            return ending
        case FailAttempt(error=error, retry_after_seconds=seconds):
            if seconds is None:
                raise AttemptRejectedError(error) from cause
            rejected = AttemptRejectedError(error)
            rejected.__cause__ = cause
            raise raisable_retry_after(max(1, seconds), rejected)
        case _:
            assert_never(ending)


def _message_loads(transition: StepTransition, run: StepRun) -> CachedLoads | None:
    """The ``AgentMessages`` instances a movement's target loads: the committed messages (as of this
    transition) this Worker's cache lacks (``history.message_loads``)."""
    agent_state = transition.state.agent_state
    count = 0 if agent_state is None else agent_state.message_count
    context = run.context
    return message_loads(run.runtime.history, context.flow_id, context.run_id, count)


def perform_wait(transition: WaitTransition, context: Context, sub_agents: Mapping[str, Flow[Any]]) -> Wait:
    """Stage the ``wait_for`` transition's invocation record, then answer its ``Wait`` (a child
    session's SubFlow runs the Flow of its type in ``sub_agents``, the Flows this Flow delegates to)."""
    perform_record(transition.record, context)
    ending = transition.ending
    match ending:
        case SkipWait():
            return Wait.skip_immediately()
        case WaitForResolution(interrupt_id=interrupt_id, timer_seconds=seconds):
            resolution = INTERRUPT_RESOLUTIONS.for_one(interrupt_id)
            if seconds is None:
                return Wait.until(resolution)
            deadline = Timer.by_duration(timedelta(seconds=seconds), condition_id=DEADLINE_CONDITION_ID)
            return Wait.any_of(deadline, resolution)
        case WaitForChildSession(flow_type=flow_type, start_input=start_input):
            child = sub_agents.get(flow_type)
            if child is None:
                raise RuntimeError(f"this Flow has no sub-agent of Flow type {flow_type!r} (create_agent_session_flow's "
                                   "sub_agents)")
            return Wait.until(SubFlow.run(child, start_input, CHILD_SESSION_OPTIONS))
        case _:
            assert_never(ending)


def perform_rpc(transition: RpcTransition, context: Context) -> RpcOutput:
    """Perform an RPC transition's writes, then answer its output; ``RefuseRpc`` raises
    ``RpcRefusedError`` (its writes are never performed: a refusal has none)."""
    ending = transition.ending
    match ending:
        case AnswerRpc(output=output):
            perform_record(transition.record, context)
            for write in transition.effects:
                perform_write(write, context)
            return output
        case RefuseRpc(error=error):
            raise RpcRefusedError(error)
        case _:
            assert_never(ending)


__all__ = [
    "DEADLINE_CONDITION_ID",
    "AttemptRejectedError",
    "RpcRefusedError",
    "perform_record",
    "perform_rpc",
    "perform_step",
    "perform_wait",
    "perform_write",
]
