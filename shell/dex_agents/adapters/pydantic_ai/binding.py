"""The Pydantic AI ``Agent`` as a ``TurnBinding`` of the turn template (``kit.turn``).

* A model call walks ``agent.iter`` node by node, the request streamed when the model can stream. A
  response calling any function tool (or an unknown tool) defers every such call, each with its
  ``RunContext`` serialized (``DurableRunContext``); else Pydantic AI finishes the run (validating the
  output). What a call produced is what the run reports (``new_messages()``).
* A tool Step restores the call's ``RunContext`` with the Worker's agent and ``deps`` (fields that
  cannot cross a process, e.g. ``model``, raise Pydantic AI's own error); ``ModelRetry``, ``ToolFailed``
  and invalid arguments are errors the model sees. A tool that ``requires_approval`` asks for one.
* Not deferrable (at-least-once, repeated with ``RunModel``): tools a Pydantic AI capability runs
  inside the model call, and provider-native tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final, final

from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai._agent_graph import build_run_context  # private; pinned by the extra (2.68.x), covered by tests
from pydantic_ai.direct import model_request
from pydantic_ai.durable_exec import DurabilityEngineSpec, DurableRunContext
from pydantic_ai.exceptions import (ModelContextWindowExceededError, ModelHTTPError, ModelQuotaExceededError,
                                    ModelRequestRejectedError, ModelRetry, ToolFailed, UserError)
from pydantic_ai.messages import (ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, PartDeltaEvent,
                                  PartStartEvent, TextPart, TextPartDelta, ThinkingPart, ThinkingPartDelta,
                                  ToolCallPart, ToolReturnPart, UserPromptPart)
from pydantic_ai.models import Model
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset
from pydantic_core import to_jsonable_python

from dex_agents.adapters.kit import (ArgumentsValidator, ToolOutcome, invalid_arguments_error, is_final_client_status, model_call_usage,
                                    tool_effect_from_metadata, unknown_tool_error)
from dex_agents.adapters.kit.model_errors import CONTEXT_LENGTH_EXCEEDED, error_chain, says_context_window_exceeded
from dex_agents.adapters.kit.turn import CallRef, ModelAnswer, ModelCall, RequestedCall, RoundAnswer, ToolRun
from dex_agents.adapters.pydantic_ai import messages
from dex_agents.pure.values.session import AgentUsage, ToolEffect
from dex_agents.shell.runner import AgentEventWriter, HistorySummaryResult, NonRetryableModelError, ToolExecutionError

# How Pydantic AI's durable run context names Dex in its errors.
DEX_ENGINE_SPEC: Final = DurabilityEngineSpec(engine_name="Dex", durable_unit_noun="Step",
                                              durable_container_noun="Flow")

_OUTCOMES: Final = {ToolOutcome.SUCCESS: "success", ToolOutcome.FAILED: "failed", ToolOutcome.DENIED: "denied",
                    ToolOutcome.UNKNOWN: "interrupted"}
_RUNNABLE: Final = ("function", "unapproved")  # the kinds a tool Step runs ("unapproved": approved by then)


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error`` (a rejected request or key, an
    unknown model, exhausted quota, a configuration error)."""
    if isinstance(error, ModelRequestRejectedError | ModelQuotaExceededError | UserError):
        return True
    return isinstance(error, ModelHTTPError) and is_final_client_status(error.status_code)


def is_context_window_exceeded(error: BaseException) -> bool:
    """Pydantic AI's ``ModelContextWindowExceededError``, a provider error code ``context_length_exceeded``
    (its ``provider_error_code`` too), or "prompt is too long", on ``error`` or an error in its chain."""
    return says_context_window_exceeded(error, ModelContextWindowExceededError) or any(
        getattr(found, "provider_error_code", None) == CONTEXT_LENGTH_EXCEEDED for found in error_chain(error))


def can_stream(model: Model) -> bool:
    """Whether ``model`` implements streamed requests (a ``FunctionModel`` needs a ``stream_function``)."""
    if isinstance(model, FunctionModel):
        return model.stream_function is not None
    if isinstance(model, WrapperModel):
        return can_stream(model.wrapped)
    return type(model).request_stream is not Model.request_stream


