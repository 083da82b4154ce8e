"""The demo support agent: a Pydantic AI agent with an order lookup and a refund, as a session Flow.

Public API:
    ``DEMO_TURNS: tuple[str, ...]``: the demo conversation's user messages, in order.
    ``build_support_flow(*, model: str | None = None, state_directory: Path,
    flow_type: str = "SupportAgent") -> AgentSessionFlow``: the agent's session Flow.
    ``support_flow() -> AgentSessionFlow``: the same from the environment, for
    ``dex-agents worker --agent dex_agents.demo.support_agent:support_flow``: ``DEX_AGENTS_DEMO_STATE_DIR``
    (default: the working directory) and ``DEX_AGENTS_DEMO_MODEL`` (default: the scripted model).
    ``check_model(model: str) -> None``: raises ``ValueError`` saying why the agent cannot use
    ``model`` (not ``provider:name``, a provider Pydantic AI does not know, a missing key).
        * ``model=None``: a scripted ``FunctionModel`` (no key) that makes the calls a real model
          makes for ``DEMO_TURNS``: "Where is order 42?" -> ``lookup_order(42)`` -> answer;
          "Please refund order 42" -> ``refund_order(42, 19.99)`` -> an answer reporting the tool
          return it reads (refunded, rejected, failed or outcome unknown); anything else -> a short text.
        * ``model="provider:name"``: that real model; raises ``MissingModelKeyError`` naming the
          environment variable when the provider's key is missing.
    Tools: ``lookup_order(order_id: int) -> str`` (effect ``read``) and
    ``refund_order(order_id: int, amount: float) -> str`` (effect ``non_idempotent_write``, approval
    required). Every real refund appends one line to ``refunds.log`` in ``state_directory``. With
    ``DEX_AGENTS_DEMO_CRASH_GATE=1`` in the environment the refund then waits at
    ``FileGate(state_directory, "refund")`` before it returns (performed, not yet reported).
    ``MissingModelKeyError``: a ``ValueError`` for a real model without its key.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from pydantic_ai import Agent, Tool, UserError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models import infer_model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
from dex_agents.pure.texts import FAILED_PREFIX, OUTCOME_UNKNOWN_PREFIX, REJECTED_PREFIX
from dex_agents.pure.values import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.serving.gate import FileGate

DEMO_TURNS: Final[tuple[str, ...]] = ("Where is order 42?", "Please refund order 42")
CRASH_GATE_ENV: Final = "DEX_AGENTS_DEMO_CRASH_GATE"
STATE_DIR_ENV: Final = "DEX_AGENTS_DEMO_STATE_DIR"
MODEL_ENV: Final = "DEX_AGENTS_DEMO_MODEL"
REFUNDS_LOG: Final = "refunds.log"
REFUND_GATE: Final = "refund"
REFUND_AMOUNT: Final = 19.99
INSTRUCTIONS: Final = (
    "You are a customer support agent for an online shop. Use lookup_order to answer questions about "
    "an order and refund_order to refund one (order 42 costs 19.99). Report tool results faithfully, "
    "including a rejected, failed or unknown refund."
)
PROVIDER_KEYS: Final = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GEMINI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}


class MissingModelKeyError(ValueError):
    """A real model was asked for without its provider's key in the environment."""


def _check_model_key(model: str) -> None:
    provider, separator, name = model.partition(":")
    if not separator or not provider or not name:
        raise ValueError(f"model must be 'provider:name', got {model!r}")
    variable = PROVIDER_KEYS.get(provider)
    if variable is None:
        return  # a provider we do not know the key of: Pydantic AI reports what it needs
    if not os.environ.get(variable):
        raise MissingModelKeyError(f"model {model!r} needs the environment variable {variable}, which is not set")


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    _check_model_key(model)
    try:
        infer_model(model)
    except (UserError, ImportError) as error:  # an unknown provider, or its package is not installed
        raise ValueError(str(error)) from error


def _last_request(messages: list[ModelMessage]) -> ModelRequest | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return message
    return None


