"""Texts the session writes: the result text of a final tool call record, the turn failure note, the
error of a turn that reached its model call cap, and the recovery error text of a failure route.

Outcome texts (an interpretation: the spec fixes only the ``outcome_unknown`` prefix and the note's
layout). Each final status maps to one text, and every non-success text is a sentence prefix followed
by the recorded detail, so the model can tell a result from a failure:

==================  ==========================================================================
Status              Text
==================  ==========================================================================
``succeeded``       the recorded ``output`` unchanged
``failed``          ``The tool call failed: <error>``
``rejected``        ``The tool call was rejected: <rejection_message>``
``outcome_unknown`` ``The tool call's outcome is unknown: <error>``
``canceled``        ``cancelled by the user: <reason>`` (ours: an operator cancelled the call)
==================  ==========================================================================

A missing or blank detail (which the record invariants rule out, except a rejection without a
message) is replaced by ``no error text was recorded`` / ``no reason was given``; a missing
``output`` reads as the empty string. Nothing here raises on a final record, because
``RecordTurnFailure`` must always be able to build its note. Details are kept verbatim, newlines
included, so the note matches the Python core's.

The turn failure note (spec text, identical to the Python core)::

    [Dex] The previous turn failed after these tool calls ran:
    - send_email {"to":"ops"} -> succeeded: email sent
    - charge_card {"amount":5} -> outcome_unknown: The tool call's outcome is unknown: ...
    Do not repeat these tool calls unless the user asks again.

One line per final record, in deferral order: ``- <tool_name> <arguments> -> <status>: <text>``,
``arguments`` being the call's JSON exactly as the model sent it. Lines are joined by ``\\n`` with no
trailing newline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, assert_never

from dex_agents.pure.machine.step_inputs import RecoveryError
from dex_agents.pure.values.session import AgentToolCall, ToolCallStatus

approval_deadline_passed_message: Final = "approval deadline passed"
"""The rejection message of an interrupt whose approval deadline passed."""


def approval_deadline_unreadable_message(deadline: str | None) -> str:
    """The rejection message of an interrupt whose stored deadline cannot be read (it counts as passed).

    >>> approval_deadline_unreadable_message("tomorrow")
    "approval deadline unreadable: 'tomorrow'"
    """
    return f"approval deadline unreadable: {deadline!r}"

def model_call_cap_error(cap: int) -> str:
    """The ``last_turn_error`` of a turn whose model call ``cap`` was reached while the model still asked
    for tools (the reducer writes it; a reconstruction recognises it)."""
    return f"the turn reached its cap of {cap} model calls (max_model_calls_per_turn) without a final answer"


NO_RECOVERY_ERROR: Final = "the failed Step reported no error"
"""The recovery error text of a failure route that Dex gave no error (or an empty one)."""


def recovery_error_text(recovery_error: RecoveryError | None) -> str:
    """The text of the failure that routed a Step to its failure route: the failed attempt's message,
    else its error type, else ``NO_RECOVERY_ERROR``.

    >>> recovery_error_text(RecoveryError(detail="", error_type="WorkerLost"))
    'WorkerLost'
    """
    if recovery_error is None:
        return NO_RECOVERY_ERROR
    return recovery_error.detail or recovery_error.error_type or NO_RECOVERY_ERROR


OUTCOME_UNKNOWN_PREFIX: Final = "The tool call's outcome is unknown: "
FAILED_PREFIX: Final = "The tool call failed: "
REJECTED_PREFIX: Final = "The tool call was rejected: "
NO_ERROR_TEXT: Final = "no error text was recorded"
NO_REJECTION_REASON: Final = "no reason was given"

TURN_FAILURE_NOTE_HEADER: Final = "[Dex] The previous turn failed after these tool calls ran:"
TURN_FAILURE_NOTE_FOOTER: Final = "Do not repeat these tool calls unless the user asks again."


def _detail_or(detail: str | None, fallback: str) -> str:
    return detail if detail is not None and detail.strip() != "" else fallback


def outcome_unknown_tool_result(error: str) -> str:
    """The result text the model sees for a call whose write may or may not have taken effect.

    >>> outcome_unknown_tool_result("worker crashed")
    "The tool call's outcome is unknown: worker crashed"
    """
    return OUTCOME_UNKNOWN_PREFIX + _detail_or(error, NO_ERROR_TEXT)


def describe_tool_call_outcome(record: AgentToolCall) -> str:
    """The result text of a final tool call record, as the model should see it (see the module table),
    after the notes of how an operator changed it: ``edited_call_note`` when the approver edited its
    arguments, ``settled_outcome_note`` when its unknown outcome was settled.

    Raises:
        ValueError: the record is still open (``awaiting_approval`` or ``pending``); only final
            records have an outcome.
    """
    return edited_call_note(record) + settled_outcome_note(record) + _outcome_text(record)


def edited_call_note(record: AgentToolCall) -> str:
    """``[Dex] <approver> edited this call's arguments before approving it; it ran with <arguments>
    instead of <the model's>. Reason: <reason>.`` and a newline, or ``""`` when not edited."""
    approval = record.approval
    if approval is None or approval.original_arguments is None:
        return ""
    who = approval.approver or "the approver"
    reason = f" Reason: {approval.reason}." if approval.reason else ""
    return (f"[Dex] {who} edited this call's arguments before approving it; it ran with {record.arguments} "
            f"instead of {approval.original_arguments}.{reason}\n")


