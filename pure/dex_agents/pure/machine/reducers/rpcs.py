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
from dex_agents.pure.machine.deadlines import is_late
from dex_agents.pure.machine.keys import message_id_problem
from dex_agents.pure.values.persistence import INTERRUPT_RESOLUTIONS, QUEUED_USER_MESSAGES, USER_MESSAGE_RECEIPTS
from dex_agents.pure.machine.reducers.common import interrupt_deadline, set_pending_interrupts
from dex_agents.pure.machine.reducers.session import is_blank
from dex_agents.pure.values.rpc import AgentSnapshot
from dex_agents.pure.machine.state import SessionState
from dex_agents.pure.machine.step_inputs import (
    AgentMessagesListed,
    AgentSnapshotRequested,
    ResolveInterruptCalled,
    SendUserMessageCalled,
    SendUserMessageOnceCalled,
)
from dex_agents.pure.machine.transition import RpcTransition, answer, refuse
from dex_agents.pure.machine.validation import lone_surrogate_problem
from dex_agents.pure.values.session import AgentInterruptResolution, AgentUserMessage, UserMessageReceipt


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


def reduce_resolve_interrupt(state: SessionState, called: ResolveInterruptCalled) -> RpcTransition:
    """``resolve_interrupt``: refuse an un-encodable ``rejection_message``; ``false`` unless pending and
    before a readable deadline; else resolve (``true``)."""
    request = called.input
    message = request.rejection_message
    problem = None if message is None else lone_surrogate_problem(message, "rejection_message")
    if problem is not None:
        return refuse(state, problem)
    interrupt = state.pending_interrupt(request.interrupt_id)
    if interrupt is None:
        return answer(state, False)
    try:
        deadline = interrupt_deadline(interrupt)
    except ValueError:
        return answer(state, False)
    if is_late(called.now_ms, deadline):
        return answer(state, False)
    resolution = AgentInterruptResolution(
        interrupt_id=request.interrupt_id,
        approved=request.approved,
        rejection_message=None if request.approved else request.rejection_message,
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
    "reduce_resolve_interrupt",
    "reduce_send_user_message",
    "reduce_send_user_message_once",
    "snapshot_of",
]
