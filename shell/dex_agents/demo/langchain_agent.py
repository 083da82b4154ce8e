"""The demo support agent on LangChain: a chat model with an order lookup and a refund, as a session Flow.

The same agent as ``dex_agents.demo.support_agent`` (same turns, tools, effects, refund log and crash
gate), built with the LangChain adapter; it needs only ``langchain-core`` (and ``langchain-openai``
for a real model), not Pydantic AI.

Public API:
    ``DEMO_TURNS: tuple[str, ...]``: the demo conversation's user messages, in order.
    ``build_support_flow(*, model: str | None = None, state_directory: Path,
    flow_type: str = "SupportAgent") -> AgentSessionFlow``: the agent's session Flow.
        * ``model=None``: ``ScriptedSupportChatModel`` (no key), a chat model that streams the calls
          a real model makes for ``DEMO_TURNS``: "Where is order 42?" -> ``lookup_order(42)`` ->
          answer; "Please refund order 42" -> ``refund_order(42, 19.99)`` -> an answer reporting the
          tool result it reads (refunded, rejected, failed or outcome unknown); anything else -> a
          short text.
        * ``model="openai:<name>"``: LangChain's ``ChatOpenAI`` (``langchain-openai`` must be
          installed); raises ``MissingModelKeyError`` when ``OPENAI_API_KEY`` is not set, and
          ``ValueError`` for another provider.
    ``build_support_tools(state_directory) -> list[BaseTool]``: ``lookup_order(order_id: int) -> str``
    (effect ``read``) and ``refund_order(order_id: int, amount: float) -> str`` (effect
    ``non_idempotent_write``, approval required). Every real refund appends one line to
    ``refunds.log`` in ``state_directory``. With ``DEX_AGENTS_DEMO_CRASH_GATE=1`` in the environment
    the refund then waits at ``FileGate(state_directory, "refund")`` before it returns.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    UsageMetadata,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from dex_agents.adapters.langchain import DEX_EFFECT_METADATA_KEY, create_langchain_session_flow
from dex_agents.pure.texts import FAILED_PREFIX, OUTCOME_UNKNOWN_PREFIX, REJECTED_PREFIX
from dex_agents.pure.values import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.serving.gate import FileGate

# The same values as dex_agents.demo.support_agent (not imported: that module needs Pydantic AI).
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
OPENAI_KEY: Final = "OPENAI_API_KEY"


class MissingModelKeyError(ValueError):
    """A real model was asked for without its provider's key in the environment."""


def _refund_answer(result: str) -> str:
    if result.startswith(OUTCOME_UNKNOWN_PREFIX):
        return ("I cannot tell whether the refund of order 42 went through: the refund was interrupted. "
                "Please check the refunds before trying again.")
    if result.startswith(REJECTED_PREFIX):
        return f"I did not refund order 42: the refund was not approved ({result[len(REJECTED_PREFIX):]})."
    if result.startswith(FAILED_PREFIX):
        return f"The refund of order 42 failed: {result[len(FAILED_PREFIX):]}"
    return f"Done: {result}"


def scripted_response(messages: Sequence[BaseMessage]) -> AIMessage:
    """What a real model answers at this point of the demo conversation."""
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        content = last.content if isinstance(last.content, str) else str(last.content)
        if last.name == "refund_order":
            return AIMessage(content=_refund_answer(content))
        return AIMessage(content=f"Here is what I found: {content}")
    if isinstance(last, HumanMessage):
        number = len(messages)
        if last.text == DEMO_TURNS[0]:
            return AIMessage(content="", tool_calls=[ToolCall(name="lookup_order", args={"order_id": 42},
                                                              id=f"lookup-{number}", type="tool_call")])
        if last.text == DEMO_TURNS[1]:
            return AIMessage(content="", tool_calls=[ToolCall(name="refund_order",
                                                              args={"order_id": 42, "amount": REFUND_AMOUNT},
                                                              id=f"refund-{number}", type="tool_call")])
    return AIMessage(content="Happy to help. Ask me about an order or a refund.")


def _usage(messages: Sequence[BaseMessage], response: AIMessage) -> UsageMetadata:
    """A word-count estimate (the scripted model has no tokenizer)."""
    input_tokens = sum(len(message.text.split()) for message in messages) + 1
    output_tokens = len(response.text.split()) + 5 * len(response.tool_calls)
    return UsageMetadata(input_tokens=input_tokens, output_tokens=output_tokens,
                         total_tokens=input_tokens + output_tokens)


