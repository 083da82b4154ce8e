"""A Pydantic AI ``Agent`` as a session runner, and its Flow factory.

``run_model_step`` is ``model_step.run_model_step`` (one model call, every function call deferred);
``execute_deferred_tool_call`` is ``tools.execute_tool_call`` (one tool, with its restored
``RunContext``). Model errors that a retry cannot fix (a rejected request or key, an unknown model,
exhausted quota, a configuration error) become ``NonRetryableModelError``, so the turn fails at once
with that error instead of repeating it three times.

Tool effects: the Flow's ``tool_policies`` first, then the tool's metadata ``{"dex_effect": ...}``,
then MCP annotations (``metadata["annotations"]``), then the Flow's default effect. A call of an
unknown tool is classified ``read``, so it fails at once without an approval.

Not deferrable (at-least-once, repeated with ``RunModel``): tools that a Pydantic AI capability runs
inside the model call, and provider-native tools (these run at the provider).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, Unpack, final

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError, ModelQuotaExceededError, ModelRequestRejectedError, UserError
from pydantic_ai.toolsets import FunctionToolset

from dex_agents.adapters.kit import SessionFlowOptions, is_final_client_status, tool_effect_from_metadata, user_message
from dex_agents.adapters.pydantic_ai.messages import user_prompt_item
from dex_agents.adapters.pydantic_ai.model_step import run_model_step
from dex_agents.adapters.pydantic_ai.tools import execute_tool_call
from dex_agents.pure.runner_values import AgentTurnOutcome
from dex_agents.pure.values import FrameworkMessage
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    NonRetryableModelError,
    ToolExecutionResult,
)

DepsT = TypeVar("DepsT")


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error``."""
    if isinstance(error, ModelRequestRejectedError | ModelQuotaExceededError | UserError):
        return True
    return isinstance(error, ModelHTTPError) and is_final_client_status(error.status_code)


@final
class PydanticAIRunner(Generic[DepsT]):
    """``AgentFrameworkRunner`` for a Pydantic AI ``Agent`` (keeps no state between calls)."""

    def __init__(self, agent: Agent[DepsT, Any], *, deps: DepsT | None = None) -> None:
        if agent.model is None:
            raise ValueError("the agent has no model: give Agent(model=...) (a Model or 'provider:name')")
        self._agent = agent
        self._deps = deps

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text, user_prompt_item(text))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        try:
            return await run_model_step(self._agent, self._deps, turn)
        except Exception as error:
            if is_non_retryable(error) and not isinstance(error, NonRetryableModelError):
                raise NonRetryableModelError(f"{type(error).__name__}: {error}") from error
            raise

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return await execute_tool_call(self._agent, self._deps, call)


def _check_tool_metadata(agent: Agent[Any, Any]) -> None:
    """Raise ``ValueError`` for a function tool whose ``dex_effect`` metadata is not an effect."""
    for toolset in agent.toolsets:
        if isinstance(toolset, FunctionToolset):
            for name, tool in toolset.tools.items():
                tool_effect_from_metadata(name, tool.metadata)


def create_pydantic_ai_session_flow(
    agent: Agent[Any, Any],
    flow_type: str,
    *,
    deps: object = None,
    **options: Unpack[SessionFlowOptions],
) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``agent``; ``options`` are those of
    ``create_agent_session_flow``.

    Raises:
        ValueError: the agent has no model, a tool's ``dex_effect`` metadata is not an effect, or an
            option is out of range.
    """
    _check_tool_metadata(agent)
    return create_agent_session_flow(PydanticAIRunner(agent, deps=deps), flow_type, **options)


__all__ = ["PydanticAIRunner", "create_pydantic_ai_session_flow", "is_non_retryable"]
