"""``execute_deferred_tool_call`` for LangChain tools: one ``BaseTool``, run alone from its name and
the model's JSON arguments.

The tool runs through ``tool.ainvoke`` with a ``ToolCall`` (name, arguments, the model's call ID), as
LangChain's own tool node runs it, so the tool's callbacks, injected ``tool_call_id`` and its
``handle_tool_error`` / ``handle_validation_error`` settings behave as they do in an agent. The
``RunnableConfig`` it receives carries, under ``configurable``, ``dex_idempotency_key`` (the same on
every attempt of this call), ``dex_flow_id``, ``dex_tool_call_id`` and ``dex_attempt``; a tool that
declares a ``config: RunnableConfig`` parameter reads them.

Errors the model should see become ``ToolExecutionError``: a tool the agent does not have, arguments
that are not a JSON object or do not validate, a ``ToolException``, and a result the tool's own error
handling produced (a ``ToolMessage`` with status ``error``: its text). Any other exception is
unexpected and propagates (the tool Step's policy retries it or records the call).

The output is the tool's content as text (content blocks as their JSON); an artifact
(``response_format="content_and_artifact"``) is not kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from langchain_core.messages import ToolMessage
from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import ValidationError
from pydantic.v1 import ValidationError as ValidationErrorV1

from dex_agents.adapters.kit import invalid_arguments_error, unknown_tool_error
from dex_agents.adapters.langchain.messages import content_text
from dex_agents.shell.runner import DeferredToolExecution, ToolExecutionError, ToolExecutionResult

IDEMPOTENCY_KEY_CONFIG: Final = "dex_idempotency_key"
"""The ``configurable`` key of the call's idempotency key (``<flow_id>/<turn_id>/<tool_call_id>``)."""


def _arguments(call: DeferredToolExecution) -> dict[str, object]:
    record = call.tool_call
    try:
        arguments = json.loads(record.arguments or "{}")
    except ValueError as error:
        raise invalid_arguments_error(record.tool_name, f"not JSON ({error}): {record.arguments!r}") from error
    if not isinstance(arguments, dict):
        raise invalid_arguments_error(record.tool_name, f"expected a JSON object, got {record.arguments!r}")
    return arguments


def tool_config(call: DeferredToolExecution) -> RunnableConfig:
    """The ``RunnableConfig`` the tool runs with (see the module docstring)."""
    return {
        "configurable": {
            IDEMPOTENCY_KEY_CONFIG: call.idempotency_key,
            "dex_flow_id": call.flow_id,
            "dex_tool_call_id": call.tool_call.tool_call_id,
            "dex_attempt": call.attempt,
        },
        "run_name": call.tool_call.tool_name,
    }


async def execute_tool_call(tools: Mapping[str, BaseTool], call: DeferredToolExecution) -> ToolExecutionResult:
    """Run the tool ``call`` names with the model's arguments (see the module docstring)."""
    record = call.tool_call
    tool = tools.get(record.tool_name)
    if tool is None:
        raise unknown_tool_error(record.tool_name, tools)
    tool_call = ToolCall(name=record.tool_name, args=_arguments(call), id=record.tool_call_id, type="tool_call")
    try:
        output = await tool.ainvoke(tool_call, tool_config(call))
    except (ValidationError, ValidationErrorV1) as error:
        raise invalid_arguments_error(record.tool_name, str(error)) from error
    except ToolException as error:
        raise ToolExecutionError(str(error) or type(error).__name__) from error
    if isinstance(output, ToolMessage):
        text = content_text(output.content)
        if output.status == "error":
            raise ToolExecutionError(text)
        return ToolExecutionResult(output=text)
    return ToolExecutionResult(output=output if isinstance(output, str) else json.dumps(output, default=str))


__all__ = ["IDEMPOTENCY_KEY_CONFIG", "execute_tool_call", "tool_config"]
