"""What the LangChain adapter's unit tests share: chat models replying from a list (no engine; the
turn, record and execution values a runner receives are ``tests.adapters.fakes``')."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field



class ReplyChatModel(BaseChatModel):
    """Answers its k-th call with ``replies[k]`` (an exception is raised); keeps every input and binding."""

    replies: list[Any]  # AIMessage | Exception (not validated: pydantic would coerce an exception)
    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    bindings: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "reply-list"

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        names = [convert_to_openai_tool(tool)["function"]["name"] for tool in tools]
        self.bindings.append({"tools": names, "tool_choice": tool_choice})
        return self.bind(tools=names, tool_choice=tool_choice)

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        self.inputs.append(list(messages))
        reply = self.replies[len(self.inputs) - 1]
        if isinstance(reply, Exception):
            raise reply
        assert isinstance(reply, AIMessage)
        return reply

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])


class ChunkChatModel(ReplyChatModel):
    """Streams its k-th reply as ``chunks[k]`` (``replies`` is not used when streaming)."""

    chunks: list[list[AIMessageChunk]] = Field(default_factory=list)

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        self.inputs.append(list(messages))
        for chunk in self.chunks[len(self.inputs) - 1]:
            yield ChatGenerationChunk(message=chunk)


__all__ = ["ChunkChatModel", "ReplyChatModel"]
