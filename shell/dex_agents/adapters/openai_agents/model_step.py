"""``run_model_step`` for an ``agents.Agent``: exactly one call of the agent's ``Model``, no tool run.

The SDK's ``Runner`` loop is not used: it would run tools, handoffs, local computer/shell actions and
SDK-level model retries inside the same step. The step calls the agent's ``Model`` interface itself,
once, with what the ``Runner`` would pass it for this agent:

    * instructions (``agent.get_system_prompt``), prompt (``agent.get_prompt``), tools
      (``agent.get_all_tools``: function tools, MCP tools, hosted tools; disabled ones left out),
      model settings (``agent.model_settings``; ``tool_choice`` reset after the turn's first tool
      round when ``agent.reset_tool_choice``), the output schema of ``agent.output_type``, no handoffs;
    * input: the stored history (``framework_item``s), then the turn so far from the run state and
      one ``function_call_output`` per call of the latest round (``turn_state.resumed``).

The call streams (text and reasoning deltas go to the events as they arrive); a model whose
``stream_response`` raises ``NotImplementedError`` before its first event gets ``get_response``
instead, and its text and reasoning go out as one delta each. If the response holds any function
call (a tool the agent has or not), every function call is deferred, whatever else it holds (text,
a structured output): the turn goes on after their results. Otherwise the response's last message
is the final output (validated against the output type), output guardrails run, and the turn
completes.

Input guardrails run before the turn's first model call (not in parallel with it), output guardrails
on the final output; ``AgentHooks.on_start`` before the turn's first call, ``on_llm_start`` and
``on_llm_end`` around each call, ``on_end`` with the final output: all inside ``RunModel``, so again
when an attempt is retried (at least once). A tripwire fails the turn at once.
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
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pyrsistent import pvector

from dex_agents.adapters.kit import RunStateError, model_call_usage
from dex_agents.adapters.openai_agents.effects import tool_effect
from dex_agents.adapters.openai_agents.items import ASSISTANT, jsonable_items, load_history
from dex_agents.adapters.openai_agents.turn_state import TurnMessage, TurnSoFar, decode_turn, encode_turn, resumed
from dex_agents.pure.runner_values import (
    AgentTurnOutcome,
    DeferredToolCall,
    ResolvedToolPolicy,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.pure.values import AgentUsage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, AgentTurnContext, NonRetryableModelError

_TEXT_DELTAS = frozenset({"response.output_text.delta"})
_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})


def resolve_model(agent: Agent[Any], config: RunConfig) -> Model:
    """The agent's ``Model``: itself, or looked up by name (``None``: the SDK's default model)."""
    if isinstance(agent.model, Model):
        return agent.model
    return config.model_provider.get_model(agent.model)


def output_schema(agent: Agent[Any]) -> AgentOutputSchemaBase | None:
    """The schema of ``agent.output_type`` (``None`` for text), as the ``Runner`` builds it."""
    if agent.output_type is None or agent.output_type is str:
        return None
    if isinstance(agent.output_type, AgentOutputSchemaBase):
        return agent.output_type
    return AgentOutputSchema(agent.output_type)


def model_tracing(config: RunConfig) -> ModelTracing:
    if config.tracing_disabled:
        return ModelTracing.DISABLED
    return ModelTracing.ENABLED if config.trace_include_sensitive_data else ModelTracing.ENABLED_WITHOUT_DATA


# The model call


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
    kind = getattr(event, "type", None)
    delta = getattr(event, "delta", None)
    if not isinstance(delta, str) or not delta:
        return
    if kind in _TEXT_DELTAS:
        writer.write_text_delta(delta)
    elif kind in _REASONING_DELTAS:
        writer.write_reasoning_delta(delta)


def usage_of(response: Response) -> Usage:
    """The SDK ``Usage`` of one streamed response."""
    usage = response.usage
    if usage is None:
        return Usage(requests=1)
    cached = getattr(usage.input_tokens_details, "cached_tokens", 0) or 0
    written = getattr(usage.input_tokens_details, "cache_write_tokens", 0) or 0
    reasoning = getattr(usage.output_tokens_details, "reasoning_tokens", 0) or 0
    return Usage(requests=1, input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                 total_tokens=usage.total_tokens or 0,
                 input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=written),
                 output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning))


async def _consume(events: AsyncIterator[TResponseStreamEvent], first: TResponseStreamEvent,
                   writer: AgentEventWriter) -> ModelResponse:
    done_items: list[Any] = []
    event: TResponseStreamEvent | None = first
    while event is not None:
        forward_event(event, writer)
        kind = getattr(event, "type", None)
        if isinstance(event, ResponseCompletedEvent):
            terminal = event.response
            output = list(terminal.output) or done_items
            return ModelResponse(output=output, usage=usage_of(terminal), response_id=terminal.id)
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


async def call_model(model: Model, arguments: Sequence[object], keywords: Mapping[str, object],
                     writer: AgentEventWriter) -> ModelResponse:
    """One model call: streamed, or plain when the model cannot stream (see the module docstring).

    Only a ``NotImplementedError`` before the stream's first event means "cannot stream": no request
    was made then, so the plain request is still the step's only model call.
    """
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


# Run state, tools and policies


def _turn_so_far(turn: AgentTurnContext) -> TurnSoFar:
    """The turn so far, ending with one tool result per call of the latest round."""
    if turn.framework_run_state is None:
        return TurnSoFar()
    try:
        decoded, so_far = decode_turn(turn.framework_run_state)
    except RunStateError as error:
        raise NonRetryableModelError(str(error)) from error
    return resumed(decoded, so_far, turn.tool_calls)


def function_tools(tools: Sequence[Tool]) -> dict[str, FunctionTool]:
    return {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)}


async def _needs_approval(tool: FunctionTool, context: RunContextWrapper[Any], call: ResponseFunctionToolCall) -> bool:
    """The SDK's own ``needs_approval`` of the call (a failing or unreadable check asks for approval)."""
    needs = tool.needs_approval
    if isinstance(needs, bool):
        return needs
    try:
        parameters = json.loads(call.arguments or "{}")
        return bool(await needs(context, parameters if isinstance(parameters, dict) else {}, call.call_id))
    except Exception:  # noqa: BLE001 - an approval check that fails must not skip the approval
        return True


