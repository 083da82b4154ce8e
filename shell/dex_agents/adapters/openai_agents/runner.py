"""An OpenAI Agents SDK ``Agent`` as a ``TurnBinding`` of the turn template, and its Flow factory.

``call_model`` and ``summarize`` are ``model``'s (one call of the agent's ``Model``, every function
call deferred); ``run_tool`` is ``tools.run_tool`` (one tool, with a rebuilt ``ToolContext``); the
message type is ``items.Items`` (one stored message's input items). Model errors that a retry cannot
fix become ``NonRetryableModelError``, so the turn fails at once instead of repeating the error
three times: an ``openai`` status error with a 4xx status other than 408, 409, 425 and 429, a 429
whose code is ``insufficient_quota``, the ``openai`` client's own configuration error (a bare
``OpenAIError``, such as missing credentials), the SDK's ``UserError`` (a configuration error) and
``ModelRefusalError``, and a guardrail tripwire. A status error whose code is
``context_length_exceeded``, or a "prompt is too long" error, anywhere in the cause chain, is the
context window exceeded (``ContextWindowExceededError``). Everything else is retried by ``RunModel``.

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

from collections.abc import Iterable, Sequence
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
from dex_agents.adapters.kit.turn import CallRef, ModelAnswer, ModelCall, RoundAnswer, ToolRun, TurnRunner, create_session_flow
from dex_agents.adapters.openai_agents import model, tools
from dex_agents.adapters.openai_agents.effects import tool_effect
from dex_agents.adapters.openai_agents.items import (
    Items,
    framework_messages,
    function_calls,
    is_response,
    load_items,
    output_items,
    user_item,
)
from dex_agents.pure.runner_values import AgentTurnOutcome
from dex_agents.pure.values import FrameworkMessage
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.runner import (
    AgentEventWriter,
    AgentTurnContext,
    DeferredToolExecution,
    HistorySummaryRequest,
    HistorySummaryResult,
    ToolExecutionResult,
)

ContextT = TypeVar("ContextT")

_LOCAL_TOOLS: Final = (ComputerTool, LocalShellTool, ShellTool, ApplyPatchTool, CustomTool, ProgrammaticToolCallingTool)


def _chain(error: BaseException, *, implicit: bool = False) -> Iterable[BaseException]:
    """``error`` and the errors it was raised from (``implicit``: also those it was raised while handling)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (current.__context__ if implicit else None)


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error`` (or an error it was raised from)."""
    for cause in _chain(error):
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


def _error_code(error: APIStatusError) -> object:
    body = error.body.get("error", error.body) if isinstance(error.body, dict) else None
    return error.code or (body.get("code") if isinstance(body, dict) else None)


def is_context_window_exceeded(error: BaseException) -> bool:
    """Whether ``error`` (or any error in its chain) says the input exceeds the model's context window."""
    return any((isinstance(cause, APIStatusError) and _error_code(cause) == "context_length_exceeded")
               or "prompt is too long" in str(cause).lower() for cause in _chain(error, implicit=True))


@final
class OpenAIAgentsBinding:
    """The ``TurnBinding[Items]`` of an ``agents.Agent`` (see the module docstring); ``context`` is the
    SDK's run context object of every Step."""

    adapter: Final = "openai_agents"
    run_state_version: Final = 2

    def __init__(self, agent: Agent[Any], context: object = None) -> None:
        self.agent = agent
        self.context = context
        self.config = RunConfig()  # the SDK's defaults: its model provider, tracing settings

    def user_item(self, text: str) -> str:
        return user_item(text)

    def parse_item(self, data: str | object) -> Sequence[Items]:
        return [load_items(data)]

    def copy_message(self, message: Items) -> Items:
        return [dict(item) for item in message]

    def dump_messages(self, messages: Sequence[Items]) -> object:
        return list(messages)

    def load_messages(self, data: object) -> list[Items]:
        if not isinstance(data, list):
            raise ValueError("the turn's messages are not a JSON list")
        return [load_items(items) for items in data]

    def to_framework_messages(self, messages: Sequence[Items]) -> list[FrameworkMessage]:
        return framework_messages(messages)

    def response_calls(self, message: Items) -> Sequence[CallRef] | None:
        if not is_response(message):
            return None
        return [CallRef(tool_call_id=str(call.get("call_id")), tool_name=str(call.get("name")))
                for call in function_calls(message)]

    def answer_round(self, answers: Sequence[RoundAnswer]) -> list[Items]:
        return [output_items(answer.tool_call_id, answer.text) for answer in answers]

    async def call_model(self, call: ModelCall[Items]) -> ModelAnswer[Items]:
        return await model.call_model(self.agent, self.context, self.config, call)

    async def run_tool(self, run: ToolRun[Items]) -> str:
        return await tools.run_tool(self.agent, self.context, self.config, run)

    async def summarize(self, instructions: str, transcript: str, events: AgentEventWriter) -> HistorySummaryResult:
        return await model.summarize(self.agent, self.config, instructions, transcript)

    def is_non_retryable(self, error: BaseException) -> bool:
        return is_non_retryable(error)

    def is_context_window_exceeded(self, error: BaseException) -> bool:
        return is_context_window_exceeded(error)


@final
class OpenAIAgentsRunner(Generic[ContextT]):
    """The session runner of an ``agents.Agent``: the template's ``TurnRunner`` of its binding.

    ``context`` is the SDK's run context object, given to instructions, tools, guardrails and hooks
    in every Step of this Worker (through ``RunContextWrapper.context``); what a Step changes in it
    stays in that Worker process.
    """

    def __init__(self, agent: Agent[ContextT], *, context: ContextT | None = None) -> None:
        self._runner = TurnRunner(OpenAIAgentsBinding(agent, context))

    def build_user_message(self, text: str) -> FrameworkMessage:
        return self._runner.build_user_message(text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        return await self._runner.run_model_step(turn)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return await self._runner.execute_deferred_tool_call(call)

    async def summarize_history(self, request: HistorySummaryRequest) -> HistorySummaryResult:
        return await self._runner.summarize_history(request)


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
        model.output_schema(agent)
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
    return create_session_flow(OpenAIAgentsBinding(agent, context), flow_type, **options)


__all__ = ["OpenAIAgentsBinding", "OpenAIAgentsRunner", "check_agent", "create_openai_agents_session_flow",
           "is_context_window_exceeded", "is_non_retryable"]
