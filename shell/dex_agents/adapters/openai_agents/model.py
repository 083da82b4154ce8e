"""One call of an ``agents.Agent``'s ``Model``: the binding's ``call_model`` and ``summarize``.

The SDK's ``Runner`` loop is not used (it would run tools, handoffs, local actions and model retries in
one step). ``call_model`` calls the agent's ``Model`` once with what the ``Runner`` would pass:
instructions, prompt, tools (``agent.get_all_tools``: function, MCP and hosted; disabled ones left out),
model settings (``tool_choice`` reset after the turn's first tool round when ``agent.reset_tool_choice``),
the output schema of ``agent.output_type``, no handoffs; as input, the history's items then the turn's.
It streams (deltas go to the events as they arrive); a model whose ``stream_response`` raises
``NotImplementedError`` before its first event gets ``get_response``, its text and reasoning written
after it, one delta per part. A response with any function call (a tool the agent has or not) defers
every function call, whatever else it holds: the effect is the tool's (``read`` for a tool the agent
lacks or arguments that are not a JSON object: it fails at once); the SDK's ``needs_approval`` (or a
check that fails) forces an approval. Otherwise the last message is the final output (validated
against the output type; a refusal fails the turn).

Input guardrails and ``AgentHooks.on_start`` run before the turn's first model call, ``on_llm_start``
and ``on_llm_end`` around each call, output guardrails and ``on_end`` on the final output: all inside
``RunModel``, so again when an attempt is retried; a tripwire fails the turn at once. ``summarize`` is
one ``get_response``: the instructions as system instructions, the transcript as one user input item,
no tools, no output schema, no prompt.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, nullcontext
from typing import Any, TypeAlias, cast

from agents import Agent, AgentHookContext, AgentHooks, AgentOutputSchema, AgentOutputSchemaBase, Model, RunConfig
from agents import RunContextWrapper, trace
from agents.exceptions import ModelBehaviorError, ModelRefusalError
from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import ModelTracing
from agents.tool import FunctionTool
from agents.tracing import Trace
from agents.usage import Usage
from openai.types.responses import (ResponseCompletedEvent, ResponseFunctionToolCall, ResponseOutputItemDoneEvent,
    ResponseOutputMessage, ResponseOutputText, ResponseReasoningItem)
from openai.types.responses.response_usage import InputTokensDetails
from pydantic_core import to_jsonable_python

from dex_agents.adapters.kit import model_call_usage
from dex_agents.adapters.kit.turn import ModelAnswer, ModelCall, RequestedCall
from dex_agents.adapters.openai_agents.effects import tool_effect
from dex_agents.pure.values.session import AgentUsage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, HistorySummaryResult, NonRetryableModelError

Items: TypeAlias = list[dict[str, Any]]
"""The binding's message type: one stored message's input items (see ``runner``)."""


def resolve_model(agent: Agent[Any], config: RunConfig) -> Model:
    """The agent's ``Model``: itself, or looked up by name (``None``: the SDK's default model)."""
    return agent.model if isinstance(agent.model, Model) else config.model_provider.get_model(agent.model)


def output_schema(agent: Agent[Any]) -> AgentOutputSchemaBase | None:
    """The schema of ``agent.output_type`` (``None`` for text), as the ``Runner`` builds it."""
    found = agent.output_type
    return None if found is None or found is str else found if isinstance(found, AgentOutputSchemaBase) \
        else AgentOutputSchema(found)


def _tracing(config: RunConfig) -> ModelTracing:
    return ModelTracing.DISABLED if config.tracing_disabled else ModelTracing.ENABLED \
        if config.trace_include_sensitive_data else ModelTracing.ENABLED_WITHOUT_DATA


def _trace(agent: Agent[Any], config: RunConfig, group_id: str | None, metadata: dict[str, Any]) -> Trace:
    return trace(workflow_name=f"{agent.name} (dex-agents)", group_id=group_id, metadata=metadata,
                 disabled=config.tracing_disabled)


def sdk_usage(usage: AgentUsage) -> Usage:
    """``AgentUsage`` as the SDK's ``Usage`` (what a tool, a hook or an instructions function reads)."""
    details = InputTokensDetails(cached_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens)
    return Usage(requests=usage.requests, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 total_tokens=usage.input_tokens + usage.output_tokens, input_tokens_details=details)


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
            for text in filter(None, (part.text for part in item.content if isinstance(part, ResponseOutputText))):
                writer.write_text_delta(text)
        elif isinstance(item, ResponseReasoningItem):
            for text in filter(None, [*(part.text for part in item.summary),
                                      *(part.text for part in item.content or [])]):
                writer.write_reasoning_delta(text)