async def _policy(turn: AgentTurnContext, tools: Mapping[str, FunctionTool], context: RunContextWrapper[Any],
                  call: ResponseFunctionToolCall) -> ResolvedToolPolicy:
    tool = tools.get(call.name)
    if tool is None:
        return turn.resolve_tool_policy(call.name, ToolEffect.READ)  # fails at once, without an approval
    try:
        effect = tool_effect(tool)
    except ValueError as error:  # an MCP or dynamic tool (the agent's own tools are checked at creation)
        raise NonRetryableModelError(str(error)) from error
    policy = turn.resolve_tool_policy(call.name, effect)
    if not policy.requires_approval and await _needs_approval(tool, context, call):
        return ResolvedToolPolicy(effect=policy.effect, requires_approval=True)
    return policy


# Final output and guardrails


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


async def check_input_guardrails(agent: Agent[Any], model_input: list[TResponseInputItem],
                                 context: RunContextWrapper[Any]) -> None:
    for guardrail in agent.input_guardrails:
        result = await guardrail.run(agent, model_input, context)
        if result.output.tripwire_triggered:
            raise NonRetryableModelError(f"input guardrail {guardrail.get_name()!r} tripped: "
                                         f"{result.output.output_info!r}")


async def check_output_guardrails(agent: Agent[Any], output: object, context: RunContextWrapper[Any]) -> None:
    for guardrail in agent.output_guardrails:
        result = await guardrail.run(context, agent, output)
        if result.output.tripwire_triggered:
            raise NonRetryableModelError(f"output guardrail {guardrail.get_name()!r} tripped: "
                                         f"{result.output.output_info!r}")


