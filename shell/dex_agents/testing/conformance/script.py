"""The suite's conversation script: the last user message is a command, the model follows it.

One pure function answers every scenario, so a Worker child rebuilds the same model from nothing
but the adapter and the setup. The reply to a command depends on how many model calls of the turn
came before (assistant messages after the last user message): ``call(k)`` is the ``k``-th (0-based).

Tool call IDs are ``<command slug>-<k>-<i>``. After the last tool round the model answers
``RESULTS_PREFIX`` followed by the latest round's results joined with `` | ``, which proves it read
each result once, in its call's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from dex_agents.pure.machine.compaction import TRANSCRIPT_HEADER
from dex_agents.testing.conformance.model import ModelReply, ScriptedFailure, SeenCall, SeenMessage
from dex_agents.testing.conformance.tools import ASK_BILLING, LOOKUP_ORDER, NOTIFY_CUSTOMER, REFUND_ORDER, UPDATE_ADDRESS

HELLO: Final = "hello"
GREETING: Final = "Hello! How can I help with your order?"
REASONING: Final = "The user greets me; I answer politely."
ROUNDS: Final = {"one round": 1, "two rounds": 2, "three rounds": 3}
PARALLEL: Final = "parallel"
UNKNOWN_TOOL: Final = "unknown tool"
BAD_ARGUMENTS: Final = "bad arguments"
REFUND: Final = "refund"
UPDATE: Final = "update address"
NOTIFY: Final = "notify"
STRUCTURED: Final = "structured"
STATUS_OK: Final = "status-confirmed"
STATUS_EARLY: Final = "status-before-the-refund"
STATUS_REFUNDED: Final = "status-refund-done"
STRUCTURED_WITH_REFUND: Final = "structured with refund"
FAIL: Final = "fail"
FAIL_PERMANENTLY: Final = "fail permanently"
LOOP: Final = "loop"
ECHO_PREFIX: Final = "echo:"
MEASURE_PREFIX: Final = "measure:"
RESULTS_PREFIX: Final = "results: "
RETRYABLE_ERROR: Final = "scripted model failure: the model is unavailable"
PERMANENT_ERROR: Final = "scripted model failure: the request is invalid"
MISSING_TOOL: Final = "no_such_tool"
DELEGATE: Final = "delegate"
"""The parent asks the billing sub-agent (``ASK_BILLING``) to ``BILLING_TASK``, then answers its result."""
BILLING_TASK: Final = "check and refund order 17"
"""The child's task: a read (``lookup_order``) and an approved write (``refund_order``) in one round."""
CHAT_PREFIX: Final = "chat:"
"""``chat:<n>`` turns run on a model whose context window holds ``WINDOW_USER_MESSAGES`` user messages
(a compaction summary counts as one): a longer input fails as exceeding the context window."""
TALK_PREFIX: Final = "talk:"
"""``talk:<n>`` turns: a text answer, whatever the input's length."""
HUGE_PREFIX: Final = "huge:"
"""``huge:<n>``: the message alone exceeds the model's context window."""
WINDOW_USER_MESSAGES: Final = 3
CONTEXT_WINDOW_ERROR: Final = "scripted model failure: context_length_exceeded (the input exceeds the context window)"
SUMMARY_PREFIX: Final = "summary of "
"""A summarization call's answer: ``summary of <k> user messages``, ``k`` counting the previous summary's."""


def call_id(command: str, k: int, i: int) -> str:
    """The ID of the ``i``-th call of the ``k``-th model call of ``command``."""
    return f"{command.replace(' ', '_')}-{k}-{i}"


def measured(text: str) -> str:
    """The reply to ``measure:<text>``: its length and its last characters."""
    return f"received {len(text)} characters ending {text[-8:]!r}"


def _turn(seen: Sequence[SeenMessage]) -> tuple[str, list[SeenMessage]]:
    users = [index for index, message in enumerate(seen) if message.role == "user"]
    if not users:
        raise ValueError("the model input holds no user message")
    last = users[-1]
    return seen[last].text or "", list(seen[last + 1:])


def _results(after_user: Sequence[SeenMessage]) -> str:
    latest: list[str] = []
    for message in after_user:
        if message.role == "assistant":
            latest = []
        elif message.role == "tool":
            latest.append(message.text or "")
    return RESULTS_PREFIX + " | ".join(latest)


def _calls(command: str, k: int, *calls: tuple[str, object]) -> ModelReply:
    return ModelReply(tool_calls=tuple(SeenCall(call_id(command, k, i), name, arguments)
                                       for i, (name, arguments) in enumerate(calls)))


