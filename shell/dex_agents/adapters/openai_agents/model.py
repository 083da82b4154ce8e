"""One call of an ``agents.Agent``'s ``Model``: the binding's ``call_model`` and ``summarize``.

The SDK's ``Runner`` loop is not used: it would run tools, handoffs, local computer/shell actions and
SDK-level model retries inside the same step. ``call_model`` calls the agent's ``Model`` itself, once,
with what the ``Runner`` would pass it for this agent:

    * instructions (``agent.get_system_prompt``), prompt (``agent.get_prompt``), tools
      (``agent.get_all_tools``: function tools, MCP tools, hosted tools; disabled ones left out),
      model settings (``agent.model_settings``; ``tool_choice`` reset after the turn's first tool
      round when ``agent.reset_tool_choice``), the output schema of ``agent.output_type``, no handoffs;
    * input: the history's input items, then the turn's so far (the template's ``ModelCall.messages``).

The call streams (text and reasoning deltas go to the events as they arrive); a model whose
``stream_response`` raises ``NotImplementedError`` before its first event gets ``get_response``
instead, and its text and reasoning go out as one delta each. If the response holds any function
call (a tool the agent has or not), every function call is deferred, whatever else it holds (text,
a structured output): the turn goes on after their results. A call's effect is the tool's
(``effects.tool_effect``; ``read`` for a tool the agent does not have or arguments that are not a
JSON object, so it fails at once); the SDK's ``needs_approval`` forces an approval (a failing check
too). Otherwise the response's last message is the final output (validated against the output type),
output guardrails run, and the turn completes.

Input guardrails run before the turn's first model call (not in parallel with it), output guardrails
on the final output; ``AgentHooks.on_start`` before the turn's first call, ``on_llm_start`` and
``on_llm_end`` around each call, ``on_end`` with the final output: all inside ``RunModel``, so again
when an attempt is retried (at least once). A tripwire fails the turn at once.

``summarize`` is one ``get_response`` with the summarization instructions as system instructions, the
transcript as one user input item, no tools, no output schema, no prompt.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, nullcontext
from typing import Any, cast

from agents import (
    Agent,
    AgentHookContext,
    AgentOutputSchema,
    AgentOutputSchemaBase,
    Model,
    RunConfig,
    RunContextWrapper,
    trace,
)
from agents.exceptions import ModelBehaviorError, ModelRefusalError
from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import ModelTracing
from agents.tool import FunctionTool, Tool
from agents.tracing import Trace
from agents.usage import Usage
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from dex_agents.adapters.kit import model_call_usage
from dex_agents.adapters.kit.turn import ModelAnswer, ModelCall, RequestedCall
from dex_agents.adapters.openai_agents.effects import tool_effect
from dex_agents.adapters.openai_agents.items import Items, jsonable_items
from dex_agents.pure.values import AgentUsage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, HistorySummaryResult, NonRetryableModelError

_TEXT_DELTAS = frozenset({"response.output_text.delta"})
_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})


def resolve_model(agent: Agent[Any], config: RunConfig) -> Model:
    """The agent's ``Model``: itself, or looked up by name (``None``: the SDK's default model)."""
    return agent.model if isinstance(agent.model, Model) else config.model_provider.get_model(agent.model)


def output_schema(agent: Agent[Any]) -> AgentOutputSchemaBase | None:
    """The schema of ``agent.output_type`` (``None`` for text), as the ``Runner`` builds it."""
    if agent.output_type is None or agent.output_type is str:
        return None
    if isinstance(agent.output_type, AgentOutputSchemaBase):
        return agent.output_type
    return AgentOutputSchema(agent.output_type)


def _tracing(config: RunConfig) -> ModelTracing:
    if config.tracing_disabled:
        return ModelTracing.DISABLED
    return ModelTracing.ENABLED if config.trace_include_sensitive_data else ModelTracing.ENABLED_WITHOUT_DATA


def _trace(agent: Agent[Any], config: RunConfig, group_id: str | None, metadata: dict[str, Any]) -> Trace:
    return trace(workflow_name=f"{agent.name} (dex-agents)", group_id=group_id, metadata=metadata,
                 disabled=config.tracing_disabled)


def sdk_usage(usage: AgentUsage) -> Usage:
    """``AgentUsage`` as the SDK's ``Usage`` (what a tool or an instructions function reads)."""
    return Usage(requests=usage.requests, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 total_tokens=usage.input_tokens + usage.output_tokens,
                 input_tokens_details=InputTokensDetails(cached_tokens=usage.cache_read_tokens,
                                                         cache_write_tokens=usage.cache_write_tokens),
                 output_tokens_details=OutputTokensDetails(reasoning_tokens=0))


def agent_usage(usage: Usage) -> AgentUsage:
    """One model call's SDK ``Usage`` as ``AgentUsage``."""
    return model_call_usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                            cache_read_tokens=getattr(usage.input_tokens_details, "cached_tokens", 0),
                            cache_write_tokens=getattr(usage.input_tokens_details, "cache_write_tokens", 0))


