"""The Steps that finish an operator's cancellation (ours; see ``dex_agents.pure.machine.reducers.cancel``
and ``.cancel_turn``):
``CancelTurn`` (started by ``cancel_turn``) and ``RecordToolCancellation`` (started by
``cancel_tool_call``). The RPC committed only the request; these read the records fresh, make the open
ones final, write the events and the note for the model, and move the session on."""

from __future__ import annotations

from dex import AsyncContext, StepDecision

from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import Invocation, ToolCancellationStarted, TurnCancelStarted
from dex_agents.pure.values.persistence import StepType
from dex_agents.shell.driver import drive_step
from dex_agents.shell.step_base import SessionStep


class CancelTurn(SessionStep[None]):
    """Ends the turn ``cancel_turn`` named canceled (its records' events, the cancel note,
    ``AwaitUserMessage``), or carries on a newer turn whose Steps the cancellation stopped."""

    step_type = StepType.CANCEL_TURN

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> TurnCancelStarted:
            return TurnCancelStarted(invocation=invocation)

        return await drive_step(self.runtime, context, self.step_type, None, started)


class RecordToolCancellation(SessionStep[str]):
    """Announces a call ``cancel_tool_call`` canceled and hands its result to the turn (dead end)."""

    step_type = StepType.RECORD_TOOL_CANCELLATION

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:  # type: ignore[override]
        def started(invocation: Invocation, _state: SessionState) -> ToolCancellationStarted:
            return ToolCancellationStarted(invocation=invocation, tool_call_id=input)

        return await drive_step(self.runtime, context, self.step_type, input, started)


__all__ = ["CancelTurn", "RecordToolCancellation"]