def _consume_event(event: TResponseStreamEvent, done: list[Any], writer: AgentEventWriter) -> ModelResponse | None:
    """Forward a streamed event's delta; the response once the stream completes it."""
    kind, delta = getattr(event, "type", None), getattr(event, "delta", None)
    if isinstance(delta, str) and delta and kind == "response.output_text.delta":
        writer.write_text_delta(delta)
    elif isinstance(delta, str) and delta and kind in ("response.reasoning_summary_text.delta",
                                                         "response.reasoning_text.delta"):
        writer.write_reasoning_delta(delta)
    elif isinstance(event, ResponseOutputItemDoneEvent):
        done.append(event.item)
    elif isinstance(event, ResponseCompletedEvent):
        found = event.response.usage
        usage = Usage(requests=1) if found is None else Usage(
            requests=1, input_tokens=found.input_tokens or 0, output_tokens=found.output_tokens or 0,
            total_tokens=found.total_tokens or 0, input_tokens_details=found.input_tokens_details,
            output_tokens_details=found.output_tokens_details)
        return ModelResponse(output=list(event.response.output) or done, usage=usage, response_id=event.response.id)
    elif kind in ("response.incomplete", "response.failed", "error", "response.error"):
        response = getattr(event, "response", None)
        detail = getattr(response, "error", None) or getattr(response, "incomplete_details", None)
        raise ModelBehaviorError(f"the model's stream ended with {kind}: {detail or getattr(event, 'message', event)}")
    return None


def _closing(stream: object) -> AbstractAsyncContextManager[Any]:
    return aclosing(cast(Any, stream)) if hasattr(stream, "aclose") else nullcontext(stream)


async def request(model: Model, arguments: Sequence[object], prompt: object, writer: AgentEventWriter) -> ModelResponse:
    """One model call, streamed or plain: only a ``NotImplementedError`` before the stream's first event
    means "cannot stream" (no request was made then, so the plain request is the step's only call)."""
    keywords: dict[str, Any] = {"previous_response_id": None, "conversation_id": None, "prompt": prompt}
    try:
        stream: AsyncIterator[TResponseStreamEvent] | None = model.stream_response(
            *arguments, **keywords)  # type: ignore[arg-type]
    except NotImplementedError:
        stream = None
    if stream is not None:
        async with _closing(stream) as events:
            try:
                event: TResponseStreamEvent | None = await anext(events)
            except NotImplementedError:
                event = None
            except StopAsyncIteration:
                raise ModelBehaviorError("the model's stream ended before any event") from None
            done: list[Any] = []
            while event is not None:
                if (response := _consume_event(event, done, writer)) is not None:
                    return response
                if (event := await anext(events, None)) is None:
                    raise ModelBehaviorError("the model's stream ended without a completed response")
    response = await model.get_response(*arguments, **keywords)  # type: ignore[arg-type]
    write_response(response, writer)
    return response


# Calls, final output, guardrails


