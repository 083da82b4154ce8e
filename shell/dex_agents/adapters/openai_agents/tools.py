"""The binding's ``run_tool``: one function tool of ``agent.get_all_tools`` (the agent's own, an
agent-as-tool, an MCP server's) run alone, with the model's JSON arguments and a ``ToolContext`` like
the ``Runner``'s: the Worker's context object, the call's name, ID, arguments and raw ``function_call``
item (from ``ToolRun.turn_messages()``), the agent, the turn's usage so far (``ToolRun.turn_usage()``),
a ``RunConfig`` (``turn_input`` empty). Around it, as the ``Runner`` does: the tool's input guardrails,
``AgentHooks.on_tool_start``, its timeout, ``on_tool_end``, its output guardrails.

``ToolExecutionError`` (the model reads it): a tool the agent lacks; arguments that are not JSON or do not
validate; an exception the tool's ``failure_error_function`` (the default one does) or a timeout with
``timeout_behavior="error_as_result"`` turns into a message; an input guardrail that rejects or trips (the
tool does not run), an output guardrail that trips (its output withheld). With ``failure_error_function=None``
(or ``timeout_behavior="raise_exception"``) the exception goes through, for the tool Step's retry policy.
An output guardrail that rejects the content replaces the output, as in the SDK.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
from collections.abc import Mapping
from typing import Any

from agents import Agent, AgentHooks, RunConfig, RunContextWrapper
from agents.exceptions import ModelBehaviorError, ToolTimeoutError, UserError
from agents.items import ItemHelpers
from agents.tool import (FunctionTool, default_tool_timeout_error_message, invoke_function_tool,
    maybe_invoke_function_tool_failure_error_function, set_function_tool_failure_error_function)
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData, ToolOutputGuardrailData
from openai.types.responses import ResponseFunctionToolCall
from pydantic import ValidationError

from dex_agents.adapters.kit import ArgumentsValidator, invalid_arguments_error, json_schema_validator, unknown_tool_error
from dex_agents.adapters.kit.turn import ToolRun
from dex_agents.adapters.openai_agents.model import Items, sdk_usage
from dex_agents.shell.runner import ToolExecutionError

logger = logging.getLogger(__name__)


def _raw_call(messages: list[Items], call_id: str) -> ResponseFunctionToolCall:
    item = next((item for item in (messages[-1] if messages else []) if item.get("type") == "function_call"
                 and item.get("call_id") == call_id), None)
    try:
        return ResponseFunctionToolCall.model_validate(item)  # ``None``: not found
    except ValidationError as error:
        raise ToolExecutionError(f"the run state holds no readable function call {call_id!r}: {error}") from error


async def _failure_message(tool: FunctionTool, context: ToolContext[Any], error: Exception) -> str | None:
    """The message the tool's failure policy gives the model for ``error`` (``None``: let it through)."""
    if not isinstance(error, ToolTimeoutError):
        return await maybe_invoke_function_tool_failure_error_function(function_tool=tool, context=context, error=error)
    if tool.timeout_behavior == "raise_exception":
        return None
    if tool.timeout_error_function is None:
        return default_tool_timeout_error_message(tool_name=tool.name, timeout_seconds=error.timeout_seconds)
    message = tool.timeout_error_function(context, error)
    return str(await message if inspect.isawaitable(message) else message)


async def _invoke(tool: FunctionTool, context: ToolContext[Any], arguments: str) -> object:
    """Run the tool through the SDK's invocation (context injection, validation, timeout), with its
    failure policy applied here so that a failure is a ``ToolExecutionError``, not a success."""
    unhandled = copy.copy(tool)
    set_function_tool_failure_error_function(unhandled, None)
    unhandled.timeout_behavior = "raise_exception"
    try:
        return await invoke_function_tool(function_tool=unhandled, context=context, arguments=arguments)
    except ToolExecutionError:
        raise
    except ModelBehaviorError as error:
        if not str(error).startswith("Invalid JSON input for tool"):  # the SDK's error for unusable arguments
            raise
        schema = json.dumps(tool.params_json_schema, sort_keys=True)
        raise invalid_arguments_error(tool.name, f"{error} (the parameters' JSON schema: {schema})") from error
    except Exception as error:
        message = await _failure_message(tool, context, error)
        if message is None:
            raise
        logger.warning("tool %s failed; the model reads %r", tool.name, message, exc_info=error)
        raise ToolExecutionError(message) from error


