"""Reducers of the session's RPCs. Each returns an ``RpcTransition``: writes, then one ``AnswerRpc`` (or
``RefuseRpc``); it cannot write the event Stream (Dex RPCs cannot write Streams).

* ``send_user_message``: ``false`` for blank text; otherwise queue the message (``true``). A message
  sent during a turn waits in ``QueuedUserMessages`` and starts the next turn.
* Text that cannot be encoded (a lone surrogate, see ``validation``) in ``send_user_message``'s text
  or ``resolve_interrupt``'s ``rejection_message`` is refused (``RefuseRpc``: the caller gets an RPC
  error naming it); nothing is queued or resolved. Stored, it would fail every later model call.
* ``resolve_interrupt``: ``false`` when the interrupt is not pending (unknown, already resolved) or
  its deadline has come (``now_ms >= deadline``); otherwise remove it from ``PendingInterrupts``,
  publish the resolution to its ``InterruptResolutions`` instance and answer ``true``. The RPC locks
  ``PendingInterrupts``. An approval's ``rejection_message`` is dropped (it only explains rejections).
  Ours: ``edited_arguments`` (a JSON object's text, only with an approval), ``approver`` and
  ``reason`` travel with the resolution, with the call's time and the interrupt's deadline;
  ``AwaitToolApproval`` checks the edit against the tool's schema. An ``arguments_sha256`` that is
  not the pending call's arguments' hash is refused (``RefuseRpc``: the approver saw other
  arguments), as are edited arguments with a rejection or that are not a JSON object.
* ``extend_interrupt_deadline`` (ours): move a pending interrupt's deadline later (see its reducer).
* ``get_agent_snapshot``: the state, messages, pending interrupts, records in deferral order, usage
  and queued message count (reads everything; the RPC loads the whole maps).
* ``list_agent_messages``: one page of messages (see ``paging``).
* ``send_user_message_once`` (ours): ``send_user_message`` with the message's identity. A message ID
  already in ``UserMessageReceipts`` answers ``true`` and queues nothing (the same text: a resend) or
  is refused (another text: the ID was reused). Otherwise as ``send_user_message``; a queued message
  also stores its receipt in the same commit. Blank text answers ``false`` and keeps no receipt. A
  message ID that cannot key an instance (``keys.message_id_problem``) is refused. The RPC reads the
  receipt its caller loaded and locked, so two concurrent sends of one ID cannot both queue.
"""

from __future__ import annotations

from dataclasses import replace

from pyrsistent import pvector

from dex_agents.pure.machine.effects import PublishToChannel, PublishToChannelInstance, SetMapInstance
from dex_agents.pure.machine.paging import page_messages
from dex_agents.pure.machine.deadlines import MAX_TIMER_MS, format_instant, is_late
from dex_agents.pure.machine.keys import message_id_problem
from dex_agents.pure.values.persistence import INTERRUPT_RESOLUTIONS, QUEUED_USER_MESSAGES, USER_MESSAGE_RECEIPTS
from dex_agents.pure.machine.reducers.common import interrupt_deadline, set_pending_interrupts
from dex_agents.pure.machine.reducers.session import is_blank
from dex_agents.pure.machine.rpc_calls import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ExtendInterruptDeadlineCalled,
    ResolveInterruptCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
)
from dex_agents.pure.values.rpc import AgentSnapshot, ResolveInterruptInput
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.transition import RpcTransition, answer, refuse
from dex_agents.pure.machine.validation import first_lone_surrogate_problem, json_object_problem, lone_surrogate_problem
from dex_agents.pure.values.session import (
    AgentInterrupt,
    AgentInterruptResolution,
    AgentUserMessage,
    UserMessageReceipt,
    text_sha256,
)


def reduce_send_user_message(state: SessionState, called: SendUserMessageCalled) -> RpcTransition:
    """``send_user_message``: refuse un-encodable text, ``false`` for blank text, else queue it (``true``)."""
    text = called.input.text
    problem = lone_surrogate_problem(text, "text")
    if problem is not None:
        return refuse(state, problem)
    if is_blank(text):
        return answer(state, False)
    queued = replace(state, queued_message_count=state.queued_message_count + 1)
    publish = PublishToChannel.of(QUEUED_USER_MESSAGES, AgentUserMessage(text=text))
    return answer(queued, True, [publish])


def reduce_send_user_message_once(state: SessionState, called: SendUserMessageOnceCalled) -> RpcTransition:
    """``send_user_message_once``: ``true`` for a message already queued under its ID (nothing queued
    again); a reused ID with another text, a bad ID or un-encodable text is refused; else as
    ``send_user_message``, storing the receipt with the queued message."""
    message_id, text = called.input.message_id, called.input.text
    problem = message_id_problem(message_id) or lone_surrogate_problem(text, "text")
    if problem is not None:
        return refuse(state, problem)
    receipt = state.user_message_receipts.get(message_id)
    if receipt is not None:
        if not receipt.binds(text):
            return refuse(state, f"message id {message_id!r} was already sent with another text")
        return answer(state, True)
    if is_blank(text):
        return answer(state, False)
    receipt = UserMessageReceipt.of(message_id, text)
    queued = replace(
        state,
        queued_message_count=state.queued_message_count + 1,
        user_message_receipts=state.user_message_receipts.set(message_id, receipt),
    )
    publish = PublishToChannel.of(QUEUED_USER_MESSAGES, AgentUserMessage(text=text))
    return answer(queued, True, [publish, SetMapInstance.of(USER_MESSAGE_RECEIPTS, message_id, receipt)])