def settled_outcome_note(record: AgentToolCall) -> str:
    """``[Dex] The outcome was unknown (<error>); <who> settled it as <status>. Reason: <reason>.`` and
    a newline, or ``""`` when it was not settled."""
    settlement = record.settlement
    if settlement is None:
        return ""
    who = "the tool's reconcile check" if settlement.settled_by == "reconcile" else (settlement.resolver or "an operator")
    reason = f" Reason: {settlement.reason}." if settlement.reason else ""
    return (f"[Dex] The outcome was unknown ({settlement.unknown_error or NO_ERROR_TEXT}); {who} settled it as "
            f"{record.status.value}.{reason}\n")


def settled_by_operator_message(record: AgentToolCall) -> str:
    """The user message that tells the model an operator settled ``record`` (``resolve_tool_outcome``):
    ``[Dex] An operator settled the outcome of an earlier tool call, <tool> <arguments> (tool call <id>),
    which you were told was unknown.``, a newline, then ``describe_tool_call_outcome(record)``.

    >>> from dex_agents.pure.values.session import ToolCallSettlement, ToolEffect
    >>> settled = AgentToolCall(tool_call_id="c1", turn_id="turn-1", tool_name="refund", arguments='{"id":4}',
    ...     effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False, deferral_order=0,
    ...     idempotency_key="s/turn-1/c1", status=ToolCallStatus.SUCCEEDED, interrupt_id=None, output="refunded",
    ...     error=None, rejection_message=None, settlement=ToolCallSettlement(settled_by="operator",
    ...     resolver="bo", reason="bank statement", unknown_error="Worker lost"))
    >>> print(settled_by_operator_message(settled))
    [Dex] An operator settled the outcome of an earlier tool call, refund {"id":4} (tool call c1), which you were told was unknown.
    [Dex] The outcome was unknown (Worker lost); bo settled it as succeeded. Reason: bank statement.
    refunded
    """
    return (f"[Dex] An operator settled the outcome of an earlier tool call, {record.tool_name} {record.arguments} "
            f"(tool call {record.tool_call_id}), which you were told was unknown.\n"
            + describe_tool_call_outcome(record))


