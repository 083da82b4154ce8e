# Generated from async_operator_actions.py by scripts/unasync.py: edit that file, then run the script.
"""``OperatorActions``: what an operator does to a running session (ours, beyond the spec's RPCs):
extend an approval's deadline, cancel a turn or one tool call, settle an unknown outcome, compact,
rewind (asyncio). ``SessionClient`` has them all; README "Operating sessions" lists them.

Invariants:
    * Each action is an RPC the session's core reduces (its audit written in the same commit), or, for
      ``rewind``, Dex's time travel followed by such an RPC; arguments are checked before anything is sent.
    * Cancelling a turn or a sub-agent's call cancels the running turns of the child sessions it waits on.
    * A rewind changes nothing when it is refused (``SessionRewindError``, ``SessionStoppedError``,
      ``NoWorkerError``); once Dex moved the session, a failure to record it is ``RewindNotRecordedError``.
"""

from __future__ import annotations

from dex import TimeTravelOptions, TimeTravelStepMethod, TimeTravelType

from dex_agents.client.children import children
from dex_agents.client.loops import repeat, repeat_lock_conflicts
from dex_agents.client.session_rpcs import SessionRpcs
from dex_agents.client.time_travel import read_run, removal_after, rewind_point
from dex_agents.client.errors import RewindNotRecordedError, client_errors
from dex_agents.client.retries import outcome_options
from dex_agents.client.shared import check_count, check_name, check_reason, check_seconds, check_text, expect
from dex_agents.client.stopped import SessionStoppedError, is_stopped_status
from dex_agents.pure.machine.events import session_rewound_event
from dex_agents.pure.machine.reducers.outcomes import SETTLED_STATUSES
from dex_agents.pure.values.rpc import (
    CancelToolCallInput,
    CancelTurnInput,
    ExtendInterruptDeadlineInput,
    ResolveToolOutcomeInput,
)
from dex_agents.pure.values.time_travel import RecordSessionRewindInput, SessionRewind

__all__ = ["EVENT_SOURCE", "OperatorActions"]

EVENT_SOURCE = "dex_agents.client"
"""The source the client writes its own events with (``dex_agents.session_rewound``)."""