def _refund_answer(result: str) -> str:
    if result.startswith(OUTCOME_UNKNOWN_PREFIX):
        return ("I cannot tell whether the refund of order 42 went through: the refund was interrupted. "
                "Please check the refunds before trying again.")
    if result.startswith(REJECTED_PREFIX):
        return f"I did not refund order 42: the refund was not approved ({result[len(REJECTED_PREFIX):]})."
    if result.startswith(FAILED_PREFIX):
        return f"The refund of order 42 failed: {result[len(FAILED_PREFIX):]}"
    return f"Done: {result}"


def _scripted_response(messages: list[ModelMessage]) -> ModelResponse:
    """What a real model answers at this point of the demo conversation."""
    request = _last_request(messages)
    if request is not None:
        returns = [part for part in request.parts if isinstance(part, ToolReturnPart)]
        if returns:
            part = returns[-1]
            content = part.content if isinstance(part.content, str) else str(part.content)
            if part.tool_name == "refund_order":
                return ModelResponse(parts=[TextPart(_refund_answer(content))])
            return ModelResponse(parts=[TextPart(f"Here is what I found: {content}")])
        prompts = [part.content for part in request.parts if isinstance(part, UserPromptPart)]
        text = prompts[-1] if prompts and isinstance(prompts[-1], str) else ""
        number = len(messages)
        if text == DEMO_TURNS[0]:
            return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": 42}, tool_call_id=f"lookup-{number}")])
        if text == DEMO_TURNS[1]:
            return ModelResponse(
                parts=[ToolCallPart("refund_order", {"order_id": 42, "amount": REFUND_AMOUNT},
                                    tool_call_id=f"refund-{number}")]
            )
    return ModelResponse(parts=[TextPart("Happy to help. Ask me about an order or a refund.")])


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return _scripted_response(messages)


async def _scripted_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    response = _scripted_response(messages)
    for index, part in enumerate(response.parts):
        if isinstance(part, TextPart):
            words = part.content.split(" ")
            for position, word in enumerate(words):
                yield word if position == 0 else " " + word
        elif isinstance(part, ToolCallPart):
            yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                        tool_call_id=part.tool_call_id)}


def _record_refund(state_directory: Path, entry: str) -> None:
    state_directory.mkdir(parents=True, exist_ok=True)
    line = (entry + "\n").encode("utf-8")
    descriptor = os.open(state_directory / REFUNDS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def build_support_agent(*, model: str | None = None, state_directory: Path) -> Agent[None, str]:
    """The demo's Pydantic AI agent (see the module docstring)."""
    gate = FileGate(state_directory, REFUND_GATE) if os.environ.get(CRASH_GATE_ENV) == "1" else None

    async def lookup_order(order_id: int) -> str:
        """Look up the status of an order by its number."""
        if order_id == 42:
            return "Order 42: shipped on 2026-11-28, arriving 2026-12-02; total 19.99."
        return f"Order {order_id}: not found."

    async def refund_order(order_id: int, amount: float) -> str:
        """Refund an amount of an order to the customer."""
        _record_refund(state_directory, f"order={order_id} amount={amount:.2f}")
        if gate is not None:  # the crash demo kills the Worker here: refunded, but not yet reported
            await gate.mark_reached_async()
        return f"Refunded {amount:.2f} for order {order_id}."

    tools = [
        Tool(lookup_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value}),
        Tool(refund_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.NON_IDEMPOTENT_WRITE.value}),
    ]
    if model is None:
        return Agent(FunctionModel(_scripted, stream_function=_scripted_stream), instructions=INSTRUCTIONS,
                     tools=tools)
    _check_model_key(model)
    return Agent(model, instructions=INSTRUCTIONS, tools=tools)


def build_support_flow(
    *, model: str | None = None, state_directory: Path, flow_type: str = "SupportAgent"
) -> AgentSessionFlow:
    """The demo support agent's session Flow (see the module docstring)."""
    return create_pydantic_ai_session_flow(build_support_agent(model=model, state_directory=state_directory), flow_type)


def support_flow() -> AgentSessionFlow:
    """The demo agent's Flow from the environment (see the module docstring), for ``dex-agents worker``."""
    state_directory = Path(os.environ.get(STATE_DIR_ENV) or ".")
    return build_support_flow(model=os.environ.get(MODEL_ENV) or None, state_directory=state_directory)


__all__ = ["DEMO_TURNS", "MissingModelKeyError", "build_support_agent", "build_support_flow", "check_model",
           "support_flow"]