def _forward(event: object, writer: AgentEventWriter) -> None:
    """Text and thinking deltas; the first chunk of a part arrives only in its ``PartStartEvent``."""
    if isinstance(event, PartStartEvent):
        _write_part(event.part, writer)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta) and event.delta.content_delta:
        writer.write_text_delta(event.delta.content_delta)
    elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, ThinkingPartDelta) and event.delta.content_delta:
        writer.write_reasoning_delta(event.delta.content_delta)


def _write_part(part: object, writer: AgentEventWriter) -> None:
    if isinstance(part, TextPart) and part.content:
        writer.write_text_delta(part.content)
    elif isinstance(part, ThinkingPart) and part.content:
        writer.write_reasoning_delta(part.content)


def usage_of(response: ModelResponse) -> AgentUsage:
    """The usage of one model response."""
    usage = response.usage
    return model_call_usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                            cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens)


async def _requested(run: Any, node: Any, writer: AgentEventWriter) -> Any:
    """Make the one model request of ``node``; return the next node (the response's ``CallToolsNode``)."""
    if can_stream(run.ctx.deps.model):
        async with node.stream(run.ctx) as stream:
            async for event in stream:
                _forward(event, writer)
        return await run.next(node)
    following = await run.next(node)
    for part in following.model_response.parts:
        _write_part(part, writer)
    return following


def _requested_call(run: Any, context: Any, call: ToolCallPart) -> RequestedCall:
    """``call`` deferred, with its ``RunContext`` as ``DurableRunContext`` JSON data."""
    name = call.tool_name
    definition: ToolDefinition | None = run.ctx.deps.tool_manager.get_tool_def(name)
    try:  # an unknown tool is a read: it fails at once, without an approval
        effect = ToolEffect.READ if definition is None else tool_effect_from_metadata(name, definition.metadata)
    except ValueError as error:  # a toolset's metadata (static tools are checked at Flow creation)
        raise NonRetryableModelError(str(error)) from error
    for_call = replace(context, tool_name=call.tool_name, tool_call_id=call.tool_call_id,
                       retry=context.retries.get(call.tool_name, 0), tool_call_approved=True)
    return RequestedCall(tool_call_id=call.tool_call_id, tool_name=call.tool_name, arguments=call.args_as_json_str(),
                         effect=effect, requires_approval=definition is not None and definition.kind == "unapproved",
                         context=to_jsonable_python(DurableRunContext.serialize_run_context(for_call), fallback=repr))


