"""Runner defects are found and described as data, and the reducers reject them losing nothing."""

from __future__ import annotations

import pytest
from pyrsistent import pvector

from dex_agents.pure.values.runner import ToolCallsRequested
from dex_agents.pure.machine.step_inputs import QueuedMessage, UserMessageBuilt
from dex_agents.pure.machine.validation import (
    RunnerDefect,
    RunnerDefectKind,
    describe_defects,
    lone_surrogate_problem,
    validate_turn_outcome,
    validate_user_message,
    without_lone_surrogates,
)
from dex_agents.pure.values.session import AgentUsage, MessageRole

from tests.pure.scenario_support import (
    assistant_message,
    completed,
    failure_of,
    requested,
    started_session,
    text_message,
    tool_call,
    user_message,
)


def kinds(defects: tuple[RunnerDefect, ...]) -> list[RunnerDefectKind]:
    return [defect.kind for defect in defects]


def test_a_valid_outcome_has_no_defects() -> None:
    assert validate_turn_outcome(requested(tool_call("a"), tool_call("b")), ()) == ()
    assert validate_turn_outcome(completed("hi"), ()) == ()


@pytest.mark.parametrize(
    ("outcome", "recorded", "expected"),
    [
        (requested(tool_call("")), (), [RunnerDefectKind.EMPTY_TOOL_CALL_ID]),
        (requested(tool_call("a/b")), (), [RunnerDefectKind.SLASH_IN_TOOL_CALL_ID]),
        (requested(tool_call("a"), tool_call("a")), (), [RunnerDefectKind.DUPLICATE_TOOL_CALL_ID]),
        (requested(tool_call("a")), ("a",), [RunnerDefectKind.TOOL_CALL_ALREADY_RECORDED]),
        (requested(tool_call("a"), run_state=""), (), [RunnerDefectKind.EMPTY_RUN_STATE]),
        (
            ToolCallsRequested(framework_run_state="rs", tool_calls=pvector(), usage=AgentUsage()),
            (),
            [RunnerDefectKind.NO_TOOL_CALLS],
        ),
        (completed("x", usage=AgentUsage(requests=-1)), (), [RunnerDefectKind.INVALID_USAGE]),
        (
            requested(tool_call(""), tool_call("x/y"), tool_call("x/y"), run_state=""),
            (),
            [
                RunnerDefectKind.EMPTY_RUN_STATE,
                RunnerDefectKind.EMPTY_TOOL_CALL_ID,
                RunnerDefectKind.SLASH_IN_TOOL_CALL_ID,
                RunnerDefectKind.SLASH_IN_TOOL_CALL_ID,
                RunnerDefectKind.DUPLICATE_TOOL_CALL_ID,
            ],
        ),
    ],
    ids=["empty-id", "slash-id", "duplicate-id", "already-recorded", "empty-run-state", "no-calls", "bad-usage", "all"],
)
def test_runner_defects_are_found(
    outcome: ToolCallsRequested, recorded: tuple[str, ...], expected: list[RunnerDefectKind]
) -> None:
    assert kinds(validate_turn_outcome(outcome, recorded)) == expected


def test_usage_counts_must_be_ints_not_bools() -> None:
    assert kinds(validate_turn_outcome(completed("x", usage=AgentUsage(requests=True)), ())) == [
        RunnerDefectKind.INVALID_USAGE
    ]


def test_defects_name_the_offending_value() -> None:
    defects = validate_turn_outcome(requested(tool_call("a/b")), ())
    assert describe_defects(defects) == "runner defect: tool call ID 'a/b' contains '/'"


def test_build_user_message_must_return_a_user_message() -> None:
    assert validate_user_message(user_message("hi")) == ()
    assert kinds(validate_user_message(assistant_message("hi"))) == [RunnerDefectKind.NOT_A_USER_MESSAGE]


def test_a_defective_model_outcome_fails_the_attempt_and_stores_nothing() -> None:
    session = started_session()
    before = session.state
    t = session.model(requested(tool_call("a"), tool_call("a")))
    assert "appears more than once" in failure_of(t)
    assert t.state == before


def test_requesting_a_call_that_already_has_a_record_this_turn_fails_the_attempt() -> None:
    session = started_session()
    session.model(requested(tool_call("a")))
    session.run_tool("a")
    session.results_arrive(1)
    before = session.state
    t = session.model(requested(tool_call("a")))
    assert "already has a record" in failure_of(t)
    assert t.state == before


def test_a_rerun_after_a_defect_succeeds_from_the_same_state() -> None:
    session = started_session()
    session.model(requested(tool_call("bad/id")))
    t = session.model(requested(tool_call("good")), attempt=2)
    assert not t.is_rejection and "good" in t.state.tool_calls


def test_a_non_user_message_from_build_user_message_fails_the_attempt() -> None:
    session = started_session()
    session.model(completed("done"))
    session.send("hi")
    bad = text_message(MessageRole.TOOL, "hi")
    t = session.feed_step(UserMessageBuilt(invocation=session.inv(), purpose=QueuedMessage(), message=bad))
    assert "not 'user'" in failure_of(t)
    assert t.state.queued_message_count == 1


@pytest.mark.parametrize("text", ["", "plain", "Où est la commande 42 ? 📦", "\ufffd", "\ue000\U0010ffff"])
def test_text_without_surrogates_has_no_encoding_problem(text: str) -> None:
    assert lone_surrogate_problem(text, "text") is None
    assert without_lone_surrogates(text) == text
    text.encode("utf-8")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\ud800", "text contains a lone surrogate U+D800 at index 0; it cannot be encoded as UTF-8"),
        ("ok \udfff", "text contains a lone surrogate U+DFFF at index 3; it cannot be encoded as UTF-8"),
        ("📦\udc00\ud800", "text contains a lone surrogate U+DC00 at index 1; it cannot be encoded as UTF-8"),
    ],
)
def test_a_lone_surrogate_is_named_with_its_code_point_and_index(text: str, expected: str) -> None:
    assert lone_surrogate_problem(text, "text") == expected
    with pytest.raises(UnicodeEncodeError):
        text.encode("utf-8")
    repaired = without_lone_surrogates(text)
    assert repaired.encode("utf-8").decode("utf-8") == repaired and len(repaired) == len(text)