# The step


def _hook_context(context: RunContextWrapper[Any]) -> AgentHookContext[Any]:
    return AgentHookContext(context=context.context, usage=context.usage, turn_input=list(context.turn_input))


async def run_model_step(agent: Agent[Any], user_context: object, config: RunConfig,
                         turn: AgentTurnContext) -> AgentTurnOutcome:
    """One model call of ``turn`` (see the module docstring)."""
    so_far = _turn_so_far(turn)
    try:
        history = load_history(turn.messages)
    except ValueError as error:  # decoding is deterministic: a retry reads the same
        raise NonRetryableModelError(f"a stored message cannot be read as OpenAI Agents input items: {error}") from error
    model_input = cast(list[TResponseInputItem], [*history, *so_far.items()])
    usage = Usage()
    usage.add(so_far.usage)
    context: RunContextWrapper[Any] = RunContextWrapper(context=user_context, usage=usage,
                                                        turn_input=list(model_input))
    if not turn.is_resuming:
        await check_input_guardrails(agent, model_input, context)
        if agent.hooks is not None:
            await agent.hooks.on_start(_hook_context(context), agent)
    tools = await agent.get_all_tools(context)
    instructions = await agent.get_system_prompt(context)
    prompt = await agent.get_prompt(context)
    settings = agent.model_settings
    if turn.is_resuming and agent.reset_tool_choice and settings.tool_choice is not None:
        settings = dataclasses.replace(settings, tool_choice=None)
    schema = output_schema(agent)
    model = resolve_model(agent, config)
    if agent.hooks is not None:
        await agent.hooks.on_llm_start(context, agent, instructions, model_input)
    with trace(workflow_name=f"{agent.name} (dex-agents)", group_id=turn.flow_id,
               metadata={"turn_id": turn.turn_id, "attempt": str(turn.attempt)}, disabled=config.tracing_disabled):
        response = await call_model(
            model, (instructions, model_input, settings, tools, schema, [], model_tracing(config)),
            {"previous_response_id": None, "conversation_id": None, "prompt": prompt}, turn.events)
    if agent.hooks is not None:
        await agent.hooks.on_llm_end(context, agent, response)
    context.usage.add(response.usage)
    call_usage = agent_usage(response.usage)
    produced = TurnSoFar(messages=(*so_far.messages, TurnMessage(role=ASSISTANT, items=tuple(
        jsonable_items(response.to_input_items())))), usage=context.usage)
    calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
    if calls:
        by_name = function_tools(tools)
        deferred = [DeferredToolCall(tool_call_id=call.call_id, tool_name=call.name, arguments=call.arguments or "{}",
                                     policy=await _policy(turn, by_name, context, call)) for call in calls]
        return ToolCallsRequested(framework_run_state=encode_turn([call.call_id for call in calls], produced),
                                  tool_calls=pvector(deferred), usage=call_usage)
    output = final_output(response, schema)
    await check_output_guardrails(agent, output, context)
    if agent.hooks is not None:
        await agent.hooks.on_end(_hook_context(context), agent, output)
    return TurnCompleted(new_messages=pvector(produced.framework_messages()), usage=call_usage)


def agent_usage(usage: Usage) -> AgentUsage:
    """One model call's SDK ``Usage`` as ``AgentUsage``."""
    return model_call_usage(
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        cache_read_tokens=getattr(usage.input_tokens_details, "cached_tokens", 0),
        cache_write_tokens=getattr(usage.input_tokens_details, "cache_write_tokens", 0))


__all__ = [
    "agent_usage",
    "call_model",
    "final_output",
    "forward_event",
    "output_schema",
    "resolve_model",
    "run_model_step",
    "write_response",
]
