"""Model-facing texts: outcome texts per status, the turn failure note byte for byte against the spec's
example, ordering, and open records."""

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dex_agents.pure.machine import texts
from dex_agents.pure.machine.step_inputs import RecoveryError
from dex_agents.pure.machine.texts import (
    NO_RECOVERY_ERROR,
    approval_deadline_passed_message,
    build_turn_failure_note,
    describe_tool_call_outcome,
    outcome_unknown_tool_result,
    recovery_error_text,
)
from dex_agents.pure.values.session import AgentToolCall, ToolCallStatus, ToolEffect

# The spec's example note, byte for byte (the README's code block under "Flow shape").
SPEC_NOTE = (
    "[Dex] The previous turn failed after these tool calls ran:\n"
    '- send_email {"to":"ops"} -> succeeded: email sent\n'
    "- charge_card {\"amount\":5} -> outcome_unknown: The tool call's outcome is unknown: ...\n"
    "Do not repeat these tool calls unless the user asks again."
)


def record(
    tool_call_id: str = "call_1",
    *,
    tool_name: str = "search_orders",
    arguments: str = '{"q":"42"}',
    effect: ToolEffect = ToolEffect.READ,
    deferral_order: int = 0,
    status: ToolCallStatus = ToolCallStatus.SUCCEEDED,
    output: str | None = None,
    error: str | None = None,
    rejection_message: str | None = None,
) -> AgentToolCall:
    return AgentToolCall(
        tool_call_id=tool_call_id,
        turn_id="turn-1",
        tool_name=tool_name,
        arguments=arguments,
        effect=effect,
        requires_approval=False,
        deferral_order=deferral_order,
        idempotency_key=f"session/turn-1/{tool_call_id}",
        status=status,
        interrupt_id=None,
        output=output,
        error=error,
        rejection_message=rejection_message,
    )


def test_spec_failure_note_byte_for_byte() -> None:
    records = [
        record(
            "call_email",
            tool_name="send_email",
            arguments='{"to":"ops"}',
            effect=ToolEffect.IDEMPOTENT_WRITE,
            deferral_order=0,
            status=ToolCallStatus.SUCCEEDED,
            output="email sent",
        ),
        record(
            "call_charge",
            tool_name="charge_card",
            arguments='{"amount":5}',
            effect=ToolEffect.NON_IDEMPOTENT_WRITE,
            deferral_order=1,
            status=ToolCallStatus.OUTCOME_UNKNOWN,
            error="...",
        ),
    ]
    note = build_turn_failure_note(records)
    assert note == SPEC_NOTE
    assert str(note).encode("utf-8") == SPEC_NOTE.encode("utf-8")
    # Records arrive in any order (a map load); the note follows deferral order.
    assert build_turn_failure_note(reversed(records)) == SPEC_NOTE


@pytest.mark.parametrize(
    ("status", "details", "text"),
    [
        (ToolCallStatus.SUCCEEDED, ("3 orders", None, None), "3 orders"),
        (ToolCallStatus.SUCCEEDED, ("", None, None), ""),
        (ToolCallStatus.SUCCEEDED, ("line 1\nline 2", None, None), "line 1\nline 2"),
        (ToolCallStatus.SUCCEEDED, (None, None, None), ""),
        (ToolCallStatus.FAILED, (None, "order 42 not found", None), "The tool call failed: order 42 not found"),
        (ToolCallStatus.FAILED, (None, None, None), "The tool call failed: no error text was recorded"),
        (ToolCallStatus.FAILED, (None, "  ", None), "The tool call failed: no error text was recorded"),
        (ToolCallStatus.REJECTED, (None, None, "not today"), "The tool call was rejected: not today"),
        (
            ToolCallStatus.REJECTED,
            (None, None, approval_deadline_passed_message),
            "The tool call was rejected: approval deadline passed",
        ),
        (ToolCallStatus.REJECTED, (None, None, None), "The tool call was rejected: no reason was given"),
        (ToolCallStatus.REJECTED, (None, None, ""), "The tool call was rejected: no reason was given"),
        (
            ToolCallStatus.OUTCOME_UNKNOWN,
            (None, "worker lost during the call", None),
            "The tool call's outcome is unknown: worker lost during the call",
        ),
        (
            ToolCallStatus.OUTCOME_UNKNOWN,
            (None, None, None),
            "The tool call's outcome is unknown: no error text was recorded",
        ),
    ],
)
def test_describe_tool_call_outcome(
    status: ToolCallStatus, details: tuple[str | None, str | None, str | None], text: str
) -> None:
    output, error, rejection_message = details
    assert describe_tool_call_outcome(
        record(status=status, output=output, error=error, rejection_message=rejection_message)
    ) == text