async def _run_checked(agent: Agent[Any], tool: FunctionTool, context: ToolContext[Any], arguments: str) -> object:
    for guardrail in tool.tool_input_guardrails or []:
        behavior = (await guardrail.run(ToolInputGuardrailData(context=context, agent=agent))).behavior
        if behavior["type"] == "reject_content":
            raise ToolExecutionError(behavior["message"])
        if behavior["type"] == "raise_exception":
            raise ToolExecutionError(f"the tool input guardrail {guardrail.get_name()!r} tripped")
    hooks = agent.hooks or AgentHooks[Any]()
    await hooks.on_tool_start(context, agent, tool)
    output = await _invoke(tool, context, arguments)
    await hooks.on_tool_end(context, agent, tool, output)
    for output_guardrail in tool.tool_output_guardrails or []:
        checked = await output_guardrail.run(ToolOutputGuardrailData(context=context, agent=agent, output=output))
        if checked.behavior["type"] == "reject_content":
            return checked.behavior["message"]
        if checked.behavior["type"] == "raise_exception":
            raise ToolExecutionError(f"the tool output guardrail {output_guardrail.get_name()!r} tripped")
    return output


def output_text(tool: FunctionTool, raw_call: ResponseFunctionToolCall, output: object) -> str:
    """The tool's output as the model reads it: the SDK's conversion, text content blocks joined by
    newlines, other structured content (images, files) as its JSON."""
    try:
        item: Mapping[str, Any] = ItemHelpers.tool_call_output_item(raw_call, output,
                                                                     output_json_schema=tool.output_json_schema)
    except UserError as error:
        raise ToolExecutionError(f"the tool ran, but its output cannot be given to the model: {error}") from error
    converted = item["output"]
    if isinstance(converted, str):
        return converted
    parts = list(converted)
    if parts and all(isinstance(part, Mapping) and part.get("type") == "input_text" for part in parts):
        return "\n".join(str(part.get("text") or "") for part in parts)  # text content (an MCP tool's blocks)
    return json.dumps(parts, default=str)  # images and files: their JSON, since a record holds text


async def arguments_validator(agent: Agent[Any], user_context: object, tool_name: str) -> ArgumentsValidator | None:
    found = {tool.name: tool for tool in await agent.get_all_tools(RunContextWrapper(context=user_context))}.get(tool_name)
    return json_schema_validator(found.params_json_schema) if isinstance(found, FunctionTool) else None


async def run_tool(agent: Agent[Any], user_context: object, config: RunConfig, run: ToolRun[Items]) -> str:
    """Run the function tool ``run`` names (see the module docstring)."""
    record = run.call.tool_call
    raw_call = _raw_call(run.turn_messages(), record.tool_call_id)
    usage = sdk_usage(run.turn_usage())
    tools = await agent.get_all_tools(RunContextWrapper(context=user_context, usage=usage))
    function_tools = {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)}
    if (tool := function_tools.get(record.tool_name)) is None:
        raise unknown_tool_error(record.tool_name, function_tools)
    context: ToolContext[Any] = ToolContext(
        context=user_context, usage=usage, tool_name=record.tool_name, tool_call_id=record.tool_call_id,
        tool_arguments=record.arguments, tool_call=raw_call, agent=agent, run_config=config)
    return output_text(tool, raw_call, await _run_checked(agent, tool, context, record.arguments))


__all__ = ["ArgumentsValidator", "arguments_validator", "output_text", "run_tool"]
