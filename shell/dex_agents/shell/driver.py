"""The one shape of every Step method and RPC: gather the committed values its row loads, build its
started input from what the invocation saw, ``reduce``, perform; a Step performs each request its
transition ends in and reduces the request's follow-up input, until a decision ends the attempt.

Invariants:
    * The core decides; the shell gathers, performs and reports. Building a started input reads the
      invocation (its input, a fired Timer, consumed messages, the recovery error) and decides nothing.
    * Each follow-up input is reduced from the state the previous transition left; every Step
      attempt ends in a decision or raises.
    * A stored value that cannot be decoded fails the session with ``force_fail`` and a message naming
      the value: decoding is deterministic, so retrying could never succeed.
    * The attempt's event writer is closed when the handler returns (later writes are dropped).
    * The core decides the invocation record too: a follow-up is reduced with ``reduce_follow_up``
      (in the invocation of the transition whose request it answers), and a transition that records
      carries ``RecordInvocation``, which ``perform`` stages with the writes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import TypeAlias, TypeVar, cast

from dex import AsyncContext, Context, RPCResult, StepDecision, Wait, force_fail

from dex_agents.pure.machine.effects import WriteEvent
from dex_agents.pure.machine.endings import AnswerRpc, RpcOutput
from dex_agents.pure.machine.transition import RpcTransition
from dex_agents.pure.flow.step_options import movement_with_retries
from dex_agents.shell.dex_options import dex_movement
from dex_agents.pure.machine.events import TURN_COMPLETED, TURN_FAILED
from dex_agents.pure.machine.flow_shape import rpc_instance_key, rpc_of
from dex_agents.pure.flow.table import RPC_TABLE, STEP_TABLE, attempt_deadline_ms
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.paging import page_window
from dex_agents.pure.machine.rpc_calls import AgentMessagesListed, RpcCall
from dex_agents.pure.machine.step_inputs import Invocation, StepInput, WaitInput
from dex_agents.pure.values.session import AgentEvent
from dex_agents.shell import tracing
from dex_agents.logs import set_log_turn
from dex_agents.shell.codecs import StoredValueError
from dex_agents.shell.events_writer import StreamAgentEventWriter
from dex_agents.shell.gather import gather_for
from dex_agents.shell.history import cached_messages, cached_messages_sync
from dex_agents.shell.log_context import logged_rpc, logged_step
from dex_agents.shell.perform import perform_rpc, perform_step, perform_wait
from dex_agents.shell.requests import perform_request
from dex_agents.shell.runtime import SessionRuntime
from dex_agents.shell.step_run import StepRun, instant

Started: TypeAlias = Callable[[Invocation, SessionState], StepInput]
"""Builds a Step's started input from the invocation and the state it loaded (reading the Context)."""

WaitStarted: TypeAlias = Callable[[Invocation], WaitInput]
"""Builds a ``wait_for``'s input from the invocation."""

OutputT = TypeVar("OutputT", bound=RpcOutput)


def cannot_continue(context: Context, error: StoredValueError) -> StepDecision:
    """Fail the session: a stored value it needs cannot be decoded."""
    return force_fail(f"session {context.flow_id} cannot continue: {error}")


def _invocation(context: Context, now_ms: int) -> Invocation:
    return Invocation(
        flow_id=context.flow_id, step_execution_id=context.step_execution_id, attempt=context.attempt, now_ms=now_ms
    )


@logged_step
async def drive_step(
    runtime: SessionRuntime, context: AsyncContext, step_type: StepType, tool_call_id: str | None, started: Started
) -> StepDecision:
    """Run one Step ``execute``: gather what its row loads, reduce its started input, perform, and
    reduce each request's follow-up until a decision."""
    access = STEP_TABLE[step_type].execute
    try:
        messages = await cached_messages(runtime.history, context, access)
        state = gather_for(context, access, tool_call_id, messages)
        set_log_turn(state.current_turn_id)
        invocation = _invocation(context, runtime.timing.now_ms())
        step_input = started(invocation, state)
    except StoredValueError as error:
        return cannot_continue(context, error)
    run = StepRun(
        context=context,
        runtime=runtime,
        writer=StreamAgentEventWriter(context, runtime.events, state.current_turn_id, runtime.timing.now_ms),
        invocation=invocation,
        deadline=instant(attempt_deadline_ms(step_type, invocation.now_ms)),
    )
    try:
        cause: BaseException | None = None
        transition = runtime.reduce_step(state, step_input)
        started_ns = time.time_ns() if tracing.tracing_enabled() else 0
        turn_end: AgentEvent | None = None
        while True:
            if started_ns:
                turn_end = next((effect.event for effect in transition.effects if isinstance(effect, WriteEvent)
                                 and effect.event.type in (TURN_COMPLETED, TURN_FAILED)), turn_end)
            performed = perform_step(transition, run, cause)
            if isinstance(performed, StepDecision):
                if turn_end is not None:  # the attempt that ended the turn: its outcome is known now
                    tracing.emit_span("dex_agents.turn", session_id=invocation.flow_id, turn_id=turn_end.turn_id,
                                      attempt=invocation.attempt, outcome=turn_end.type.removeprefix("turn_"),
                                      failed=turn_end.type == TURN_FAILED, start_ns=started_ns, end_ns=time.time_ns(),
                                      attributes={"dex_agents.step_execution_id": invocation.step_execution_id})
                return performed
            follow_up = await perform_request(performed, run)
            transition, cause = runtime.reduce_follow_up(transition, follow_up.input), follow_up.cause
    finally:
        run.writer.close()


