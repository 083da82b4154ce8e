"""The OpenAI Agents SDK adapter's conformance fixture: a ``Model`` that follows the suite's
``ScriptedModel`` (streaming through ``agents.testing.ScriptedModel``'s event stream, or a model whose
``stream_response`` raises ``NotImplementedError``), the suite's tools as ``function_tool``s with
``with_tool_effect``, and ``output_type`` for structured output. Imported by the conformance Worker
children too (``tests.adapters...``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, ClassVar

import httpx2
from agents import Agent, ModelSettings, function_tool, set_tracing_disabled
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.testing import ModelStep, assistant_message, function_call
from agents.testing import ScriptedModel as SDKScriptedModel
from agents.tool import Tool
from agents.usage import Usage
from openai import BadRequestError, InternalServerError
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_prompt_param import ResponsePromptParam
from openai.types.responses.response_reasoning_item import Summary
from pydantic import BaseModel

from dex_agents.adapters.kit import SessionFlowOptions
from dex_agents.adapters.openai_agents import create_openai_agents_session_flow, native_subagent_tool, with_tool_effect
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing.conformance import ConformanceTool, ModelReply, ScriptedModel, SeenCall, SeenMessage

set_tracing_disabled(True)


class Status(BaseModel):
    """The suite's structured output."""

    status: str


def _item(raw: object) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    dumped = getattr(raw, "model_dump", None)
    return dumped(exclude_unset=True) if callable(dumped) else {}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, Mapping))
    return ""


def seen_messages(items: Sequence[object]) -> list[SeenMessage]:
    """The SDK's model input (Responses input items) as the suite's ``SeenMessage``s: the output
    items of one response (reasoning, text, function calls) are one assistant message."""
    seen: list[SeenMessage] = []
    texts: list[str] | None = None
    calls: list[SeenCall] = []

    def flush() -> None:
        nonlocal texts, calls
        if texts is not None:
            seen.append(SeenMessage(role="assistant", text="".join(texts) if texts else None, tool_calls=tuple(calls)))
        texts, calls = None, []

    for raw in items:
        item = _item(raw)
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            flush()
            seen.append(SeenMessage(role="user", text=_text(item.get("content"))))
        elif kind == "function_call_output":
            flush()
            output = item.get("output")
            seen.append(SeenMessage(role="tool", tool_call_id=str(item.get("call_id")),
                                    text=output if isinstance(output, str) else json.dumps(output)))
        elif kind in ("message", "function_call", "reasoning"):
            texts = [] if texts is None else texts
            if kind == "message":
                texts.append(_text(item.get("content")))
            elif kind == "function_call":
                calls.append(SeenCall(str(item.get("call_id")), str(item.get("name")),
                                      json.loads(str(item.get("arguments") or "{}"))))
    flush()
    return seen


def _failure(reply: ModelReply) -> Exception | None:
    if reply.failure is None:
        return None
    request = httpx2.Request("POST", "https://conformance.invalid/v1/responses")
    if reply.failure.context_window:
        body = {"message": reply.failure.message, "type": "invalid_request_error", "code": "context_length_exceeded"}
        return BadRequestError(reply.failure.message, response=httpx2.Response(400, request=request), body=body)
    if reply.failure.retryable:
        return InternalServerError(reply.failure.message, response=httpx2.Response(500, request=request), body=None)
    return BadRequestError(reply.failure.message, response=httpx2.Response(400, request=request), body=None)


def _output(reply: ModelReply) -> list[TResponseOutputItem]:
    output: list[TResponseOutputItem] = []
    if reply.reasoning:
        output.append(ResponseReasoningItem(id="reasoning", type="reasoning",
                                            summary=[Summary(text=reply.reasoning, type="summary_text")]))
    if reply.text is not None:
        output.append(assistant_message(reply.text, item_id="text"))
    output.extend(function_call(call.tool_name, json.dumps(call.arguments), call_id=call.tool_call_id)
                  for call in reply.tool_calls)
    if reply.output is not None:
        output.append(assistant_message(json.dumps(reply.output), item_id="output"))
    return output


def _usage(reply: ModelReply) -> Usage:
    return Usage(requests=1, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                 total_tokens=reply.input_tokens + reply.output_tokens)


class ConformanceModel(Model):
    """Answers each call with the suite's ``ScriptedModel``; streams only when it is a streaming one."""

    def __init__(self, scripted: ScriptedModel) -> None:
        self._scripted = scripted

    async def _reply(self, model_input: str | list[TResponseInputItem]) -> ModelReply:
        items: list[object] = [{"type": "message", "role": "user", "content": model_input}] \
            if isinstance(model_input, str) else list(model_input)
        reply = await self._scripted.respond(seen_messages(items))
        failure = _failure(reply)
        if failure is not None:
            raise failure
        return reply

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], model_settings: ModelSettings,
        tools: list[Tool], output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff], tracing: ModelTracing,
        *, previous_response_id: str | None, conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        reply = await self._reply(input)
        return ModelResponse(output=_output(reply), usage=_usage(reply), response_id=None)

    async def stream_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], model_settings: ModelSettings,
        tools: list[Tool], output_schema: AgentOutputSchemaBase | None, handoffs: list[Handoff], tracing: ModelTracing,
        *, previous_response_id: str | None, conversation_id: str | None, prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        if not self._scripted.streaming:
            raise NotImplementedError("this conformance model cannot stream")
        reply = await self._reply(input)
        streamer = SDKScriptedModel([ModelStep(output=_output(reply), usage=_usage(reply))])
        async for event in streamer.stream_response(
                system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt):
            yield event


class OpenAIAgentsConformance:
    """``ConformanceAdapter`` of the OpenAI Agents SDK adapter."""

    name: ClassVar[str] = "openai_agents"

    def build_flow(self, flow_type: str, model: ScriptedModel, tools: Sequence[ConformanceTool], *,
                   structured_output: bool, options: SessionFlowOptions) -> AgentSessionFlow:
        agent_tools: list[Tool] = [with_tool_effect(function_tool(tool.function, name_override=tool.name), tool.effect)
                                   for tool in tools]
        agent_tools += [native_subagent_tool(sub) for sub in options.get("sub_agents", ())]
        agent: Agent[None] = Agent(name="conformance", instructions="Follow the conformance script.",
                                   model=ConformanceModel(model), tools=agent_tools,
                                   output_type=Status if structured_output else None)
        return create_openai_agents_session_flow(agent, flow_type, **options)
