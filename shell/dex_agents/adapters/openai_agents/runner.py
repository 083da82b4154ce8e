"""An OpenAI Agents SDK ``Agent`` as a session runner, and its Flow factory.

``run_model_step`` is ``model_step.run_model_step`` (one call of the agent's ``Model``, every
function call deferred); ``execute_deferred_tool_call`` is ``tools.execute_tool_call`` (one tool,
with a rebuilt ``ToolContext``). Model errors that a retry cannot fix become
``NonRetryableModelError``, so the turn fails at once instead of repeating the error three times:
an ``openai`` status error with a 4xx status other than 408, 409, 425 and 429, a 429 whose code is
``insufficient_quota``, the ``openai`` client's own configuration error (a bare ``OpenAIError``, such
as missing credentials), the SDK's ``UserError`` (a configuration error) and ``ModelRefusalError``,
and a guardrail tripwire. Everything else is retried by ``RunModel``.

What the factory refuses (``ValueError`` at Flow creation), because it could not run durably:
handoffs, tools the SDK runs on the Worker outside a function call (``ComputerTool``,
``LocalShellTool``, ``ShellTool``, ``ApplyPatchTool``, ``CustomTool``, ``ProgrammaticToolCallingTool``,
a client-executed ``ToolSearchTool``), a ``HostedMCPTool`` that asks for approvals, a
``tool_use_behavior`` other than ``"run_llm_again"``, a ``SandboxAgent``, two function tools with
one name, an output type the SDK cannot build a schema for, and a ``dex_effect`` that is not an
effect. Hosted tools (web search, file search, code interpreter, image generation, hosted MCP
without approvals, server tool search) run at the provider inside the model call: at least once
with ``RunModel``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Generic, TypeVar, Unpack, final

from agents import Agent, RunConfig
from agents.exceptions import (
    InputGuardrailTripwireTriggered,
    ModelRefusalError,
    OutputGuardrailTripwireTriggered,
    UserError,
)
from agents.tool import (
    ApplyPatchTool,
    ComputerTool,
    CustomTool,
    FunctionTool,
    HostedMCPTool,
    LocalShellTool,
    ProgrammaticToolCallingTool,
    ShellTool,
    Tool,
    ToolSearchTool,
)
from openai import APIStatusError, OpenAIError

from dex_agents.adapters.kit import SessionFlowOptions, is_final_client_status
from dex_agents.adapters.openai_agents.effects import tool_effect
from dex_agents.adapters.openai_agents.items import user_framework_message
from dex_agents.adapters.openai_agents.model_step import output_schema, run_model_step
from dex_agents.adapters.openai_agents.tools import execute_tool_call
from dex_agents.pure.runner_values import AgentTurnOutcome
from dex_agents.pure.values import FrameworkMessage
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    NonRetryableModelError,
    ToolExecutionResult,
)

ContextT = TypeVar("ContextT")

_LOCAL_TOOLS: Final = (ComputerTool, LocalShellTool, ShellTool, ApplyPatchTool, CustomTool, ProgrammaticToolCallingTool)


def _causes(error: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error`` (or an error it was raised from)."""
    for cause in _causes(error):
        if isinstance(cause, UserError | ModelRefusalError | InputGuardrailTripwireTriggered
                      | OutputGuardrailTripwireTriggered):
            return True
        if type(cause) is OpenAIError:  # the client's own configuration error, e.g. missing credentials
            return True
        if isinstance(cause, APIStatusError):
            status = cause.status_code
            if status == 429:
                return getattr(cause, "code", None) == "insufficient_quota"
            return is_final_client_status(status)
    return False


@final
class OpenAIAgentsRunner(Generic[ContextT]):
    """``AgentFrameworkRunner`` for an ``agents.Agent`` (keeps no state between calls).

    ``context`` is the SDK's run context object, given to instructions, tools, guardrails and hooks
    in every Step of this Worker (through ``RunContextWrapper.context``); what a Step changes in it
    stays in that Worker process.
    """

    def __init__(self, agent: Agent[ContextT], *, context: ContextT | None = None) -> None:
        self._agent = agent
        self._context = context
        self._config = RunConfig()  # the SDK's defaults: its model provider, tracing settings

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_framework_message(text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        try:
            return await run_model_step(self._agent, self._context, self._config, turn)
        except NonRetryableModelError:
            raise
        except Exception as error:
            if is_non_retryable(error):
                raise NonRetryableModelError(f"{type(error).__name__}: {error}") from error
            raise

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return await execute_tool_call(self._agent, self._context, self._config, call)


def _refusal(tool: Tool) -> str | None:
    """Why ``tool`` cannot run durably, or ``None``."""
    if isinstance(tool, _LOCAL_TOOLS):
        return (f"{type(tool).__name__} {getattr(tool, 'name', '')!r} runs on the Worker outside a function call, "
                "which the session cannot defer to its own Step; wrap the action in a function tool instead")
    if isinstance(tool, ToolSearchTool) and tool.execution == "client":
        return "a client-executed ToolSearchTool needs a second model call in the same step"
    if isinstance(tool, HostedMCPTool) and tool.tool_config.get("require_approval", "always") != "never":
        label = tool.tool_config.get("server_label", "")
        return (f"HostedMCPTool {label!r} asks for approvals, which need a model round trip the session "
                "cannot make durable; set require_approval='never' or use an MCP server (Agent(mcp_servers=...))")
    return None


def check_agent(agent: Agent[Any]) -> None:
    """Raise ``ValueError`` for what the adapter cannot run durably (see the module docstring)."""
    if not isinstance(agent, Agent):
        raise ValueError(f"expected an agents.Agent, got {type(agent).__name__}")
    if type(agent).__name__ == "SandboxAgent":
        raise ValueError("a SandboxAgent runs its sandbox actions inside the SDK's run loop; use an Agent")
    if agent.handoffs:
        raise ValueError(f"agent {agent.name!r} has handoffs, which switch agents inside the SDK's run loop and "
                         "cost a model call the session cannot defer; use agents as tools (agent.as_tool(...))")
    if agent.tool_use_behavior != "run_llm_again":
        raise ValueError(f"agent {agent.name!r} has tool_use_behavior={agent.tool_use_behavior!r}; the session "
                         "always gives tool results back to the model (tool_use_behavior='run_llm_again')")
    names: set[str] = set()
    for tool in agent.tools:
        refusal = _refusal(tool)
        if refusal is not None:
            raise ValueError(f"agent {agent.name!r}: {refusal}")
        if isinstance(tool, FunctionTool):
            if tool.name in names:
                raise ValueError(f"agent {agent.name!r} has two function tools named {tool.name!r}")
            names.add(tool.name)
            tool_effect(tool)  # raises for a dex_effect that is not an effect
    try:
        output_schema(agent)
    except UserError as error:
        raise ValueError(f"agent {agent.name!r}: {error}") from error


def create_openai_agents_session_flow(
    agent: Agent[Any],
    flow_type: str,
    *,
    context: object = None,
    **options: Unpack[SessionFlowOptions],
) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``agent``; ``context`` is the SDK run context
    object of every Step; ``options`` are those of ``create_agent_session_flow``.

    Raises:
        ValueError: the agent uses what the adapter cannot run durably (see the module docstring),
            a tool's ``dex_effect`` is not an effect, or an option is out of range.
    """
    check_agent(agent)
    return create_agent_session_flow(OpenAIAgentsRunner(agent, context=context), flow_type, **options)


__all__ = ["OpenAIAgentsRunner", "check_agent", "create_openai_agents_session_flow", "is_non_retryable"]