@pytest.mark.parametrize("status", [ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.PENDING])
def test_describe_tool_call_outcome_rejects_open_records(status: ToolCallStatus) -> None:
    with pytest.raises(ValueError, match=f"tool call 'call_1' is still {status.value}; only a final record"):
        describe_tool_call_outcome(record(status=status))


def test_outcome_unknown_for_a_write_uses_outcome_unknown_tool_result() -> None:
    unknown = record(status=ToolCallStatus.OUTCOME_UNKNOWN, error="timeout", effect=ToolEffect.UNCLASSIFIED)
    assert describe_tool_call_outcome(unknown) == outcome_unknown_tool_result("timeout")


@given(st.text())
def test_outcome_unknown_tool_result_prefix(error: str) -> None:
    text = outcome_unknown_tool_result(error)
    assert text.startswith("The tool call's outcome is unknown: ")
    if error.strip():
        assert text == "The tool call's outcome is unknown: " + error


def test_approval_deadline_passed_message() -> None:
    assert approval_deadline_passed_message == "approval deadline passed"


def test_no_note_without_records() -> None:
    assert build_turn_failure_note([]) is None


def test_no_note_when_no_record_is_final() -> None:
    open_records = [
        record("a", status=ToolCallStatus.PENDING),
        record("b", status=ToolCallStatus.AWAITING_APPROVAL, deferral_order=1),
    ]
    assert build_turn_failure_note(open_records) is None


def test_note_lists_only_final_records_in_deferral_order() -> None:
    records = [
        record("c", tool_name="third", arguments="{}", deferral_order=2, status=ToolCallStatus.REJECTED),
        record("open", tool_name="open_one", deferral_order=1, status=ToolCallStatus.PENDING),
        record(
            "a", tool_name="first", arguments='{"x":1}', deferral_order=0, status=ToolCallStatus.FAILED, error="boom"
        ),
        record("d", tool_name="fourth", arguments="[]", deferral_order=3, status=ToolCallStatus.SUCCEEDED, output="ok"),
    ]
    assert build_turn_failure_note(records) == "\n".join(
        [
            "[Dex] The previous turn failed after these tool calls ran:",
            '- first {"x":1} -> failed: The tool call failed: boom',
            "- third {} -> rejected: The tool call was rejected: no reason was given",
            "- fourth [] -> succeeded: ok",
            "Do not repeat these tool calls unless the user asks again.",
        ]
    )


def test_note_accepts_a_one_shot_iterable() -> None:
    note = build_turn_failure_note(iter([record(output="done")]))
    assert note is not None and '- search_orders {"q":"42"} -> succeeded: done' in note.splitlines()


final_statuses = st.sampled_from([status for status in ToolCallStatus if status.is_final])


@given(st.lists(st.tuples(final_statuses, st.text(alphabet="abc xyz", max_size=8)), min_size=1, max_size=8))
def test_note_has_one_line_per_final_record(statuses: list[tuple[ToolCallStatus, str]]) -> None:
    records = [
        record(
            f"call_{index}",
            tool_name=f"tool_{index}",
            deferral_order=index,
            status=status,
            output=detail,
            error=detail,
        )
        for index, (status, detail) in enumerate(statuses)
    ]
    note = build_turn_failure_note(reversed(records))
    assert note is not None
    lines = note.split("\n")
    assert lines[0] == texts.TURN_FAILURE_NOTE_HEADER
    assert lines[-1] == texts.TURN_FAILURE_NOTE_FOOTER
    assert lines[1:-1] == [
        f"- tool_{index} {{\"q\":\"42\"}} -> {status.value}: {describe_tool_call_outcome(records[index])}"
        for index, (status, _) in enumerate(statuses)
    ]


def test_docstring_examples() -> None:
    results = doctest.testmod(texts)
    assert results.attempted > 0
    assert results.failed == 0


@pytest.mark.parametrize(
    ("recovery_error", "text"),
    [
        (RecoveryError(detail="503 Service Unavailable", error_type="RuntimeError"), "503 Service Unavailable"),
        (RecoveryError(detail="", error_type="dex.WorkerLost"), "dex.WorkerLost"),
        (RecoveryError(detail="", error_type=""), NO_RECOVERY_ERROR),
        (None, NO_RECOVERY_ERROR),
    ],
)
def test_the_recovery_error_text_is_the_failed_attempts_message_else_its_type(
        recovery_error: RecoveryError | None, text: str) -> None:
    """One rule for every failure route (``RecordToolFailure``, ``RecordToolOutcomeUnknown``,
    ``RecordTurnFailure``), in the core: the shell hands Dex's recovery error over as it is."""
    assert recovery_error_text(recovery_error) == text
    assert NO_RECOVERY_ERROR == "the failed Step reported no error"
