"""The one shape of every Step and RPC: gather committed values -> build the fact -> ``reduce`` ->
perform the effects (calling the runner only where an effect or the fact needs it).

Invariants:
    * The core decides; the shell gathers, observes and performs. ``reduce`` sees each fact once.
    * A tool Step's ``ExecuteDeferredToolCall`` (and ``RunModel``'s ``BuildTurnFailureNote``) yields a
      follow-up fact, reduced from the state the first transition left; every Step transition ends in
      a decision or raises.
    * A stored value that cannot be decoded fails the session with ``force_fail`` and a message naming
      the value: decoding is deterministic, so retrying could never succeed.
    * The attempt's event writer is closed when the handler returns (later writes are dropped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar, cast

from dex import AsyncContext, Context, RPCResult, StepDecision, force_fail

from dex_agents.pure.effects import AnswerRpc, RpcOutput
from dex_agents.pure.flow_shape import rpc_of
from dex_agents.pure.flow_table import RPC_TABLE, STEP_TABLE
from dex_agents.pure.persistence import StepType
from dex_agents.pure.state import SessionState
from dex_agents.pure.step_inputs import Invocation, RpcCall, StepInput
from dex_agents.shell.codecs import StoredValueError
from dex_agents.shell.events_writer import StreamAgentEventWriter
from dex_agents.shell.gather import gather_for
from dex_agents.shell.perform import Await, perform
from dex_agents.shell.runtime import SessionRuntime
from dex_agents.shell.step_run import StepRun, attempt_deadline

DEX_DEFAULT_METHOD_TIMEOUT_SECONDS: Final = 2 * 60 * 60
"""Dex's method timeout of a Step whose options set none (the attempt deadline's fallback)."""

Observe = Callable[[StepRun, SessionState], Awaitable[StepInput]]
"""Builds a Step's fact from what the invocation sees (calling the runner when the Step needs it)."""

OutputT = TypeVar("OutputT", bound=RpcOutput)


def cannot_continue(context: Context, error: StoredValueError) -> StepDecision:
    """Fail the session: a stored value it needs cannot be decoded."""
    return force_fail(f"session {context.flow_id} cannot continue: {error}")


async def drive_step(
    runtime: SessionRuntime, context: AsyncContext, step_type: StepType, tool_call_id: str | None, observe: Observe
) -> StepDecision:
    """Run one Step ``execute``: gather what its row loads, observe its fact, reduce and perform."""
    row = STEP_TABLE[step_type]
    try:
        state = gather_for(context, row.execute, tool_call_id)
    except StoredValueError as error:
        return cannot_continue(context, error)
    now_ms = runtime.timing.now_ms()
    run = StepRun(
        context=context,
        runtime=runtime,
        writer=StreamAgentEventWriter(context, runtime.events, state.current_turn_id, runtime.timing.now_ms),
        invocation=Invocation(
            flow_id=context.flow_id, step_execution_id=context.step_execution_id, attempt=context.attempt, now_ms=now_ms
        ),
        deadline=attempt_deadline(now_ms, row.execute_method_timeout_seconds or DEX_DEFAULT_METHOD_TIMEOUT_SECONDS),
    )
    try:
        return await _reduce_and_perform(run, state, await observe(run, state))
    finally:
        run.writer.close()


async def _reduce_and_perform(run: StepRun, state: SessionState, fact: StepInput) -> StepDecision:
    while True:
        transition = run.runtime.reduce(state, fact)
        follow_up: StepInput | None = None
        for effect in transition.effects:
            performed = perform(effect, run.context, run)
            if isinstance(performed, StepDecision):
                return performed
            if isinstance(performed, Await):
                follow_up = await performed.action
                if follow_up is not None:
                    break
        if follow_up is None:
            raise RuntimeError(f"the core's transition of {type(fact).__name__} ended without a Step decision")
        state, fact = transition.state, follow_up


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


def drive_rpc(
    runtime: SessionRuntime,
    context: Context,
    call: RpcCall,
    output_type: type[OutputT],
) -> RPCResult[OutputT]:
    """Run one RPC: gather what its row loads, reduce its call fact and perform; answer the output
    (``output_type``, the row's output type, binds the handler's static result type)."""
    row = RPC_TABLE[rpc_of(call)]
    if output_type is not row.output_type:
        raise RuntimeError(f"{row.rpc} answers {row.output_type.__name__}, not {output_type.__name__}")
    state = gather_for(context, row.access)
    transition = runtime.reduce(state, call)
    for effect in transition.effects:
        performed = perform(effect, context, None)
        if isinstance(performed, AnswerRpc):
            if not isinstance(performed.output, output_type):
                raise RuntimeError(f"the core answered {type(performed.output).__name__}, not {output_type.__name__}")
            return RPCResult(performed.output)
    raise RuntimeError("the core's RPC transition ended without an answer")


__all__ = ["DEX_DEFAULT_METHOD_TIMEOUT_SECONDS", "Observe", "cannot_continue", "drive_rpc", "drive_step", "off_the_loop"]
