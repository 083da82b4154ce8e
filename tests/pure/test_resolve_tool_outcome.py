"""``resolve_tool_outcome`` (issue 25, item 4 b): an operator settles a call whose outcome is unknown.
An ``outcome_unknown`` record is kept in ``UnknownToolOutcomes`` in the commit that finalizes it; the RPC
settles it once, with its audit, in one commit with the message that tells the next model call; every
bad input is refused with its reason and writes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyrsistent import pmap

from dex_agents.pure.machine.deadlines import format_instant
from dex_agents.pure.machine.effects import PublishToChannel, SetMapInstance
from dex_agents.pure.machine.reducers.dispatch import reduce
from dex_agents.pure.machine.rpc_calls import ResolveToolOutcomeCalled
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.transition import RpcTransition
from dex_agents.pure.machine.step_inputs import SingleAttemptToolFailed
from dex_agents.pure.machine.texts import settled_by_operator_message
from dex_agents.pure.values.persistence import QUEUED_USER_MESSAGES, UNKNOWN_TOOL_OUTCOMES
from dex_agents.pure.values.rpc import ResolveToolOutcomeInput
from dex_agents.pure.values.session import AgentToolCall, AgentUserMessage, ToolCallStatus, ToolEffect
from tests.pure.scenario_support import T0_MS, answer_of, failure_of, recovery, requested, started_session, tool_call


def unknown_write() -> tuple[SessionState, AgentToolCall]:
    """A session whose write ``w`` became ``outcome_unknown`` (a crash), and its record."""
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE, tool_name="refund", arguments='{"id":4}',
                                      requires_approval=False)))
    finalized = session.run_step(SingleAttemptToolFailed(invocation=session.inv(), tool_call_id="w",
                                                         recovery_error=recovery("Worker lost"), reconcile=False))
    record = finalized.state.tool_calls["w"]
    assert record.status is ToolCallStatus.OUTCOME_UNKNOWN
    kept = [e for e in finalized.effects if isinstance(e, SetMapInstance) and e.map == UNKNOWN_TOOL_OUTCOMES]
    assert kept == [SetMapInstance.of(UNKNOWN_TOOL_OUTCOMES, "w", record)]  # in the commit that finalizes it
    assert finalized.state.unknown_tool_outcomes == pmap({"w": record})  # and in the state a replay folds
    return finalized.state, record


def settle(state: SessionState, **fields: object) -> RpcTransition:
    request = {"tool_call_id": "w", "status": "succeeded", "output_or_message": "Refunded 4", "resolver": "bo@ops",
               "reason": "bank statement", **fields}
    return reduce(state, SessionConfig(), ResolveToolOutcomeCalled(input=ResolveToolOutcomeInput(**request),  # type: ignore[arg-type]
                                                                   now_ms=T0_MS + 60_000))


def loaded(state: SessionState, record: AgentToolCall | None, running: AgentToolCall | None = None) -> SessionState:
    """``state`` as the RPC sees it: the call's ``UnknownToolOutcomes`` and ``AgentToolCalls`` instances."""
    return replace(state, unknown_tool_outcomes=pmap({} if record is None else {"w": record}),
                   tool_calls=pmap({} if running is None else {"w": running}))


def test_an_unknown_outcome_is_settled_once_with_its_audit_and_the_model_is_told() -> None:
    state, record = unknown_write()
    settled = settle(loaded(state, record, record))
    assert answer_of(settled) is True
    (kept,) = settled.state.unknown_tool_outcomes.values()
    assert (kept.status, kept.output, kept.error) == (ToolCallStatus.SUCCEEDED, "Refunded 4", None)
    assert kept.settlement is not None
    assert (kept.settlement.settled_by, kept.settlement.resolver, kept.settlement.reason,
            kept.settlement.unknown_error) == ("operator", "bo@ops", "bank statement", record.error)
    assert kept.settlement.settled_at == format_instant(T0_MS + 60_000)
    note = settled_by_operator_message(kept)
    assert list(settled.effects) == [SetMapInstance.of(UNKNOWN_TOOL_OUTCOMES, "w", kept),
                                     PublishToChannel.of(QUEUED_USER_MESSAGES, AgentUserMessage(text=note))]
    assert note.startswith('[Dex] An operator settled the outcome of an earlier tool call, refund {"id":4} (tool '
                           "call w), which you were told was unknown.\n[Dex] The outcome was unknown (")
    assert note.endswith("bo@ops settled it as succeeded. Reason: bank statement.\nRefunded 4")
    assert settled.state.queued_message_count == state.queued_message_count + 1
    assert settled.state.tool_calls["w"] == record  # the turn's record as the model read it
    again = settle(settled.state)
    assert "was already settled as succeeded by bo@ops at" in failure_of(again)
    assert list(again.effects) == []


def test_a_replayed_fold_settles_as_the_live_session_did() -> None:
    """The state ``replay`` folds holds the kept record, so the recorded call reduces as it did live
    (a regression: it was refused as unknown, and an export's replay differed)."""
    state, _record = unknown_write()
    assert answer_of(settle(state)) is True


def test_an_unknown_outcome_settled_as_failed_reads_as_a_failure() -> None:
    state, record = unknown_write()
    settled = settle(loaded(state, record), status="failed", output_or_message="the bank refused it", reason=None)
    (kept,) = settled.state.unknown_tool_outcomes.values()
    assert (kept.status, kept.error, kept.output) == (ToolCallStatus.FAILED, "the bank refused it", None)
    assert settled_by_operator_message(kept).endswith("bo@ops settled it as failed.\nThe tool call failed: "
                                                      "the bank refused it")


@pytest.mark.parametrize(("fields", "reason"), [
    ({"resolver": "  "}, "resolver must name who settles the outcome"),
    ({"resolver": ""}, "resolver must name who settles the outcome"),
    ({"tool_call_id": " "}, "tool_call_id must not be blank"),
    ({"status": "outcome_unknown"}, "status must be 'succeeded' or 'failed', got 'outcome_unknown'"),
    ({"status": "SUCCEEDED"}, "status must be 'succeeded' or 'failed'"),
    ({"status": "failed", "output_or_message": " "}, "a failed outcome needs its message"),
    ({"reason": "bad \ud800"}, "reason contains a lone surrogate"),
    ({"output_or_message": "\udfff"}, "output_or_message contains a lone surrogate"),
])
def test_a_bad_input_is_refused_with_its_reason_and_writes_nothing(fields: dict[str, object], reason: str) -> None:
    state, record = unknown_write()
    refused = settle(loaded(state, record), **fields)
    assert reason in failure_of(refused)
    assert list(refused.effects) == [] and refused.state == loaded(state, record)


def test_only_a_call_whose_outcome_is_unknown_can_be_settled() -> None:
    state, record = unknown_write()
    unknown_id = settle(loaded(state, None), tool_call_id="nope")
    assert "no tool call 'nope' of this session has an unknown outcome" in failure_of(unknown_id)
    succeeded = replace(record, status=ToolCallStatus.SUCCEEDED, output="ok", error=None)
    known = settle(loaded(state, None, succeeded))
    assert failure_of(known) == ("tool call 'w' is succeeded, not outcome_unknown; only an unknown outcome "
                                 "is settled")
    reconciling = replace(record, status=ToolCallStatus.PENDING, error=None, unknown_error="Worker lost")
    assert "its tool policy's reconcile check is still running" in failure_of(
        settle(loaded(state, None, reconciling)))
    for refused in (unknown_id, known):
        assert list(refused.effects) == []
