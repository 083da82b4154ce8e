"""Conformance scenarios of operators steering a turn (issue 25): an approval bound to the arguments
the approver saw, and edited arguments checked by the framework's own schema of the tool before they
run. Each asserts what ran (the tool's log), what the next model call receives and the events."""

from __future__ import annotations

import json

import pytest

from dex_agents.pure.values.session import text_sha256
from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance
from dex_agents.testing.conformance.tools import REFUND_ORDER

INVALID_EDIT = '{"order_id":42,"amount":"lots"}'
VALID_EDIT = '{"order_id":42,"amount":500}'


class OperatorConformance:
    """Scenarios of approvals bound to their arguments and edited."""

    def test_an_edited_approval_is_checked_by_the_tool_schema_and_runs_once_with_the_edit(
            self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(script.REFUND)
        interrupt = session.wait_for_interrupt(REFUND_ORDER)
        original = interrupt.arguments

        with pytest.raises(Exception, match="the approver saw other arguments"):  # a stale hash: refused
            session.resolve(interrupt, True, edited_arguments=VALID_EDIT, arguments_sha256=text_sha256("{}"))
        assert [pending.interrupt_id for pending in session.pending_interrupts()] == [interrupt.interrupt_id]

        # An edit the framework's schema refuses: the approval is refused and stays pending; nothing ran.
        assert session.resolve(interrupt, True, edited_arguments=INVALID_EDIT,
                               arguments_sha256=interrupt.arguments_sha256, approver="ana")
        pending_again = session.wait_for_interrupt(REFUND_ORDER)
        assert (pending_again.interrupt_id, pending_again.arguments) == (interrupt.interrupt_id, original)
        refused = [event for event in session.events() if event.type == "dex_agents.approval_refused"]
        assert len(refused) == 1
        error = str(refused[0].payload["error"])
        assert f"Invalid arguments for tool {REFUND_ORDER!r}" in error and "amount" in error
        assert session.tool_runs(REFUND_ORDER) == []

        assert session.resolve(pending_again, True, edited_arguments=VALID_EDIT,
                               arguments_sha256=pending_again.arguments_sha256, approver="ana", reason="half only")
        session.wait_for_turns(1)
        assert session.tool_runs(REFUND_ORDER) == [json.dumps({"amount": 500, "order_id": 42}, sort_keys=True)]
        result = session.model_calls()[-1][-1]
        assert result.role == "tool" and result.text is not None
        assert result.text.startswith(f"[Dex] ana edited this call's arguments before approving it; it ran with "
                                      f"{VALID_EDIT} instead of {original}. Reason: half only.")
        assert result.text.endswith("order 42: refunded 500")
        (resolved,) = [event for event in session.events() if event.type == "interrupt_resolved"
                       and event.payload.get("edited_arguments") is not None]
        assert (resolved.payload["approver"], resolved.payload["original_arguments"]) == ("ana", original)
        finished = [event for event in session.events() if event.type == "tool_call_finished"]
        assert [event.payload["status"] for event in finished] == ["succeeded"]


__all__ = ["OperatorConformance"]