def _resolution_problem(request: ResolveInterruptInput) -> str | None:
    """Why ``resolve_interrupt``'s input is refused whatever the state: text that cannot be encoded,
    edited arguments with a rejection, or edited arguments that are not a JSON object's text."""
    problem = first_lone_surrogate_problem(((request.rejection_message, "rejection_message"),
                                            (request.approver, "approver"), (request.reason, "reason"),
                                            (request.edited_arguments, "edited_arguments")))
    if problem is not None:
        return problem
    if request.edited_arguments is None:
        return None
    if not request.approved:
        return "edited_arguments can only be given with an approval (approved is false)"
    return json_object_problem(request.edited_arguments, "edited_arguments")


def _live_interrupt(state: SessionState, interrupt_id: str, now_ms: int) -> tuple[AgentInterrupt, int | None] | None:
    """The pending interrupt ``interrupt_id`` and its deadline (``None``: it never expires), when its
    deadline is readable and not passed at ``now_ms``; else ``None``."""
    interrupt = state.pending_interrupt(interrupt_id)
    if interrupt is None:
        return None
    try:
        deadline = interrupt_deadline(interrupt)
    except ValueError:
        return None
    return None if is_late(now_ms, deadline) else (interrupt, deadline)


def reduce_resolve_interrupt(state: SessionState, called: ResolveInterruptCalled) -> RpcTransition:
    """``resolve_interrupt``: refuse an unusable input (``_resolution_problem``) or a stale
    ``arguments_sha256``; ``false`` unless pending and before a readable deadline; else resolve
    (``true``): the resolution carries the edit, the approver, the reason, the time and the deadline."""
    request = called.input
    problem = _resolution_problem(request)
    if problem is not None:
        return refuse(state, problem)
    live = _live_interrupt(state, request.interrupt_id, called.now_ms)
    if live is None:
        return answer(state, False)
    interrupt, _deadline = live
    if request.arguments_sha256 is not None and request.arguments_sha256 != text_sha256(interrupt.arguments):
        return refuse(state, stale_arguments_message(request.interrupt_id, request.arguments_sha256,
                                                     text_sha256(interrupt.arguments)))
    resolution = AgentInterruptResolution(
        interrupt_id=request.interrupt_id,
        approved=request.approved,
        rejection_message=None if request.approved else request.rejection_message,
        edited_arguments=request.edited_arguments,
        approver=request.approver,
        reason=request.reason,
        resolved_at=format_instant(called.now_ms),
        deadline=interrupt.deadline,
    )
    resolved = replace(state, pending_interrupts=state.without_interrupt(request.interrupt_id))
    return answer(
        resolved,
        True,
        [
            set_pending_interrupts(resolved),
            PublishToChannelInstance.of(INTERRUPT_RESOLUTIONS, request.interrupt_id, resolution),
        ],
    )


def stale_arguments_message(interrupt_id: str, given: str, actual: str) -> str:
    """The refusal of an approval whose ``arguments_sha256`` is not the pending call's."""
    return (f"arguments_sha256 {given!r} is not the hash of interrupt {interrupt_id!r}'s arguments ({actual!r}): "
            "the approver saw other arguments; read the pending interrupt again")


def reduce_extend_interrupt_deadline(state: SessionState, called: ExtendInterruptDeadlineCalled) -> RpcTransition:
    """``extend_interrupt_deadline``: refuse a ``deadline_ms`` below 1 or beyond a Dex Timer; ``false``
    unless the interrupt is pending, its deadline readable and not passed, and ``now_ms + deadline_ms``
    later than it (an interrupt without a deadline never expires: ``false``); else move the deadline
    (``true``). The waiting ``AwaitToolApproval``'s Timer fires at the old deadline, finds it not
    passed and waits again until the new one."""
    request = called.input
    if not 1 <= request.deadline_ms <= MAX_TIMER_MS:
        return refuse(state, f"deadline_ms must be within 1..{MAX_TIMER_MS}, got {request.deadline_ms}")
    live = _live_interrupt(state, request.interrupt_id, called.now_ms)
    new_deadline = called.now_ms + request.deadline_ms
    if live is None or live[1] is None or new_deadline <= live[1]:
        return answer(state, False)
    interrupt = live[0]
    moved = replace(interrupt, deadline=format_instant(new_deadline))
    extended = replace(state, pending_interrupts=pvector(
        moved if pending.interrupt_id == moved.interrupt_id else pending for pending in state.pending_interrupts))
    return answer(extended, True, [set_pending_interrupts(extended)])


def snapshot_of(state: SessionState) -> AgentSnapshot:
    """The ``get_agent_snapshot`` answer for ``state`` (``state`` is ``None`` before the session starts)."""
    return AgentSnapshot(
        state=state.agent_state,
        messages=pvector(sorted(state.messages, key=lambda message: message.sequence)),
        pending_interrupts=state.pending_interrupts,
        tool_calls=pvector(state.records_in_deferral_order()),
        usage=state.usage,
        queued_message_count=state.queued_message_count,
    )


def reduce_agent_snapshot_requested(state: SessionState, _requested: AgentSnapshotRequested) -> RpcTransition:
    """``get_agent_snapshot``: answer ``snapshot_of(state)``."""
    return answer(state, snapshot_of(state))


def reduce_agent_messages_listed(state: SessionState, listed: AgentMessagesListed) -> RpcTransition:
    """``list_agent_messages``: answer one page, oldest first (``limit`` clamped to 1..200, default 50)."""
    return answer(state, page_messages(state.messages, listed.input.before_sequence, listed.input.limit))


__all__ = [
    "reduce_agent_messages_listed",
    "reduce_agent_snapshot_requested",
    "reduce_extend_interrupt_deadline",
    "reduce_resolve_interrupt",
    "reduce_send_user_message",
    "reduce_send_user_message_once",
    "snapshot_of",
    "stale_arguments_message",
]