async def _requested(tools: dict[str, FunctionTool], context: RunContextWrapper[Any],
                     call: ResponseFunctionToolCall) -> RequestedCall:
    """The call to defer, with the tool's effect and the SDK's own ``needs_approval``."""
    arguments, tool = call.arguments or "{}", tools.get(call.name)
    try:
        parameters = json.loads(arguments)
    except ValueError:
        parameters = None
    if tool is None or not isinstance(parameters, dict):
        return RequestedCall(tool_call_id=call.call_id, tool_name=call.name, arguments=arguments,
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
    return RequestedCall(tool_call_id=call.call_id, tool_name=call.name, arguments=arguments, effect=effect,
                         requires_approval=needs)


def final_output(response: ModelResponse, schema: AgentOutputSchemaBase | None) -> object:
    """The final output of a response without function calls, as the ``Runner`` reads it (a refusal:
    ``ModelRefusalError``; a missing or invalid structured output: ``ModelBehaviorError``, retried)."""
    last = next((item for item in reversed(response.output) if isinstance(item, ResponseOutputMessage)), None)
    if last is not None and (refusal := ItemHelpers.extract_refusal(last)):
        raise ModelRefusalError(refusal)
    text = ItemHelpers.extract_text(last) if last is not None else None
    if schema is None or schema.is_plain_text():
        return text or ""
    if not text:
        raise ModelBehaviorError("Model returned no final output for the structured output type.")
    return schema.validate_json(text)


def _tripped(kind: str, name: str, output: Any) -> None:
    if output.tripwire_triggered:
        raise NonRetryableModelError(f"{kind} guardrail {name!r} tripped: {output.output_info!r}")


def _hook_context(context: RunContextWrapper[Any]) -> AgentHookContext[Any]:
    return AgentHookContext(context=context.context, usage=context.usage, turn_input=list(context.turn_input))


# The binding's two model calls


async def call_model(agent: Agent[Any], user_context: object, config: RunConfig,
                     call: ModelCall[Items]) -> ModelAnswer[Items]:
    """One model call of ``call.turn`` (see the module docstring)."""
    turn, hooks = call.turn, agent.hooks or AgentHooks[Any]()
    model_input = cast(list[TResponseInputItem], [item for items in call.messages for item in items])
    context: RunContextWrapper[Any] = RunContextWrapper(context=user_context, usage=sdk_usage(call.turn_usage),
                                                        turn_input=list(model_input))
    if not turn.is_resuming:
        for guardrail in agent.input_guardrails:
            _tripped("input", guardrail.get_name(), (await guardrail.run(agent, model_input, context)).output)
        await hooks.on_start(_hook_context(context), agent)
    tools = await agent.get_all_tools(context)
    instructions = await agent.get_system_prompt(context)
    settings, schema = agent.model_settings, output_schema(agent)
    if turn.is_resuming and agent.reset_tool_choice and settings.tool_choice is not None:
        settings = dataclasses.replace(settings, tool_choice=None)
    await hooks.on_llm_start(context, agent, instructions, model_input)
    with _trace(agent, config, turn.flow_id, {"turn_id": turn.turn_id, "attempt": str(turn.attempt)}):
        response = await request(resolve_model(agent, config),
                                 (instructions, model_input, settings, tools, schema, [], _tracing(config)),
                                 await agent.get_prompt(context), turn.events)
    await hooks.on_llm_end(context, agent, response)
    context.usage.add(response.usage)
    messages = [cast(Items, [to_jsonable_python(item, by_alias=True) for item in response.to_input_items()])]
    usage = agent_usage(response.usage)
    calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
    if calls:
        by_name = {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)}
        return ModelAnswer(messages=messages, calls=[await _requested(by_name, context, item) for item in calls],
                           usage=usage)
    output = final_output(response, schema)
    for output_guardrail in agent.output_guardrails:
        _tripped("output", output_guardrail.get_name(), (await output_guardrail.run(context, agent, output)).output)
    await hooks.on_end(_hook_context(context), agent, output)
    return ModelAnswer(messages=messages, calls=(), usage=usage)


async def summarize(agent: Agent[Any], config: RunConfig, instructions: str, transcript: str) -> HistorySummaryResult:
    """One plain summarization call (see the module docstring); a blank answer fails the attempt."""
    with _trace(agent, config, None, {"call": "summarize_history"}):
        response = await resolve_model(agent, config).get_response(
            instructions, [{"type": "message", "role": "user", "content": transcript}],
            dataclasses.replace(agent.model_settings, tool_choice=None), [], None, [],
            _tracing(config), previous_response_id=None, conversation_id=None, prompt=None)
    text = "".join(ItemHelpers.extract_text(item) or "" for item in response.output
                   if isinstance(item, ResponseOutputMessage))
    if not text.strip():
        raise ModelBehaviorError("the summarization call returned no text")
    return HistorySummaryResult(text=text, usage=agent_usage(response.usage))


__all__ = ["Items", "agent_usage", "call_model", "final_output", "output_schema", "request", "resolve_model",
           "sdk_usage", "summarize"]
