"""``execute_deferred_tool_call`` for a Pydantic AI ``Agent``: one function tool, run alone.

The tool gets the ``RunContext`` its run would have given it: ``RunModel`` serialised it for the
call (Pydantic AI's ``DurableRunContext`` form, carried in the run state) and this Step restores it
with the Worker's agent and ``deps``. Fields that cannot cross a process boundary (``model``,
``messages``, ``prompt``, ...) raise Pydantic AI's own clear error when a tool reads them.

Errors the model should see become ``ToolExecutionError``: ``ModelRetry`` and ``ToolFailed`` (their
message), arguments that do not validate, and a tool the agent does not have.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.durable_exec import DurabilityEngineSpec, DurableRunContext
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset

from dex_agents.adapters.kit import RunStateError, decode_run_state, invalid_arguments_error, unknown_tool_error
from dex_agents.adapters.pydantic_ai.model_step import RUN_STATE_ADAPTER, RUN_STATE_VERSION
from dex_agents.shell.runner import DeferredToolExecution, ToolExecutionError, ToolExecutionResult

DEX_ENGINE_SPEC: Final = DurabilityEngineSpec(engine_name="Dex", durable_unit_noun="Step",
                                              durable_container_noun="Flow")
"""How Pydantic AI's durable run context names Dex in its errors."""


def restored_context(agent: Agent[Any, Any], deps: object, call: DeferredToolExecution) -> RunContext[Any]:
    """The call's ``RunContext``, restored from the run state of the round that deferred it.

    Raises:
        ToolExecutionError: the run state is missing or unreadable, or holds no context for the call
            (the tool does not run; decoding cannot succeed on a retry).
    """
    record = call.tool_call
    if call.framework_run_state is None:
        raise ToolExecutionError(f"tool call {record.tool_call_id!r} has no run state to restore its RunContext from")
    try:
        state = decode_run_state(call.framework_run_state, adapter=RUN_STATE_ADAPTER, version=RUN_STATE_VERSION).state
    except RunStateError as error:
        raise ToolExecutionError(str(error)) from error
    contexts = state.get("contexts") if isinstance(state, dict) else None
    serialised = contexts.get(record.tool_call_id) if isinstance(contexts, dict) else None
    if not isinstance(serialised, dict):
        raise ToolExecutionError(f"the run state holds no RunContext for tool call {record.tool_call_id!r}")
    return DurableRunContext.restore(serialised, deps=deps, agent=agent, engine_spec=DEX_ENGINE_SPEC)


async def _run_in(toolset: AbstractToolset[Any], tool: Any, call: DeferredToolExecution,
                  ctx: RunContext[Any]) -> ToolExecutionResult:
    record = call.tool_call
    try:
        arguments = tool.args_validator.validate_json(record.arguments or "{}")
    except ValidationError as error:
        raise invalid_arguments_error(record.tool_name, str(error)) from error
    try:
        output = await toolset.call_tool(record.tool_name, arguments, ctx, tool)
    except (ModelRetry, ToolFailed) as error:
        raise ToolExecutionError(str(error.message)) from error
    except ValidationError as error:
        raise invalid_arguments_error(record.tool_name, str(error)) from error
    if isinstance(output, str):
        return ToolExecutionResult(output=output)
    return ToolExecutionResult(output=ToolReturnPart(record.tool_name, output).model_response_str())


async def execute_tool_call(agent: Agent[Any, Any], deps: object, call: DeferredToolExecution) -> ToolExecutionResult:
    """Run the function tool ``call`` names with the model's arguments (see the module docstring)."""
    ctx = restored_context(agent, deps, call)
    known: list[str] = []
    for toolset in agent.toolsets:
        async with toolset:
            tools = await toolset.get_tools(ctx)
            tool = tools.get(call.tool_call.tool_name)
            known.extend(name for name, found in tools.items() if found.tool_def.kind == "function")
            if tool is not None and tool.tool_def.kind == "function":
                return await _run_in(toolset, tool, call, ctx)
    raise unknown_tool_error(call.tool_call.tool_name, known)


__all__ = ["DEX_ENGINE_SPEC", "execute_tool_call", "restored_context"]