# Stream or plain


def write_response(response: ModelResponse, writer: AgentEventWriter) -> None:
    """The text and reasoning of a response that was not streamed, one delta per part."""
    for item in response.output:
        if isinstance(item, ResponseOutputMessage):
            for content in item.content:
                if isinstance(content, ResponseOutputText) and content.text:
                    writer.write_text_delta(content.text)
        elif isinstance(item, ResponseReasoningItem):
            for text in [*(part.text for part in item.summary), *(part.text for part in item.content or [])]:
                if text:
                    writer.write_reasoning_delta(text)


def forward_event(event: object, writer: AgentEventWriter) -> None:
    """Text and reasoning deltas of a streamed response."""
    kind, delta = getattr(event, "type", None), getattr(event, "delta", None)
    if isinstance(delta, str) and delta and kind in _TEXT_DELTAS:
        writer.write_text_delta(delta)
    elif isinstance(delta, str) and delta and kind in _REASONING_DELTAS:
        writer.write_reasoning_delta(delta)


def _streamed_usage(event: ResponseCompletedEvent) -> Usage:
    usage = event.response.usage
    if usage is None:
        return Usage(requests=1)
    return Usage(requests=1, input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                 total_tokens=usage.total_tokens or 0, input_tokens_details=usage.input_tokens_details,
                 output_tokens_details=usage.output_tokens_details)


async def _consume(events: AsyncIterator[TResponseStreamEvent], first: TResponseStreamEvent,
                   writer: AgentEventWriter) -> ModelResponse:
    done_items: list[Any] = []
    event: TResponseStreamEvent | None = first
    while event is not None:
        forward_event(event, writer)
        kind = getattr(event, "type", None)
        if isinstance(event, ResponseCompletedEvent):
            return ModelResponse(output=list(event.response.output) or done_items, usage=_streamed_usage(event),
                                 response_id=event.response.id)
        if isinstance(event, ResponseOutputItemDoneEvent):
            done_items.append(event.item)
        elif kind in ("response.incomplete", "response.failed"):
            response = getattr(event, "response", None)
            detail = getattr(response, "error", None) or getattr(response, "incomplete_details", None)
            raise ModelBehaviorError(f"the model's response ended with {kind}: {detail}")
        elif kind in ("error", "response.error"):
            raise ModelBehaviorError(f"the model's stream reported an error: {getattr(event, 'message', event)}")
        event = await anext(events, None)
    raise ModelBehaviorError("the model's stream ended without a completed response")


def _closing(stream: object) -> AbstractAsyncContextManager[Any]:
    return aclosing(cast(Any, stream)) if hasattr(stream, "aclose") else nullcontext(stream)


async def request(model: Model, arguments: Sequence[object], keywords: Mapping[str, object],
                  writer: AgentEventWriter) -> ModelResponse:
    """One model call: streamed, or plain when the model cannot stream. Only a ``NotImplementedError``
    before the stream's first event means "cannot stream": no request was made then, so the plain
    request is still the step's only model call."""
    try:
        stream: AsyncIterator[TResponseStreamEvent] | None = model.stream_response(
            *arguments, **keywords)  # type: ignore[arg-type]
    except NotImplementedError:
        stream = None
    if stream is not None:
        async with _closing(stream) as events:
            try:
                first: TResponseStreamEvent | None = await anext(events)
            except NotImplementedError:
                first = None
            except StopAsyncIteration:
                raise ModelBehaviorError("the model's stream ended before any event") from None
            if first is not None:
                return await _consume(events, first, writer)
    response = await model.get_response(*arguments, **keywords)  # type: ignore[arg-type]
    write_response(response, writer)
    return response


# Calls, final output and guardrails


def _arguments(call: ResponseFunctionToolCall) -> dict[str, Any] | None:
    try:
        parsed = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


async def _requested(tools: Mapping[str, FunctionTool], context: RunContextWrapper[Any],
                     call: ResponseFunctionToolCall) -> RequestedCall:
    """The call to defer, with the tool's effect and the SDK's own ``needs_approval``."""
    tool, parameters = tools.get(call.name), _arguments(call)
    if tool is None or parameters is None:
        return RequestedCall(tool_call_id=call.call_id, tool_name=call.name, arguments=call.arguments or "{}",
                             effect=ToolEffect.READ)
    try:
        effect = tool_effect(tool)
    except ValueError as error:  # an MCP or dynamic tool (the agent's own tools are checked at creation)
        raise NonRetryableModelError(str(error)) from error
    needs = tool.needs_approval
    if not isinstance(needs, bool):
        try:
            needs = bool(await needs(context, parameters, call.call_id))
        except Exception:  # noqa: BLE001 - an approval check that fails must not skip the approval
            needs = True
    return RequestedCall(tool_call_id=call.call_id, tool_name=call.name, arguments=call.arguments or "{}",
                         effect=effect, requires_approval=needs)