class OperatorActions(SessionRpcs):
    """An operator's actions on a session (see the module docstring)."""

    @client_errors
    def rewind_preview(self, session_id: str, to_turn: int, reason: str | None = None) -> RecordSessionRewindInput:
        """What ``rewind(session_id, to_turn, reason)`` would remove now (the turns after ``to_turn`` and
        the tool calls that may have had an effect), changing nothing.

        Raises:
            SessionRewindError: ``to_turn`` has not ended, nothing came after it, or it ended in an
                earlier run (before a continue-as-new).
        """
        check_name("session_id", session_id)
        check_count("to_turn", to_turn, minimum=0)
        check_text("reason", reason, optional=True)
        info = self.describe(session_id)
        run = read_run(self._server, session_id, "", timeout=self.timeout)
        return rewind_point(run, info.run_id, to_turn, reason).removal

    @client_errors
    def rewind(self, session_id: str, to_turn: int, reason: str | None = None, *,
                     timeout: float | None = None) -> SessionRewind:
        """Take the session back to its state right after turn ``to_turn`` ended: messages, usage,
        queued messages, pending approvals (none) and tool calls as they were then. A running turn
        after it is stopped where it is (its Steps canceled; a tool already running may still finish
        its side effect).

        Dex's time travel (``ResetFlow``) restarts the session's run at the ``wait_for`` of the
        ``AwaitUserMessage`` that turn ``to_turn`` scheduled, without reapplying the writes made after
        it (``skip_writes_reapply``), so the state is exactly turn ``to_turn``'s; the replaced run keeps
        the removed turns in its history (``export`` shows them). The session then records the rewind
        (``record_session_rewind``: ``SessionRewinds/<previous run>``) and this client writes the event
        ``dex_agents.session_rewound``. Side effects are not undone: the answer's ``tool_calls`` name
        every tool call of the removed turns that may have had one.

        Returns:
            The audit the session recorded.

        Raises:
            SessionRewindError: ``to_turn`` has not ended, nothing came after it, or it ended in an
                earlier run (before a continue-as-new; ``fork`` reaches it). Nothing changed.
            NoWorkerError: No Worker serving the Flow type answered; nothing changed.
            SessionStoppedError: The session is stopped; nothing changed.
            RewindNotRecordedError: The session was rewound, but recording the rewind failed (the
                cause is chained): its audit and event are missing.
        """
        check_name("session_id", session_id)
        check_count("to_turn", to_turn, minimum=0)
        check_text("reason", reason, optional=True)
        check_seconds("timeout", timeout)
        info = self.describe(session_id)
        if is_stopped_status(info.status):  # a time travel would start it again
            raise SessionStoppedError(session_id, info.status, operation="rewind")
        self.check_worker(session_id)
        point = rewind_point(read_run(self._server, session_id, "", timeout=self.timeout), info.run_id,
                             to_turn, reason)
        run_id = self.client.time_travel(session_id, TimeTravelOptions(
            type=TimeTravelType.STEP_EXECUTION_ID, step_execution_id=point.end.step_execution_id,
            step_method=TimeTravelStepMethod.WAIT_FOR, skip_writes_reapply=True, reason=reason))
        try:
            replaced = read_run(self._server, session_id, info.run_id, timeout=self.timeout)
            removal = removal_after(replaced, info.run_id, point.end, reason)
            audit = expect(self._rpc(self.flow.record_session_rewind, session_id, removal, timeout=timeout,
                                           retry=repeat), SessionRewind, "record_session_rewind")
        except Exception as error:
            raise RewindNotRecordedError(session_id, to_turn, run_id, info.run_id, error) from error
        self.client.write_stream(session_id, self.flow.agent_events, EVENT_SOURCE,
                                       session_rewound_event(audit, run_id))
        return audit

    @client_errors
    def extend_interrupt_deadline(self, session_id: str, interrupt_id: str, deadline_ms: int, *,
                                        timeout: float | None = None) -> bool:
        """Move a pending interrupt's deadline to ``deadline_ms`` milliseconds from now (the RPC
        ``extend_interrupt_deadline``): ``False`` when it is not pending, never expires, has passed its
        deadline, or the new one is not later."""
        check_name("session_id", session_id)
        check_name("interrupt_id", interrupt_id)
        check_count("deadline_ms", deadline_ms, minimum=1)
        check_seconds("timeout", timeout)
        extension = ExtendInterruptDeadlineInput(interrupt_id=interrupt_id, deadline_ms=deadline_ms)
        answer = self._rpc(self.flow.extend_interrupt_deadline, session_id, extension, timeout=timeout,
                                 retry=repeat_lock_conflicts)
        return expect(answer, bool, "extend_interrupt_deadline")

    @client_errors
    def cancel_turn(self, session_id: str, turn_id: str, reason: str, *, timeout: float | None = None) -> bool:
        """Cancel the running turn ``turn_id`` (the RPC ``cancel_turn``; the snapshot's
        ``state.current_turn_id``): Dex cancels its model call and tool Steps, the turn ends ``canceled``
        and the next model call reads that the user cancelled it and why. ``False`` when ``turn_id`` is
        not the running turn (it ended already) or is being canceled already.

        The running turns of its sub-agents' child sessions (a call of the turn waits on each) are then
        cancelled with the same reason: each child ends ``canceled`` and its write calls stop as a
        cancelled turn's do (Dex never cancels a SubFlow with its parent's Step)."""
        check_name("session_id", session_id)
        check_name("turn_id", turn_id)
        check_reason(reason)
        check_seconds("timeout", timeout)
        answer = self._rpc(self.flow.cancel_turn, session_id, CancelTurnInput(turn_id=turn_id, reason=reason),
                                 timeout=timeout, retry=repeat_lock_conflicts)
        if answer is True:
            self._cancel_children(session_id, None, reason, timeout)
        return expect(answer, bool, "cancel_turn")

    def _cancel_children(self, session_id: str, tool_call_id: str | None, reason: str,
                               timeout: float | None) -> None:
        """Cancel the running turns of ``session_id``'s child sessions (those of the call
        ``tool_call_id`` and their own children, or all of them for ``None``)."""
        for child in children(self.client.search_flows, session_id):
            state = None if is_stopped_status(child.status) else self.state(child.flow_id)
            if state is None or tool_call_id not in (None, state.parent_tool_call_id):
                continue
            if state.current_turn_id is not None:
                self._rpc(self.flow.cancel_turn, child.flow_id, CancelTurnInput(
                    turn_id=state.current_turn_id, reason=reason), timeout=timeout, retry=repeat_lock_conflicts)
            self._cancel_children(child.flow_id, None, reason, timeout)

    @client_errors
    def cancel_tool_call(self, session_id: str, tool_call_id: str, reason: str, *,
                               timeout: float | None = None) -> bool:
        """Cancel one open tool call of the running turn (the RPC ``cancel_tool_call``): Dex cancels its
        Step, the model reads ``cancelled by the user: <reason>`` as its result and the turn goes on (an
        approval still pending is rejected with it). ``False`` when the call is not open. A sub-agent's
        call: the running turn of its child session is then cancelled too."""
        check_name("session_id", session_id)
        check_name("tool_call_id", tool_call_id)
        check_reason(reason)
        check_seconds("timeout", timeout)
        cancel = CancelToolCallInput(tool_call_id=tool_call_id, reason=reason)
        answer = self._rpc(self.flow.cancel_tool_call, session_id, cancel, timeout=timeout,
                                 retry=repeat_lock_conflicts)
        if answer is True:
            self._cancel_children(session_id, tool_call_id, reason, timeout)
        return expect(answer, bool, "cancel_tool_call")

    @client_errors
    def resolve_tool_outcome(self, session_id: str, tool_call_id: str, status: str, output_or_message: str, *,
                                   resolver: str, reason: str | None = None, timeout: float | None = None) -> bool:
        """Settle a call whose outcome is unknown (the RPC ``resolve_tool_outcome``): ``status``
        ``"succeeded"`` with the tool's output, or ``"failed"`` with its error message; ``resolver`` (who
        settles it) and ``reason`` are kept in the call's audit (``UnknownToolOutcomes``), and the model is
        told in the session's next message. ``True`` once settled.

        Raises:
            ValueError: ``status`` is neither, or ``resolver`` or ``tool_call_id`` is blank.
            SessionRefusedError: The session refused it, saying why: no call of that ID has an unknown
                outcome, its status is another, it was already settled.
            SessionBusyError: Another operator held the call's lock through the retries until ``timeout``.
        """
        check_name("session_id", session_id)
        check_name("tool_call_id", tool_call_id)
        if status not in SETTLED_STATUSES:
            raise ValueError(f"status must be 'succeeded' or 'failed', got {status!r}")
        check_text("output_or_message", output_or_message)
        check_name("resolver", resolver)
        check_text("reason", reason, optional=True)
        check_seconds("timeout", timeout)
        request = ResolveToolOutcomeInput(tool_call_id=tool_call_id, status=status,
                                          output_or_message=output_or_message, resolver=resolver, reason=reason)
        answer = self._rpc(self.flow.resolve_tool_outcome, session_id, request, timeout=timeout,
                                 options=outcome_options(tool_call_id), retry=repeat_lock_conflicts)
        return expect(answer, bool, "resolve_tool_outcome")

    @client_errors
    def compact(self, session_id: str, *, timeout: float | None = None) -> bool:
        """Ask the session to compact its history before its next model call (the RPC ``compact_history``):
        ``True`` when it has something to summarize, older than the turns it keeps whole; ``False`` when not.

        Raises:
            SessionRefusedError: The session's Flow does not compact (``compaction=None``).
        """
        check_name("session_id", session_id)
        check_seconds("timeout", timeout)
        return expect(self._rpc(self.flow.compact_history, session_id, timeout=timeout), bool,
                      "compact_history")
