"""The LangChain adapter's conformance fixture: a small ``BaseChatModel`` that follows the suite's
``ScriptedModel`` (streaming only when the suite asks for it), the suite's tools as ``StructuredTool``s
with ``dex_effect`` metadata, and a Pydantic ``response_format`` for structured output. Imported by
the conformance Worker children too (``tests.adapters...``).

A ``ScriptedFailure`` raises LangChain's own provider-independent errors: ``ModelAPIError`` (a server
failure, retried), ``ModelInvalidRequestError`` (a rejected request, which the adapter maps to
``NonRetryableModelError``) or ``ContextOverflowError`` (the input exceeds the context window, which the
adapter maps to ``ContextWindowExceededError``; ``ChatOpenAI`` raises a subclass of it for OpenAI's
``context_length_exceeded``). Summarization calls come through the same model, without tools.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError, ModelAPIError, ModelError, ModelInvalidRequestError
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
from pydantic import BaseModel, ConfigDict

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY, SessionFlowOptions
from dex_agents.adapters.langchain import create_langchain_session_flow, native_subagent_tool
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing.conformance import ConformanceTool, ModelReply, ScriptedModel, SeenCall, SeenMessage


class Status(BaseModel):
    """The suite's structured output."""

    status: str


def _text(content: str | list[str | dict[str, Any]]) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def seen_messages(messages: Sequence[BaseMessage]) -> list[SeenMessage]:
    """LangChain's model input as the suite's ``SeenMessage``s (the system prompt is left out)."""
    seen: list[SeenMessage] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            seen.append(SeenMessage(role="user", text=message.text))
        elif isinstance(message, AIMessage):
            calls = tuple(SeenCall(call["id"] or "", call["name"], call["args"]) for call in message.tool_calls)
            seen.append(SeenMessage(role="assistant", text=message.text or None, tool_calls=calls))
        elif isinstance(message, ToolMessage):
            seen.append(SeenMessage(role="tool", tool_call_id=message.tool_call_id, text=_text(message.content)))
    return seen


def _bound_tool_names(kwargs: dict[str, Any]) -> list[str]:
    return [str(tool["function"]["name"]) for tool in kwargs.get("tools") or []]


def _tool_calls(reply: ModelReply, seen: Sequence[SeenMessage], kwargs: dict[str, Any]) -> list[ToolCall]:
    calls = [ToolCall(name=call.tool_name, args=dict(call.arguments),  # type: ignore[call-overload]
                      id=call.tool_call_id, type="tool_call") for call in reply.tool_calls]
    if reply.output is not None:
        if Status.__name__ not in _bound_tool_names(kwargs):
            raise AssertionError(f"the output tool is not bound: {_bound_tool_names(kwargs)}")
        calls.append(ToolCall(name=Status.__name__, args=dict(reply.output), id=f"output-{len(seen)}",
                              type="tool_call"))
    return calls


async def _reply(script: ScriptedModel, messages: Sequence[BaseMessage]) -> tuple[ModelReply, list[SeenMessage]]:
    seen = seen_messages(messages)
    reply = await script.respond(seen)
    if reply.failure is not None:
        failure = reply.failure
        error: type[ModelError] = (ContextOverflowError if failure.context_window
                                   else ModelAPIError if failure.retryable else ModelInvalidRequestError)
        raise error(failure.message)
    return reply, seen


def _usage(reply: ModelReply) -> UsageMetadata:
    return UsageMetadata(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                         total_tokens=reply.input_tokens + reply.output_tokens)


class ScriptedChatModel(BaseChatModel):
    """A chat model answering with a ``ScriptedModel``; it cannot stream."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: ScriptedModel

    @property
    def _llm_type(self) -> str:
        return "dex-conformance-scripted"

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return asyncio.run(self._agenerate(messages, stop, **kwargs))

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        reply, seen = await _reply(self.script, messages)
        extra = {"reasoning_content": reply.reasoning} if reply.reasoning else {}
        message = AIMessage(content=reply.text or "", additional_kwargs=extra, tool_calls=_tool_calls(reply, seen, kwargs),
                            usage_metadata=_usage(reply))
        return ChatResult(generations=[ChatGeneration(message=message)])


class StreamingScriptedChatModel(ScriptedChatModel):
    """``ScriptedChatModel`` that streams: reasoning, the text in two pieces, each call, then usage."""

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        reply, seen = await _reply(self.script, messages)
        if reply.reasoning:
            yield ChatGenerationChunk(message=AIMessageChunk(content="",
                                                             additional_kwargs={"reasoning_content": reply.reasoning}))
        if reply.text:
            middle = len(reply.text) // 2
            for piece in (reply.text[:middle], reply.text[middle:]):
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        for index, call in enumerate(_tool_calls(reply, seen, kwargs)):
            chunk = ToolCallChunk(name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index,
                                  type="tool_call_chunk")
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[chunk]))
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=_usage(reply),
                                                         chunk_position="last"))


def chat_model(model: ScriptedModel) -> ScriptedChatModel:
    """The chat model of ``model``: it streams only when ``model.streaming``."""
    kind = StreamingScriptedChatModel if model.streaming else ScriptedChatModel
    return kind(script=model)


class LangChainConformance:
    """``ConformanceAdapter`` of the LangChain adapter."""

    name: ClassVar[str] = "langchain"

    def build_flow(self, flow_type: str, model: ScriptedModel, tools: Sequence[ConformanceTool], *,
                   structured_output: bool, options: SessionFlowOptions) -> AgentSessionFlow:
        chat_tools = [StructuredTool.from_function(coroutine=tool.function, name=tool.name,
                                                   metadata={DEX_EFFECT_METADATA_KEY: tool.effect.value})
                      for tool in tools] + [native_subagent_tool(sub) for sub in options.get("sub_agents", ())]
        return create_langchain_session_flow(chat_model(model), chat_tools, flow_type,
                                             response_format=Status if structured_output else None, **options)
