"""The demo support agent's script, the same on every framework (and needing none).

``support_agent`` (Pydantic AI), ``openai_agents_agent`` and ``langchain_agent`` build the same agent
from this module: the same turns, instructions, tools, refund log and crash gate, and a keyless
scripted model that decides the same way. Each of them only translates: its framework's messages in
(to ``scripted_reply``'s last user text or last tool result), its framework's reply out, and the two
tool functions wrapped as its framework's tools.

Public API:
    ``DEMO_TURNS``, ``INSTRUCTIONS``, ``REFUND_AMOUNT``, ``REFUNDS_LOG``, ``REFUND_GATE``, and the
    environment variables ``CRASH_GATE_ENV``, ``STATE_DIR_ENV``, ``MODEL_ENV``, ``OPENAI_KEY``.
    ``scripted_reply(*, tool_result, user_text, position) -> ScriptedText | ScriptedCall``: what the
    scripted model answers next. To the last tool result ``(tool name, content)`` when the last
    message is one: the refund answer (``refund_answer``: refunded, rejected, failed or outcome
    unknown) for ``refund_order``, the lookup answer for any other tool. Else to the last user text:
    ``DEMO_TURNS[0]`` -> ``lookup_order(42)``, ``DEMO_TURNS[1]`` -> ``refund_order(42, 19.99)``
    (call IDs ``lookup-<position>``/``refund-<position>``, ``position`` the number of messages so
    far); anything else -> ``FALLBACK_ANSWER``.
    ``word_chunks(text) -> list[str]``: ``text`` as the scripted models stream it, word by word.
    ``support_tools(state_directory) -> SupportTools``: the coroutines ``lookup_order(order_id: int)
    -> str`` and ``refund_order(order_id: int, amount: float) -> str``. Every refund appends one line
    (``record_refund``: ``order=<id> amount=<amount> key=<the call's idempotency key>``, the key from
    ``dex_agents.current_tool_call()``) to ``REFUNDS_LOG`` in ``state_directory``, the demo's refund
    ledger; with ``CRASH_GATE_ENV=1`` in the environment when the tools are built, it then waits at
    ``FileGate(state_directory, REFUND_GATE)`` before it returns (performed, not yet reported).
    ``support_policies(state_directory)``: the Flow's ``tool_policies``: ``refund_order`` a
    ``non_idempotent_write`` whose ``reconcile`` (``reconcile_refund``) looks the refund up in the
    ledger by its idempotency key, so a crash inside the refund is settled (``succeeded`` with the
    ledger's refund, ``failed`` when the ledger has none) instead of left ``outcome_unknown``.
    ``provider_and_name(model)``, ``require_key(model, variable)``, ``openai_model_name(model, demo)``:
    the model checks (``ValueError``; ``MissingModelKeyError`` for a missing key).
    ``flow_from_environment(build) -> AgentSessionFlow``: ``build(model=..., state_directory=...)``
    with ``MODEL_ENV`` (default: the scripted model) and ``STATE_DIR_ENV`` (default: the working
    directory), for ``dex-agents worker --agent dex_agents.demo.<module>:support_flow``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple, Protocol

from dex_agents.pure.machine.texts import FAILED_PREFIX, OUTCOME_UNKNOWN_PREFIX, REJECTED_PREFIX
from dex_agents.pure.values.runner import Reconcile, ReconciledOutcome, ToolPolicy
from dex_agents.pure.values.session import ToolEffect
from dex_agents.serving.gate import FileGate
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.tool_context import current_tool_call

DEMO_TURNS: Final[tuple[str, ...]] = ("Where is order 42?", "Please refund order 42")
CRASH_GATE_ENV: Final = "DEX_AGENTS_DEMO_CRASH_GATE"
STATE_DIR_ENV: Final = "DEX_AGENTS_DEMO_STATE_DIR"
MODEL_ENV: Final = "DEX_AGENTS_DEMO_MODEL"
OPENAI_KEY: Final = "OPENAI_API_KEY"
REFUNDS_LOG: Final = "refunds.log"
REFUND_GATE: Final = "refund"
ORDER_ID: Final = 42
REFUND_AMOUNT: Final = 19.99
INSTRUCTIONS: Final = (
    "You are a customer support agent for an online shop. Use lookup_order to answer questions about "
    "an order and refund_order to refund one (order 42 costs 19.99). Report tool results faithfully, "
    "including a rejected, failed or unknown refund."
)
FALLBACK_ANSWER: Final = "Happy to help. Ask me about an order or a refund."


class MissingModelKeyError(ValueError):
    """A real model was asked for without its provider's key in the environment."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedText:
    """The scripted model answers with text."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedCall:
    """The scripted model calls one tool."""

    tool_name: str
    arguments: Mapping[str, object]
    call_id: str


def refund_answer(result: str) -> str:
    """The scripted model's answer to the refund tool's ``result`` (after the ``[Dex]`` notes, if any:
    a result an operator or the reconcile check settled says so first)."""
    notes, _, outcome = result.rpartition("\n") if result.startswith("[Dex] ") else ("", "", result)
    if "settled it as succeeded" in notes:
        return (f"Done: {outcome} The refund was interrupted by a crash; the refund ledger shows it went "
                "through, so I did not refund again.")
    result = outcome
    if result.startswith(OUTCOME_UNKNOWN_PREFIX):
        return ("I cannot tell whether the refund of order 42 went through: the refund was interrupted. "
                "Please check the refunds before trying again.")
    if result.startswith(REJECTED_PREFIX):
        return f"I did not refund order 42: the refund was not approved ({result[len(REJECTED_PREFIX):]})."
    if result.startswith(FAILED_PREFIX):
        return f"The refund of order 42 failed: {result[len(FAILED_PREFIX):]}"
    return f"Done: {result}"


def lookup_answer(result: str) -> str:
    """The scripted model's answer to any other tool's ``result``."""
    return f"Here is what I found: {result}"


def scripted_reply(*, tool_result: tuple[str, str] | None, user_text: str | None,
                   position: int) -> ScriptedText | ScriptedCall:
    """What the scripted model answers next (see the module docstring).

    >>> scripted_reply(tool_result=None, user_text=DEMO_TURNS[0], position=1)
    ScriptedCall(tool_name='lookup_order', arguments={'order_id': 42}, call_id='lookup-1')
    """
    if tool_result is not None:
        tool_name, content = tool_result
        return ScriptedText(text=refund_answer(content) if tool_name == "refund_order" else lookup_answer(content))
    if user_text == DEMO_TURNS[0]:
        return ScriptedCall(tool_name="lookup_order", arguments={"order_id": ORDER_ID}, call_id=f"lookup-{position}")
    if user_text == DEMO_TURNS[1]:
        return ScriptedCall(tool_name="refund_order", arguments={"order_id": ORDER_ID, "amount": REFUND_AMOUNT},
                            call_id=f"refund-{position}")
    return ScriptedText(text=FALLBACK_ANSWER)


def word_chunks(text: str) -> list[str]:
    """``text`` in the chunks a scripted model streams: each word with the space before it."""
    return [word if position == 0 else " " + word for position, word in enumerate(text.split(" ") if text else [])]


def record_refund(state_directory: Path, entry: str) -> None:
    """Append ``entry`` as one line to ``REFUNDS_LOG`` in ``state_directory`` (one write, appended)."""
    state_directory.mkdir(parents=True, exist_ok=True)
    line = (entry + "\n").encode("utf-8")
    descriptor = os.open(state_directory / REFUNDS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


class SupportTools(NamedTuple):
    """The demo's two tool functions, for a framework to wrap (names, docstrings and signatures are its tools')."""

    lookup_order: Callable[[int], Awaitable[str]]
    refund_order: Callable[[int, float], Awaitable[str]]


def support_tools(state_directory: Path) -> SupportTools:
    """The demo's tools over ``state_directory`` (see the module docstring)."""
    gate = FileGate(state_directory, REFUND_GATE) if os.environ.get(CRASH_GATE_ENV) == "1" else None

    async def lookup_order(order_id: int) -> str:
        """Look up the status of an order by its number."""
        if order_id == ORDER_ID:
            return "Order 42: shipped on 2026-11-28, arriving 2026-12-02; total 19.99."
        return f"Order {order_id}: not found."

    async def refund_order(order_id: int, amount: float) -> str:
        """Refund an amount of an order to the customer."""
        call = current_tool_call()
        record_refund(state_directory, f"order={order_id} amount={amount:.2f} key={call.idempotency_key if call else '-'}")
        if gate is not None:  # the crash demo kills the Worker here: refunded, but not yet reported
            await gate.mark_reached_async()
        return f"Refunded {amount:.2f} for order {order_id}."

    return SupportTools(lookup_order=lookup_order, refund_order=refund_order)


