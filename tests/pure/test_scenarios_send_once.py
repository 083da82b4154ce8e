"""``send_user_message_once`` (ours): a message ID already queued answers ``true`` and queues nothing;
a reused ID with another text, a bad ID and un-encodable text are refused; blank text keeps no
receipt."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyrsistent import pmap

from dex_agents.pure.machine.effects import PublishToChannel, SetMapInstance
from dex_agents.pure.machine.endings import AnswerRpc, RefuseRpc
from dex_agents.pure.machine.flow_shape import rpc_instance_key, rpc_of
from dex_agents.pure.machine.keys import MAX_MESSAGE_ID_LENGTH, message_id_problem
from dex_agents.pure.machine.rpc_calls import SendUserMessageCalled, SendUserMessageOnceCalled
from dex_agents.pure.values.persistence import QUEUED_USER_MESSAGES, USER_MESSAGE_RECEIPTS, RpcName
from dex_agents.pure.offline.replay import replay
from dex_agents.pure.values.rpc import SendUserMessageInput, SendUserMessageOnceInput
from dex_agents.pure.machine.transition import RpcTransition
from dex_agents.pure.values.session import AgentUserMessage, UserMessageReceipt
from dex_agents.pure.wire import decode_as, encode_as, record_type
from tests.pure.scenario_support import Session, answer_of, failure_of


def send_once(session: Session, message_id: str, text: str) -> RpcTransition:
    return session.feed_rpc(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id=message_id, text=text)))


def test_the_first_send_queues_the_message_and_keeps_its_receipt() -> None:
    session = Session()
    session.start(None)
    t = session.feed_rpc(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m-1", text="hi")))
    receipt = UserMessageReceipt.of("m-1", "hi")
    assert list(t.effects) == [
        PublishToChannel(channel=QUEUED_USER_MESSAGES, value=AgentUserMessage(text="hi")),
        SetMapInstance(map=USER_MESSAGE_RECEIPTS, key="m-1", value=receipt),
    ]
    assert t.ending == AnswerRpc(output=True)
    assert t.state.queued_message_count == 1 and t.state.user_message_receipts == pmap({"m-1": receipt})


def test_a_resend_answers_as_the_first_and_queues_nothing() -> None:
    session = Session()
    session.start(None)
    send_once(session, "m-1", "hi")
    before = session.state
    t = session.feed_rpc(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m-1", text="hi")))
    assert answer_of(t) is True and list(t.effects) == [] and t.state == before


def test_a_reused_id_with_another_text_is_refused() -> None:
    session = Session()
    session.start(None)
    send_once(session, "m-1", "hi")
    t = session.feed_rpc(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m-1", text="bye")))
    assert isinstance(t.ending, RefuseRpc)
    assert failure_of(t) == "message id 'm-1' was already sent with another text"


def test_blank_text_answers_false_and_keeps_no_receipt() -> None:
    session = Session()
    session.start(None)
    t = session.feed_rpc(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m-1", text=" ")))
    assert answer_of(t) is False and list(t.effects) == [] and not t.state.user_message_receipts


@pytest.mark.parametrize(
    ("message_id", "text", "problem"),
    [
        ("", "hi", "message_id must not be blank"),
        ("a/b", "hi", "message_id must not contain '/'"),
        ("x" * (MAX_MESSAGE_ID_LENGTH + 1), "hi", f"at most {MAX_MESSAGE_ID_LENGTH} characters"),
        ("m-\ud800", "hi", "lone surrogate"),
        ("m-1", "ok \ud800", "text contains a lone surrogate U+D800"),
    ],
)
def test_bad_ids_and_unencodable_text_are_refused(message_id: str, text: str, problem: str) -> None:
    session = Session()
    session.start(None)
    t = session.feed_rpc(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id=message_id, text=text)))
    assert isinstance(t.ending, RefuseRpc) and problem in t.ending.error
    assert t.state == session.state


def test_the_rpc_loads_its_messages_receipt() -> None:
    call = SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m-7", text="hi"))
    assert rpc_of(call) is RpcName.SEND_USER_MESSAGE_ONCE and rpc_instance_key(call) == "m-7"
    assert rpc_instance_key(SendUserMessageCalled(input=SendUserMessageInput(text="hi"))) is None
    assert message_id_problem("fine-id") is None


def test_replay_keeps_the_receipts_so_a_replayed_resend_queues_nothing() -> None:
    calls = [SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m", text="hi"))] * 2
    assert replay(calls).queued_message_count == 1


def test_a_receipt_keeps_the_texts_digest_not_the_text() -> None:
    """A 1 MB message must not be stored twice (once queued, once in its receipt)."""
    session = Session()
    session.start(None)
    text = "x" * 1_000_000
    t = send_once(session, "m-big", text)
    receipts = [effect.value for effect in t.effects
                if isinstance(effect, SetMapInstance) and isinstance(effect.value, UserMessageReceipt)]
    assert len(receipts) == 1
    assert len(encode_as(receipts[0], record_type(UserMessageReceipt))) < 200
    again = send_once(session, "m-big", text)
    assert answer_of(again) is True and list(again.effects) == []
    other = send_once(session, "m-big", text + "y")
    assert failure_of(other) == "message id 'm-big' was already sent with another text"


def test_a_receipt_written_with_its_text_by_an_earlier_version_still_binds_the_id() -> None:
    legacy = decode_as('{"message_id":"m-1","text":"hi"}', record_type(UserMessageReceipt)).unwrap()
    session = Session()
    session.start(None)
    session.state = replace(session.state, user_message_receipts=pmap({"m-1": legacy}))
    assert answer_of(send_once(session, "m-1", "hi")) is True
    assert failure_of(send_once(session, "m-1", "bye")) == "message id 'm-1' was already sent with another text"