def summary_of(transcript: str) -> str:
    """The summary of a summarization call's transcript: how many user messages it covers in all (its own
    ``User:`` lines plus those of the previous summary it carries)."""
    previous = 0
    for line in transcript.splitlines():
        if line.startswith(SUMMARY_PREFIX):
            previous = int(line.split()[2])
    covered = previous + sum(1 for line in transcript.splitlines() if line.startswith("User: "))
    return f"{SUMMARY_PREFIX}{covered} user messages"


def _context_window(seen: Sequence[SeenMessage], command: str) -> ModelReply | None:
    users = sum(1 for message in seen if message.role == "user")
    if command.startswith(HUGE_PREFIX) or (command.startswith(CHAT_PREFIX) and users > WINDOW_USER_MESSAGES):
        return ModelReply(failure=ScriptedFailure(CONTEXT_WINDOW_ERROR, retryable=False, context_window=True))
    return None


def conversation(seen: Sequence[SeenMessage]) -> ModelReply:  # noqa: C901 - one branch per command
    """The model's reply to ``seen`` (see the module docstring)."""
    command, after = _turn(seen)
    if command.startswith(TRANSCRIPT_HEADER):
        return ModelReply(text=summary_of(command), input_tokens=40, output_tokens=8)
    refused = _context_window(seen, command)
    if refused is not None:
        return refused
    if command.startswith((CHAT_PREFIX, TALK_PREFIX)):
        return ModelReply(text=f"ok {command.split(':', 1)[1]}")
    k = sum(1 for message in after if message.role == "assistant")
    done = ModelReply(text=_results(after))
    if command == HELLO:
        return ModelReply(text=GREETING, reasoning=REASONING, input_tokens=12, output_tokens=7)
    if command.startswith(ECHO_PREFIX):
        return ModelReply(text=command[len(ECHO_PREFIX):])
    if command.startswith(MEASURE_PREFIX):
        return ModelReply(text=measured(command[len(MEASURE_PREFIX):]))
    if command in ROUNDS:
        return _calls(command, k, (LOOKUP_ORDER, {"order_id": k + 1})) if k < ROUNDS[command] else done
    if command == PARALLEL:
        return done if k else _calls(command, k, (LOOKUP_ORDER, {"order_id": 1}), (LOOKUP_ORDER, {"order_id": 2}),
                                     (UPDATE_ADDRESS, {"order_id": 3, "address": "1 Main St"}))
    if command == UNKNOWN_TOOL:
        return done if k else _calls(command, k, (MISSING_TOOL, {}))
    if command == BAD_ARGUMENTS:
        return done if k else _calls(command, k, (LOOKUP_ORDER, {"order_id": "not a number"}))
    if command == REFUND:
        return done if k else _calls(command, k, (REFUND_ORDER, {"order_id": 42, "amount": 1999}))
    if command == DELEGATE:
        return done if k else _calls(command, k, (ASK_BILLING, {"task": BILLING_TASK}))
    if command == BILLING_TASK:
        return done if k else _calls(command, k, (LOOKUP_ORDER, {"order_id": 17}),
                                     (REFUND_ORDER, {"order_id": 17, "amount": 1999}))
    if command == UPDATE:
        return done if k else _calls(command, k, (UPDATE_ADDRESS, {"order_id": 7, "address": "2 Side St"}))
    if command == NOTIFY:
        return done if k else _calls(command, k, (NOTIFY_CUSTOMER, {"order_id": 7, "message": "on its way"}))
    if command == STRUCTURED:
        return ModelReply(output={"status": STATUS_OK})
    if command == STRUCTURED_WITH_REFUND:
        if k:
            return ModelReply(output={"status": STATUS_REFUNDED})
        reply = _calls(command, k, (REFUND_ORDER, {"order_id": 42, "amount": 500}))
        return ModelReply(tool_calls=reply.tool_calls, output={"status": STATUS_EARLY})
    if command == FAIL:
        return ModelReply(failure=ScriptedFailure(RETRYABLE_ERROR))
    if command == FAIL_PERMANENTLY:
        return ModelReply(failure=ScriptedFailure(PERMANENT_ERROR, retryable=False))
    if command == LOOP:
        return _calls(command, k, (LOOKUP_ORDER, {"order_id": k + 1}))
    return ModelReply(text=f"unknown command {command!r}")


__all__ = [name for name in dir() if name.isupper()] + ["call_id", "conversation", "measured", "summary_of"]