class ScriptedSupportChatModel(BaseChatModel):
    """A keyless chat model that answers with ``scripted_response`` and streams it word by word.

    LangChain's own fake chat models have no ``bind_tools``; this one binds tools as real models do
    (it ignores them: the script knows the demo's two tools).
    """

    @property
    def _llm_type(self) -> str:
        return "dex-agents-demo-scripted"

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        response = scripted_response(messages)
        response.usage_metadata = _usage(messages, response)
        return ChatResult(generations=[ChatGeneration(message=response)])

    def _chunks(self, messages: list[BaseMessage]) -> Iterator[AIMessageChunk]:
        response = scripted_response(messages)
        for position, word in enumerate(response.text.split(" ") if response.text else []):
            yield AIMessageChunk(content=word if position == 0 else " " + word)
        for index, call in enumerate(response.tool_calls):
            yield AIMessageChunk(content="", tool_call_chunks=[ToolCallChunk(
                name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index,
                type="tool_call_chunk")])
        yield AIMessageChunk(content="", usage_metadata=_usage(messages, response), chunk_position="last")

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
            yield ChatGenerationChunk(message=chunk)


def _record_refund(state_directory: Path, entry: str) -> None:
    state_directory.mkdir(parents=True, exist_ok=True)
    line = (entry + "\n").encode("utf-8")
    descriptor = os.open(state_directory / REFUNDS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def build_support_tools(state_directory: Path) -> list[BaseTool]:
    """The demo's two tools (see the module docstring)."""
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

    return [
        StructuredTool.from_function(coroutine=lookup_order,
                                     metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value}),
        StructuredTool.from_function(coroutine=refund_order,
                                     metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.NON_IDEMPOTENT_WRITE.value}),
    ]


def _openai_model_name(model: str) -> str:
    """The name in ``"openai:<name>"``; ``ValueError`` (with the reason) for any other model or a missing key."""
    provider, separator, name = model.partition(":")
    if not separator or not provider or not name:
        raise ValueError(f"model must be 'provider:name', got {model!r}")
    if provider != "openai":
        raise ValueError(f"the LangChain demo runs only OpenAI models ('openai:<name>'), got {model!r}")
    if not os.environ.get(OPENAI_KEY):
        raise MissingModelKeyError(f"model {model!r} needs the environment variable {OPENAI_KEY}, which is not set")
    return name


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    _openai_model_name(model)


def build_chat_model(model: str | None) -> BaseChatModel:
    """The scripted model (``None``) or ``ChatOpenAI`` for ``"openai:<name>"``."""
    if model is None:
        return ScriptedSupportChatModel()
    name = _openai_model_name(model)
    try:
        chat_openai: Any = importlib.import_module("langchain_openai").ChatOpenAI
    except ImportError as error:
        raise ImportError(f"model {model!r} needs langchain-openai: pip install langchain-openai") from error
    chat_model: BaseChatModel = chat_openai(model=name)
    return chat_model


def build_support_flow(
    *, model: str | None = None, state_directory: Path, flow_type: str = "SupportAgent"
) -> AgentSessionFlow:
    """The demo support agent's session Flow on LangChain (see the module docstring)."""
    return create_langchain_session_flow(build_chat_model(model), build_support_tools(state_directory), flow_type,
                                         system_prompt=INSTRUCTIONS)


def support_flow() -> AgentSessionFlow:
    """The demo agent's Flow from the environment (``DEX_AGENTS_DEMO_STATE_DIR``, ``DEX_AGENTS_DEMO_MODEL``),
    for ``dex-agents worker --agent dex_agents.demo.langchain_agent:support_flow``."""
    state_directory = Path(os.environ.get(STATE_DIR_ENV) or ".")
    return build_support_flow(model=os.environ.get(MODEL_ENV) or None, state_directory=state_directory)


__all__ = [
    "DEMO_TURNS",
    "MissingModelKeyError",
    "ScriptedSupportChatModel",
    "build_chat_model",
    "build_support_flow",
    "build_support_tools",
    "check_model",
    "support_flow",
]