def reconcile_refund(state_directory: Path) -> Reconcile:
    """The refund's ``reconcile``: the ledger's line of the call's idempotency key (``succeeded`` with
    the refund it records; ``failed`` when there is none: the refund was not performed)."""

    def reconcile(tool_name: str, arguments: str, idempotency_key: str, error: str) -> ReconciledOutcome:
        log = state_directory / REFUNDS_LOG
        for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
            fields = dict(field.partition("=")[::2] for field in line.split(" "))
            if fields.get("key") == idempotency_key:
                return ReconciledOutcome.succeeded(f"Refunded {fields.get('amount')} for order {fields.get('order')}.")
        return ReconciledOutcome.failed(f"the refund ledger has no refund of this call ({idempotency_key}): "
                                        "it was not performed")

    return reconcile


def support_policies(state_directory: Path) -> dict[str, ToolPolicy]:
    """The demo Flow's ``tool_policies`` (see the module docstring)."""
    return {"refund_order": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE,
                                       reconcile=reconcile_refund(state_directory))}


def provider_and_name(model: str) -> tuple[str, str]:
    """``model``'s provider and name, or a ``ValueError`` unless it is ``provider:name``."""
    provider, separator, name = model.partition(":")
    if not separator or not provider or not name:
        raise ValueError(f"model must be 'provider:name', got {model!r}")
    return provider, name