def final_output(response: ModelResponse, schema: AgentOutputSchemaBase | None) -> object:
    """The final output of a response without function calls, as the ``Runner`` reads it.

    Raises:
        ModelRefusalError: the last message is a refusal (the turn fails at once).
        ModelBehaviorError: a structured output is missing or does not validate (the call is retried).
    """
    messages = [item for item in response.output if isinstance(item, ResponseOutputMessage)]
    last = messages[-1] if messages else None
    refusal = ItemHelpers.extract_refusal(last) if last is not None else None
    if refusal:
        raise ModelRefusalError(refusal)
    text = ItemHelpers.extract_text(last) if last is not None else None
    if schema is None or schema.is_plain_text():
        return text or ""
    if not text:
        raise ModelBehaviorError("Model returned no final output for the structured output type.")
    return schema.validate_json(text)


async def _check_input_guardrails(agent: Agent[Any], model_input: list[TResponseInputItem],
                                  context: RunContextWrapper[Any]) -> None:
    for guardrail in agent.input_guardrails:
        result = await guardrail.run(agent, model_input, context)
        if result.output.tripwire_triggered:
            raise NonRetryableModelError(f"input guardrail {guardrail.get_name()!r} tripped: "
                                         f"{result.output.output_info!r}")


async def _check_output_guardrails(agent: Agent[Any], output: object, context: RunContextWrapper[Any]) -> None:
    for guardrail in agent.output_guardrails:
        result = await guardrail.run(context, agent, output)
        if result.output.tripwire_triggered:
            raise NonRetryableModelError(f"output guardrail {guardrail.get_name()!r} tripped: "
                                         f"{result.output.output_info!r}")


def _hook_context(context: RunContextWrapper[Any]) -> AgentHookContext[Any]:
    return AgentHookContext(context=context.context, usage=context.usage, turn_input=list(context.turn_input))


# The binding's two model calls


async def call_model(agent: Agent[Any], user_context: object, config: RunConfig, call: ModelCall[Items]) -> ModelAnswer[Items]:
    """One model call of ``call.turn`` (see the module docstring)."""
    turn = call.turn
    model_input = cast(list[TResponseInputItem], [item for items in call.messages for item in items])
    context: RunContextWrapper[Any] = RunContextWrapper(context=user_context, usage=sdk_usage(call.turn_usage),
                                                        turn_input=list(model_input))
    if not turn.is_resuming:
        await _check_input_guardrails(agent, model_input, context)
        if agent.hooks is not None:
            await agent.hooks.on_start(_hook_context(context), agent)
    tools: list[Tool] = await agent.get_all_tools(context)
    instructions = await agent.get_system_prompt(context)
    settings, schema = agent.model_settings, output_schema(agent)
    if turn.is_resuming and agent.reset_tool_choice and settings.tool_choice is not None:
        settings = dataclasses.replace(settings, tool_choice=None)
    if agent.hooks is not None:
        await agent.hooks.on_llm_start(context, agent, instructions, model_input)
    with _trace(agent, config, turn.flow_id, {"turn_id": turn.turn_id, "attempt": str(turn.attempt)}):
        response = await request(
            resolve_model(agent, config), (instructions, model_input, settings, tools, schema, [], _tracing(config)),
            {"previous_response_id": None, "conversation_id": None, "prompt": await agent.get_prompt(context)},
            turn.events)
    if agent.hooks is not None:
        await agent.hooks.on_llm_end(context, agent, response)
    context.usage.add(response.usage)
    messages, usage = [jsonable_items(response.to_input_items())], agent_usage(response.usage)
    calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
    if calls:
        by_name = {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)}
        return ModelAnswer(messages=messages, calls=[await _requested(by_name, context, item) for item in calls],
                           usage=usage)
    output = final_output(response, schema)
    await _check_output_guardrails(agent, output, context)
    if agent.hooks is not None:
        await agent.hooks.on_end(_hook_context(context), agent, output)
    return ModelAnswer(messages=messages, calls=(), usage=usage)


async def summarize(agent: Agent[Any], config: RunConfig, instructions: str, transcript: str) -> HistorySummaryResult:
    """One plain summarization call (see the module docstring); a blank answer fails the attempt."""
    settings = dataclasses.replace(agent.model_settings, tool_choice=None)
    with _trace(agent, config, None, {"call": "summarize_history"}):
        response = await resolve_model(agent, config).get_response(
            instructions, [{"type": "message", "role": "user", "content": transcript}], settings, [], None, [],
            _tracing(config), previous_response_id=None, conversation_id=None, prompt=None)
    text = "".join(ItemHelpers.extract_text(item) or "" for item in response.output
                   if isinstance(item, ResponseOutputMessage))
    if not text.strip():
        raise ModelBehaviorError("the summarization call returned no text")
    return HistorySummaryResult(text=text, usage=agent_usage(response.usage))


__all__ = ["agent_usage", "call_model", "final_output", "output_schema", "request", "resolve_model",
           "sdk_usage", "summarize"]
