"""The Pydantic AI adapter's conformance fixture: a ``FunctionModel`` that follows the suite's
``ScriptedModel``, the suite's tools as ``Tool``s with ``dex_effect`` metadata, and ``ToolOutput``
for structured output. Imported by the conformance Worker children too (``tests.adapters...``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

from pydantic import BaseModel
from pydantic_ai import Agent, Tool, ToolOutput
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY, SessionFlowOptions
from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow, native_subagent_tool
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing.conformance import ConformanceTool, ModelReply, ScriptedModel, SeenCall, SeenMessage
from tests.adapters.pydantic_ai_support import streamed_parts


class Status(BaseModel):
    """The suite's structured output."""

    status: str


def _arguments(part: ToolCallPart) -> object:
    return json.loads(part.args_as_json_str())


def seen_messages(messages: Sequence[ModelMessage]) -> list[SeenMessage]:
    """Pydantic AI's model input as the suite's ``SeenMessage``s."""
    seen: list[SeenMessage] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            texts = [part.content for part in message.parts if isinstance(part, TextPart)]
            calls = tuple(SeenCall(part.tool_call_id, part.tool_name, _arguments(part))
                          for part in message.parts if isinstance(part, ToolCallPart))
            seen.append(SeenMessage(role="assistant", text="".join(texts) if texts else None, tool_calls=calls))
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                seen.append(SeenMessage(role="user", text=str(part.content)))
            elif isinstance(part, ToolReturnPart):
                seen.append(SeenMessage(role="tool", tool_call_id=part.tool_call_id, text=part.model_response_str()))
            elif isinstance(part, RetryPromptPart):
                seen.append(SeenMessage(role="tool", tool_call_id=part.tool_call_id, text=part.model_response()))
    return seen


def _parts(reply: ModelReply, info: AgentInfo) -> list[ThinkingPart | TextPart | ToolCallPart]:
    if reply.failure is not None and reply.failure.context_window:  # as OpenAIChatModel raises it
        raise ModelHTTPError.for_category(
            ModelContextWindowExceededError, status_code=400, model_name="scripted",
            body={"message": reply.failure.message, "code": "context_length_exceeded"},
            provider_error_code="context_length_exceeded")
    if reply.failure is not None:
        status = 500 if reply.failure.retryable else 400
        raise ModelHTTPError(status, "scripted", body={"error": reply.failure.message})
    parts: list[ThinkingPart | TextPart | ToolCallPart] = []
    if reply.reasoning:
        parts.append(ThinkingPart(reply.reasoning))
    if reply.text is not None:
        parts.append(TextPart(reply.text))
    parts.extend(ToolCallPart(call.tool_name, json.dumps(call.arguments), tool_call_id=call.tool_call_id)
                 for call in reply.tool_calls)
    if reply.output is not None:
        parts.append(ToolCallPart(info.output_tools[0].name, json.dumps(reply.output), tool_call_id="output"))
    return parts


def function_model(model: ScriptedModel) -> FunctionModel:
    """A ``FunctionModel`` answering with ``model``; it streams only when ``model.streaming``."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = await model.respond(seen_messages(messages))
        return ModelResponse(parts=_parts(reply, info),
                             usage=RequestUsage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens))

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[object]:
        reply = await model.respond(seen_messages(messages))
        for delta in streamed_parts(_parts(reply, info)):
            yield delta

    return FunctionModel(respond, stream_function=stream if model.streaming else None)  # type: ignore[arg-type]


class PydanticAIConformance:
    """``ConformanceAdapter`` of the Pydantic AI adapter."""

    name: ClassVar[str] = "pydantic_ai"

    def build_flow(self, flow_type: str, model: ScriptedModel, tools: Sequence[ConformanceTool], *,
                   structured_output: bool, options: SessionFlowOptions) -> AgentSessionFlow:
        agent_tools = [Tool(tool.function, name=tool.name, metadata={DEX_EFFECT_METADATA_KEY: tool.effect.value})
                       for tool in tools] + [native_subagent_tool(sub) for sub in options.get("sub_agents", ())]
        output_type: object = ToolOutput(Status) if structured_output else str
        agent: Agent[None, object] = Agent(function_model(model), tools=agent_tools,
                                           output_type=output_type)  # type: ignore[call-overload]
        return create_pydantic_ai_session_flow(agent, flow_type, **options)