def require_key(model: str, variable: str) -> None:
    """A ``MissingModelKeyError`` unless the environment variable ``variable`` (``model``'s key) is set."""
    if not os.environ.get(variable):
        raise MissingModelKeyError(f"model {model!r} needs the environment variable {variable}, which is not set")


def openai_model_name(model: str, demo: str) -> str:
    """The name in ``"openai:<name>"``; a ``ValueError`` for any other model (naming ``demo``) or a missing key."""
    provider, name = provider_and_name(model)
    if provider != "openai":
        raise ValueError(f"the {demo} demo runs only OpenAI models ('openai:<name>'), got {model!r}")
    require_key(model, OPENAI_KEY)
    return name


class FlowBuilder(Protocol):
    """A demo module's ``build_support_flow``."""

    def __call__(self, *, model: str | None = None, state_directory: Path) -> AgentSessionFlow: ...


def flow_from_environment(build: FlowBuilder) -> AgentSessionFlow:
    """``build``'s Flow with the model and state directory the environment names (see the module docstring)."""
    state_directory = Path(os.environ.get(STATE_DIR_ENV) or ".")
    return build(model=os.environ.get(MODEL_ENV) or None, state_directory=state_directory)


__all__ = [
    "CRASH_GATE_ENV",
    "DEMO_TURNS",
    "FALLBACK_ANSWER",
    "INSTRUCTIONS",
    "MODEL_ENV",
    "OPENAI_KEY",
    "ORDER_ID",
    "REFUNDS_LOG",
    "REFUND_AMOUNT",
    "REFUND_GATE",
    "STATE_DIR_ENV",
    "FlowBuilder",
    "MissingModelKeyError",
    "ScriptedCall",
    "ScriptedText",
    "SupportTools",
    "flow_from_environment",
    "lookup_answer",
    "openai_model_name",
    "provider_and_name",
    "reconcile_refund",
    "record_refund",
    "refund_answer",
    "require_key",
    "scripted_reply",
    "support_policies",
    "support_tools",
    "word_chunks",
]