@final
class PydanticAIBinding:
    """``TurnBinding[ModelMessage]`` of a Pydantic AI ``Agent`` (see the module docstring)."""

    adapter: Final = "pydantic_ai"
    run_state_version: Final = 3  # 2 kept the unanswered output calls itself; 1 (before the kit) was no envelope

    def __init__(self, agent: Agent[Any, Any], deps: object = None) -> None:
        if agent.model is None:
            raise ValueError("the agent has no model: give Agent(model=...) (a Model or 'provider:name')")
        self.agent, self.model, self.deps = agent, agent.model, deps

    user_item = staticmethod(messages.user_prompt_item)
    parse_item = staticmethod(messages.load_messages)
    copy_message = staticmethod(messages.shallow_copy)
    load_messages = staticmethod(messages.load_messages)
    to_framework_messages = staticmethod(messages.to_framework_messages)

    def dump_messages(self, produced: Sequence[ModelMessage]) -> object:
        return ModelMessagesTypeAdapter.dump_python(list(produced), mode="json")

    def response_calls(self, message: ModelMessage) -> Sequence[CallRef] | None:
        return [CallRef(tool_call_id=call.tool_call_id, tool_name=call.tool_name)
                for call in message.tool_calls] if isinstance(message, ModelResponse) else None

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[ModelMessage]:
        return [ModelRequest(parts=[ToolReturnPart(answer.tool_name, answer.text, tool_call_id=answer.tool_call_id,
                                                   outcome=_OUTCOMES[answer.outcome])  # type: ignore[arg-type]
                                    for answer in answers])]

    async def call_model(self, call: ModelCall[ModelMessage]) -> ModelAnswer[ModelMessage]:
        async with self.agent.iter(message_history=call.messages, deps=self.deps) as run:
            node = run.next_node
            while not Agent.is_model_request_node(node):  # the user-prompt node (it adds no prompt here)
                if Agent.is_end_node(node) or Agent.is_call_tools_node(node):
                    raise RuntimeError(f"Pydantic AI reached {type(node).__name__} before any model request")
                node = await run.next(node)
            node = await _requested(run, node, call.turn.events)
            if not Agent.is_call_tools_node(node):
                raise RuntimeError(f"Pydantic AI followed the model request with {type(node).__name__}")
            response = node.model_response
            tools = run.ctx.deps.tool_manager
            deferred = [part for part in response.tool_calls
                        if (definition := tools.get_tool_def(part.tool_name)) is None or definition.kind != "output"]
            if deferred:
                context = build_run_context(run.ctx)
                return ModelAnswer(messages=run.new_messages(), usage=usage_of(response),
                                   calls=[_requested_call(run, context, part) for part in deferred])
            if not Agent.is_end_node(await run.next(node)):
                raise RuntimeError("Pydantic AI needs another model call to finish this response (its output did "
                                   "not validate); the model call is retried")
            return ModelAnswer(messages=run.new_messages(), calls=(), usage=usage_of(response))

    async def run_tool(self, run: ToolRun[ModelMessage]) -> str:
        record = run.call.tool_call
        if not isinstance(serialized := run.context, dict):
            raise ToolExecutionError(f"the run state holds no RunContext for tool call {record.tool_call_id!r}")
        ctx = DurableRunContext.restore(serialized, deps=self.deps, agent=self.agent, engine_spec=DEX_ENGINE_SPEC)
        known: list[str] = []
        for toolset in self.agent.toolsets:
            async with toolset:
                tools = {name: tool for name, tool in (await toolset.get_tools(ctx)).items()
                         if tool.tool_def.kind in _RUNNABLE}
                known.extend(tools)
                tool = tools.get(record.tool_name)
                if tool is None:
                    continue
                try:
                    arguments = tool.args_validator.validate_json(record.arguments or "{}")
                    output = await toolset.call_tool(record.tool_name, arguments, ctx, tool)
                except (ModelRetry, ToolFailed) as error:
                    raise ToolExecutionError(str(error.message)) from error
                except ValidationError as error:
                    raise invalid_arguments_error(record.tool_name, str(error)) from error
                return output if isinstance(output, str) else ToolReturnPart(record.tool_name,
                                                                              output).model_response_str()
        raise unknown_tool_error(record.tool_name, known)

    async def arguments_validator(self, tool_name: str) -> ArgumentsValidator | None:
        """A function tool's schema validator; a tool of another toolset (e.g. MCP) takes any JSON object."""
        for toolset in self.agent.toolsets:
            if isinstance(toolset, FunctionToolset) and (tool := toolset.tools.get(tool_name)) is not None:
                return tool.function_schema.validator.validate_json
        return None if len(self.agent.toolsets) == 1 else json.loads

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        settings = self.agent.model_settings
        request = ModelRequest(parts=[UserPromptPart(transcript)], instructions=instructions)
        response = await model_request(self.model, [request],  # settings made from a run's context: none here
                                       model_settings=settings if isinstance(settings, dict) else None)
        if not (text := response.text or "").strip():
            raise RuntimeError("the summary of the history is empty")
        return HistorySummaryResult(text=text, usage=usage_of(response))

    is_non_retryable = staticmethod(is_non_retryable)
    is_context_window_exceeded = staticmethod(is_context_window_exceeded)


__all__ = ["DEX_ENGINE_SPEC", "PydanticAIBinding", "can_stream", "is_context_window_exceeded", "is_non_retryable"]
