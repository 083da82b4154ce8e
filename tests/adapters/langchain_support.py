"""What the LangChain adapter's unit tests share: a chat model replying from a list, and the turn,
record and execution values a runner receives (no engine)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from dex_agents.adapters.langchain import LangChainRunner
from dex_agents.pure.runner_values import DeferredToolCall, ResolvedToolPolicy
from dex_agents.pure.values import AgentMessage, AgentToolCall, ToolCallStatus, ToolEffect
from dex_agents.shell.runner import AgentTurnContext, DeferredToolExecution


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


class Events:
    """An ``AgentEventWriter`` that keeps the deltas it is given."""

    turn_id = "turn-1"
    attempt = 1

    def __init__(self) -> None:
        self.deltas: list[tuple[str, str]] = []

    def write_text_delta(self, text: str) -> None:
        self.deltas.append(("text", text))

    def write_reasoning_delta(self, text: str) -> None:
        self.deltas.append(("reasoning", text))

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None:
        pass

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: ToolCallStatus) -> None:
        pass

    def write_event(self, event_type: str, payload: Mapping[str, object]) -> None:
        pass


async def no_heartbeat() -> None:
    pass


def turn(runner: LangChainRunner, run_state: str | None = None, records: Sequence[AgentToolCall] = (),
         events: Events | None = None, text: str = "go") -> AgentTurnContext:
    """The first turn of a session whose only stored message is ``text``."""
    user = runner.build_user_message(text)
    stored = AgentMessage(sequence=1, turn_id="turn-1", role=user.role, text=user.text, tool_call_id=None,
                          tool_name=None, tool_arguments=None, tool_output=None, framework_item=user.framework_item)
    return AgentTurnContext(
        flow_id="s", turn_id="turn-1", attempt=1, messages=(stored,), framework_run_state=run_state,
        tool_calls=tuple(records), events=events or Events(), deadline=datetime.now(UTC),
        resolve_tool_policy=lambda name, effect: ResolvedToolPolicy(effect=effect or ToolEffect.UNCLASSIFIED,
                                                                   requires_approval=False),
        is_cancellation_requested=lambda: False, heartbeat=no_heartbeat)


def record(call: DeferredToolCall, status: ToolCallStatus = ToolCallStatus.PENDING, *, order: int = 0,
           output: str | None = None, error: str | None = None) -> AgentToolCall:
    """The record of a deferred call, with the given final state."""
    return AgentToolCall(tool_call_id=call.tool_call_id, turn_id="turn-1", tool_name=call.tool_name,
                         arguments=call.arguments, effect=call.policy.effect, requires_approval=False,
                         deferral_order=order, idempotency_key=f"s/turn-1/{call.tool_call_id}", status=status,
                         interrupt_id=None, output=output, error=error, rejection_message=None)


def execution(record: AgentToolCall, attempt: int = 1) -> DeferredToolExecution:
    """What ``execute_deferred_tool_call`` receives for ``record``."""
    return DeferredToolExecution(flow_id="s", tool_call=record, idempotency_key=record.idempotency_key,
                                 attempt=attempt, events=Events(), deadline=datetime.now(UTC),
                                 is_cancellation_requested=lambda: False, heartbeat=no_heartbeat)


def pending(tool_name: str, arguments: str, tool_call_id: str = "c-1") -> AgentToolCall:
    """A pending record of a call of ``tool_name``."""
    return record(DeferredToolCall(tool_call_id=tool_call_id, tool_name=tool_name, arguments=arguments,
                                   policy=ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)))


__all__ = ["ChunkChatModel", "Events", "ReplyChatModel", "execution", "pending", "record", "turn"]
