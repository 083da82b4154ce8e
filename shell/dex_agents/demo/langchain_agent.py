"""The demo support agent on LangChain: a chat model with an order lookup and a refund, as a session Flow.

The same agent as ``dex_agents.demo.support_agent`` (same turns, tools, effects, refund log, crash
gate and scripted answers: ``dex_agents.demo.support_script``'s), built with the LangChain adapter;
it needs only ``langchain-core`` (and ``langchain-openai`` for a real model), not Pydantic AI.

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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

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
from dex_agents.demo.support_script import (
    CRASH_GATE_ENV,
    DEMO_TURNS,
    INSTRUCTIONS,
    MODEL_ENV,
    REFUND_AMOUNT,
    REFUND_GATE,
    REFUNDS_LOG,
    STATE_DIR_ENV,
    MissingModelKeyError,
    ScriptedText,
    flow_from_environment,
    openai_model_name,
    scripted_reply,
    support_tools,
    word_chunks,
    support_policies,
)
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.flow import AgentSessionFlow


def scripted_response(messages: Sequence[BaseMessage]) -> AIMessage:
    """What a real model answers at this point of the demo conversation (``scripted_reply`` in LangChain's terms)."""
    last = messages[-1] if messages else None
    tool_result: tuple[str, str] | None = None
    user_text: str | None = None
    if isinstance(last, ToolMessage):
        tool_result = (last.name or "", last.content if isinstance(last.content, str) else str(last.content))
    elif isinstance(last, HumanMessage):
        user_text = last.text
    reply = scripted_reply(tool_result=tool_result, user_text=user_text, position=len(messages))
    if isinstance(reply, ScriptedText):
        return AIMessage(content=reply.text)
    return AIMessage(content="", tool_calls=[ToolCall(name=reply.tool_name, args=dict(reply.arguments),
                                                      id=reply.call_id, type="tool_call")])


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
        for chunk in word_chunks(response.text):
            yield AIMessageChunk(content=chunk)
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


def build_support_tools(state_directory: Path) -> list[BaseTool]:
    """The demo's two tools (see the module docstring)."""
    functions = support_tools(state_directory)
    return [
        StructuredTool.from_function(coroutine=functions.lookup_order,
                                     metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value}),
        StructuredTool.from_function(coroutine=functions.refund_order,
                                     metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.NON_IDEMPOTENT_WRITE.value}),
    ]


def check_model(model: str) -> None:
    """Raise ``ValueError`` (with the reason) unless the agent can be built on ``model``; no request is made."""
    openai_model_name(model, "LangChain")


def build_chat_model(model: str | None) -> BaseChatModel:
    """The scripted model (``None``) or ``ChatOpenAI`` for ``"openai:<name>"``."""
    if model is None:
        return ScriptedSupportChatModel()
    name = openai_model_name(model, "LangChain")
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
                                         system_prompt=INSTRUCTIONS, tool_policies=support_policies(state_directory))


def support_flow() -> AgentSessionFlow:
    """The demo agent's Flow from the environment (``DEX_AGENTS_DEMO_STATE_DIR``, ``DEX_AGENTS_DEMO_MODEL``),
    for ``dex-agents worker --agent dex_agents.demo.langchain_agent:support_flow``."""
    return flow_from_environment(build_support_flow)


__all__ = [
    "CRASH_GATE_ENV",
    "DEMO_TURNS",
    "INSTRUCTIONS",
    "MODEL_ENV",
    "REFUNDS_LOG",
    "REFUND_AMOUNT",
    "REFUND_GATE",
    "STATE_DIR_ENV",
    "MissingModelKeyError",
    "ScriptedSupportChatModel",
    "build_chat_model",
    "build_support_flow",
    "build_support_tools",
    "check_model",
    "support_flow",
]