def drive_wait(
    runtime: SessionRuntime, context: Context, step_type: StepType, tool_call_id: str | None, started: WaitStarted
) -> Wait:
    """Run one Step ``wait_for`` the core decides: gather what its row loads, reduce, return the Wait."""
    state = gather_for(context, STEP_TABLE[step_type].wait_for, tool_call_id)
    wait_input = started(_invocation(context, runtime.timing.now_ms()))
    return perform_wait(runtime.reduce_wait(state, wait_input), context, runtime.sub_agents)


def off_the_loop(body: Callable[[], RPCResult[OutputT]]) -> RPCResult[OutputT]:
    """Run an RPC body on a worker thread when an event loop serves the RPC, inline otherwise.

    The handler stays a plain ``def`` typed ``RPCResult`` (so ``client.invoke_rpc(flow.get_agent_snapshot,
    ...)`` type-checks): under ``AsyncWorker`` it returns the future of ``body`` on the loop's default
    executor, which the Worker awaits (it awaits any awaitable an RPC method returns).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return body()
    return cast("RPCResult[OutputT]", loop.run_in_executor(None, body))


def _message_window(call: RpcCall, message_count: int) -> tuple[int, int]:
    """The messages an RPC that reads them sees: a page's window (``paging.page_window``), else all."""
    if isinstance(call, AgentMessagesListed):
        return page_window(message_count, call.input.before_sequence, call.input.limit)
    return (1, message_count)


def rpc_result(output: OutputT, transition: RpcTransition, runtime: SessionRuntime) -> RPCResult[OutputT]:
    """The SDK's result of an answered RPC: with the Steps it cancels and starts (an operator's
    cancellation), if any; a plain ``RPCResult`` otherwise (every other RPC)."""
    ending = transition.ending
    if not isinstance(ending, AnswerRpc) or (not ending.cancel_steps and not ending.next_steps):
        return RPCResult(output)
    movements = tuple(dex_movement(movement_with_retries(movement, runtime.retry_overrides), runtime.step_class_of, None)
                      for movement in ending.next_steps)
    result = RPCResult(output, next_steps=movements)
    return result.with_canceling_steps(*(runtime.step_class_of(step_type) for step_type in ending.cancel_steps))


@logged_rpc
def drive_rpc(
    runtime: SessionRuntime,
    context: Context,
    call: RpcCall,
    output_type: type[OutputT],
) -> RPCResult[OutputT]:
    """Run one RPC: gather what its row loads, reduce its call and perform; answer the output
    (``output_type``, the row's output type, binds the handler's static result type)."""
    row = RPC_TABLE[rpc_of(call)]
    if output_type is not row.output_type:
        raise RuntimeError(f"{row.rpc} answers {row.output_type.__name__}, not {output_type.__name__}")
    messages = cached_messages_sync(runtime.history, context, row.access, partial(_message_window, call))
    state = gather_for(context, row.access, rpc_instance_key(call), messages)
    set_log_turn(state.current_turn_id)
    transition = runtime.reduce_rpc(state, call)
    output = perform_rpc(transition, context)
    if not isinstance(output, output_type):
        raise RuntimeError(f"the core answered {type(output).__name__}, not {output_type.__name__}")
    return rpc_result(output, transition, runtime)


__all__ = [
    "Started",
    "rpc_result",
    "WaitStarted",
    "cannot_continue",
    "drive_rpc",
    "drive_step",
    "drive_wait",
    "off_the_loop",
]
