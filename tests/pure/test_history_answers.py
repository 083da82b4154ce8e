"""Replay's reading of a committed Step's writes as the answer to the request it made
(``offline.history_answers.answer_request``): a summarization, an edited approval's schema check and a
reconcile check are answered from what the Step stored; writes that do not show the answer are named."""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.machine.endings import ReconcileToolCall, SummarizeHistory, ValidateToolArguments
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import HistorySummarized, ToolArgumentsValidated, ToolOutcomeReconciled
from dex_agents.pure.offline.history_answers import REFUSED_EDIT_NOTE, Answered, answer_request
from dex_agents.pure.values.persistence import AttributeName, MapName
from dex_agents.pure.values.session import (
    AgentInterruptResolution,
    AgentUsage,
    HistorySummary,
    ToolCallStatus,
    ToolEffect,
)

from tests.pure.scenario_support import Session, invocation, requested, started_session, tool_call

CONFIG = SessionConfig()


def _session_with_a_write() -> Session:
    session = started_session()
    session.model(requested(tool_call("w", ToolEffect.IDEMPOTENT_WRITE)))
    return session


def test_a_summarization_is_answered_by_the_summary_it_stored_and_its_usage_growth() -> None:
    session = started_session()
    request = SummarizeHistory(turn_id="turn-1", trigger="manual", previous_summary=None, messages=pvector(),
                               instructions="Summarize.")
    assert answer_request(request, session.state, CONFIG, {}, invocation()) == \
        "it ran a summarization but stored no history summary"
    summary = HistorySummary(text="S", through_sequence=2, summarized_messages=2, trigger="manual",
                             turn_id="turn-1", compactions=1)
    grown = replace(session.state.usage, input_tokens=session.state.usage.input_tokens + 7)
    answered = answer_request(request, session.state, CONFIG,
                              {(AttributeName.HISTORY_SUMMARY, None): summary, (AttributeName.AGENT_USAGE, None): grown},
                              invocation())
    assert isinstance(answered, Answered) and answered.note is None
    assert answered.input == HistorySummarized(invocation=invocation(), trigger="manual", text="S",
                                               usage=AgentUsage(input_tokens=7))


def test_an_edited_approval_is_valid_when_the_step_stored_the_call_approved() -> None:
    session = _session_with_a_write()
    resolution = AgentInterruptResolution(interrupt_id="turn-1:w", approved=True, rejection_message=None,
                                          edited_arguments='{"amount": 5}')
    request = ValidateToolArguments(tool_call_id="w", tool_name="w_tool", arguments='{"amount": 5}',
                                    resolution=resolution)
    approved = replace(session.record["w"], status=ToolCallStatus.PENDING)
    valid = answer_request(request, session.state, CONFIG, {(MapName.AGENT_TOOL_CALLS, "w"): approved}, invocation())
    assert valid == Answered(input=ToolArgumentsValidated(invocation=invocation(), tool_call_id="w",
                                                          resolution=resolution, problem=None))
    refused = answer_request(request, session.state, CONFIG, {}, invocation())
    assert refused == Answered(input=ToolArgumentsValidated(invocation=invocation(), tool_call_id="w",
                                                            resolution=resolution, problem=REFUSED_EDIT_NOTE),
                               note=REFUSED_EDIT_NOTE)


def test_a_reconcile_check_is_answered_by_the_final_record_it_stored() -> None:
    session = _session_with_a_write()
    record = session.record["w"]
    request = ReconcileToolCall(tool_call=record, idempotency_key="session/turn-1/w", error="timed out")
    key = (MapName.AGENT_TOOL_CALLS, "w")

    def answered(stored: object) -> ToolOutcomeReconciled:
        answer = answer_request(request, session.state, CONFIG, {key: stored}, invocation())
        assert isinstance(answer, Answered) and isinstance(answer.input, ToolOutcomeReconciled)
        return answer.input

    succeeded = answered(replace(record, status=ToolCallStatus.SUCCEEDED, output="done"))
    assert (succeeded.status, succeeded.text) == ("succeeded", "done")
    failed = answered(replace(record, status=ToolCallStatus.FAILED, error="declined"))
    assert (failed.status, failed.text) == ("failed", "declined")
    unknown = answered(replace(record, status=ToolCallStatus.OUTCOME_UNKNOWN, error="timed out"))
    assert (unknown.status, unknown.text) == ("unknown", None)
    assert answer_request(request, session.state, CONFIG, {key: record}, invocation()) == \
        "it reconciled tool call 'w' but stored no final record of it"