def _outcome_text(record: AgentToolCall) -> str:
    status = record.status
    match status:
        case ToolCallStatus.SUCCEEDED:
            return record.output if record.output is not None else ""
        case ToolCallStatus.FAILED:
            return FAILED_PREFIX + _detail_or(record.error, NO_ERROR_TEXT)
        case ToolCallStatus.REJECTED:
            return REJECTED_PREFIX + _detail_or(record.rejection_message, NO_REJECTION_REASON)
        case ToolCallStatus.OUTCOME_UNKNOWN:
            return outcome_unknown_tool_result(record.error if record.error is not None else "")
        case ToolCallStatus.CANCELED:
            return _detail_or(record.error, canceled_by_user(""))
        case ToolCallStatus.AWAITING_APPROVAL | ToolCallStatus.PENDING:
            raise ValueError(
                f"tool call {record.tool_call_id!r} is still {status.value}; only a final record has an outcome"
            )
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(status)


CANCELED_PREFIX: Final = "cancelled by the user: "
"""The result text of a call an operator cancelled starts with this, then the reason."""


def canceled_by_user(reason: str) -> str:
    """``cancelled by the user: <reason>``: the result the model reads of a canceled call."""
    return CANCELED_PREFIX + reason


def canceled_write_error(reason: str) -> str:
    """The error of a single-attempt write cancelled while it may have been running (it becomes
    ``outcome_unknown`` and never runs again)."""
    return (canceled_by_user(reason) + " (the write may have started; whether it took effect is unknown, "
            "and it will not run again)")


TURN_CANCEL_NOTE_HEADER: Final = "[Dex] The user cancelled the previous turn before it finished."


def build_turn_cancel_note(reason: str, records: Iterable[AgentToolCall]) -> str:
    """The note ``CancelTurn`` appends as the canceled turn's last message, so the next model call is
    told the turn was cancelled and why, and what its tool calls came to (every record is final then)."""
    lines = [TURN_CANCEL_NOTE_HEADER, f"Reason: {reason}"]
    final_records = sorted(
        (record for record in records if record.status.is_final),
        key=lambda record: (record.deferral_order, record.tool_call_id),
    )
    lines.extend(
        f"- {record.tool_name} {record.arguments} -> {record.status.value}: {describe_tool_call_outcome(record)}"
        for record in final_records
    )
    return "\n".join(lines)


def build_turn_failure_note(records: Iterable[AgentToolCall]) -> str | None:
    """The note ``RecordTurnFailure`` appends when a turn fails after tool calls finished.

    Lists every final record in deferral order (open records are left out). Returns ``None`` when no
    record is final, because then no tool ran and there is nothing the next turn must not repeat.
    """
    final_records = sorted(
        (record for record in records if record.status.is_final),
        key=lambda record: (record.deferral_order, record.tool_call_id),
    )
    if not final_records:
        return None
    lines = [TURN_FAILURE_NOTE_HEADER]
    lines.extend(
        f"- {record.tool_name} {record.arguments} -> {record.status.value}: {describe_tool_call_outcome(record)}"
        for record in final_records
    )
    lines.append(TURN_FAILURE_NOTE_FOOTER)
    return "\n".join(lines)


__all__ = [
    "CANCELED_PREFIX",
    "TURN_CANCEL_NOTE_HEADER",
    "build_turn_cancel_note",
    "canceled_by_user",
    "canceled_write_error",
    "FAILED_PREFIX",
    "NO_ERROR_TEXT",
    "NO_RECOVERY_ERROR",
    "NO_REJECTION_REASON",
    "OUTCOME_UNKNOWN_PREFIX",
    "REJECTED_PREFIX",
    "TURN_FAILURE_NOTE_FOOTER",
    "TURN_FAILURE_NOTE_HEADER",
    "approval_deadline_passed_message",
    "approval_deadline_unreadable_message",
    "build_turn_failure_note",
    "describe_tool_call_outcome",
    "edited_call_note",
    "model_call_cap_error",
    "outcome_unknown_tool_result",
    "recovery_error_text",
    "settled_by_operator_message",
    "settled_outcome_note",
]
