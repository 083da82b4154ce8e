"""``perform``: one exhaustive match from a pure effect to the Dex call (or runner call) it names.

Invariants:
    * A persistence effect names its typed key; ``perform`` writes through that key's one definition
      (``definitions.attribute_of`` and its siblings), with the value the key's type pins.
    * Writes are staged on the Context; Dex commits them atomically with the handler's result.
    * A Step-only effect (events, heartbeats, tool runs, decisions) inside an RPC is a programming
      error of the core and raises.
    * ``FailAttempt`` raises ``AttemptRejectedError`` in a Step (Dex fails the attempt; Stream writes
      performed before it stay) and ``RpcRefusedError`` in an RPC (the caller gets the error); nothing
      staged is kept.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TypeAlias, assert_never, final

from dex import Context, StepDecision, dead_end, go_to_many

from dex_agents.pure.effects import (
    AnswerRpc,
    BuildTurnFailureNote,
    DeadEnd,
    DeleteAttribute,
    DeleteMapInstance,
    Effect,
    ExecuteDeferredToolCall,
    FailAttempt,
    GoToSteps,
    Heartbeat,
    PublishToChannel,
    PublishToChannelInstance,
    SetAttribute,
    SetMapInstance,
    WriteEvent,
)
from dex_agents.pure.step_inputs import StepInput, TurnFailed
from dex_agents.shell.definitions import attribute_of, channel_map_of, channel_of, map_of
from dex_agents.shell.heartbeats import heartbeat_sent
from dex_agents.shell.options import dex_movement
from dex_agents.shell.runner_calls import build_user_message
from dex_agents.shell.step_run import StepRun
from dex_agents.shell.tool_call import execute_tool_call


class AttemptRejectedError(RuntimeError):
    """The core rejected the invocation's input (a runner defect or an input that does not fit the
    state) or failed the attempt (a model call that raised); the message says why. Dex fails the
    attempt; nothing of it is committed."""


class RpcRefusedError(RuntimeError):
    """The core refused an RPC's input (text that cannot be encoded); the message says why. The caller's
    Client raises ``dex.WorkerInvocationError`` with this message as ``worker_error_detail`` (and this
    class as ``worker_error_type``); nothing is written. Not a ``ValueError``: the SDK would rewrap it."""


@final
@dataclass(frozen=True, slots=True)
class Await:
    """An effect whose work is asynchronous (a heartbeat proven sent, a tool run): the Step driver
    awaits ``action``, which yields the follow-up fact or ``None``."""

    action: Coroutine[None, None, StepInput | None]


Performed: TypeAlias = StepDecision | Await | AnswerRpc | None
"""What performing one effect yields: a decision, asynchronous work, the RPC answer, or nothing.
``perform`` itself is synchronous, so RPC handlers (which only write and answer) are plain ``def``s."""


async def _heartbeat_sent(run: StepRun) -> None:
    await heartbeat_sent(run.context, deadline_seconds=run.runtime.timing.heartbeat_proof_seconds)


async def _turn_failure_note_built(run: StepRun, asked: BuildTurnFailureNote) -> TurnFailed:
    message = build_user_message(run.runtime.runner, asked.note)
    return TurnFailed(invocation=run.now(), recovery_error=asked.recovery_error, failure_note_message=message)


def _step_only(effect: Effect, run: StepRun | None) -> StepRun:
    if run is None:
        raise RuntimeError(f"{type(effect).__name__} is a Step effect; an RPC cannot perform it")
    return run


def perform(effect: Effect, context: Context, run: StepRun | None) -> Performed:
    """Perform ``effect`` on ``context``; ``run`` is the Step invocation (``None`` inside an RPC)."""
    match effect:
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
        case WriteEvent(event=event):
            _step_only(effect, run).writer.write_session_event(event)
        case Heartbeat():
            return Await(_heartbeat_sent(_step_only(effect, run)))
        case ExecuteDeferredToolCall(tool_call=tool_call, idempotency_key=key, framework_run_state=run_state):
            return Await(execute_tool_call(_step_only(effect, run), tool_call, key, run_state))
        case BuildTurnFailureNote():
            return Await(_turn_failure_note_built(_step_only(effect, run), effect))
        case GoToSteps(movements=movements):
            step = _step_only(effect, run)
            return go_to_many(*(dex_movement(m, step.runtime.step_class_of) for m in movements))
        case DeadEnd():
            _step_only(effect, run)
            return dead_end()
        case FailAttempt(error=error):
            if run is None:
                raise RpcRefusedError(error)
            raise AttemptRejectedError(error)
        case AnswerRpc():
            if run is not None:
                raise RuntimeError("AnswerRpc is an RPC effect; a Step cannot perform it")
            return effect
        case _:
            assert_never(effect)
    return None


__all__ = ["Await", "AttemptRejectedError", "Performed", "RpcRefusedError", "perform"]
