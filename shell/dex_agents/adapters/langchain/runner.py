"""A LangChain chat model and its tools as a session runner, and its Flow factory.

``run_model_step`` is ``model_step.run_model_step`` (one model call, every function call deferred);
``execute_deferred_tool_call`` is ``tools.execute_tool_call`` (one tool, from its name and JSON
arguments). Model errors a retry cannot fix become ``NonRetryableModelError`` (``is_non_retryable``),
so the turn fails at once instead of repeating the call three times.

Tool effects: the Flow's ``tool_policies`` first, then the tool's metadata ``{"dex_effect": ...}``,
then MCP annotations (``metadata["annotations"]``), then the Flow's default effect. A call of an
unknown tool, or with arguments that are not JSON, is classified ``read``, so it fails at once
without an approval.

Refused at creation (``TypeError`` / ``ValueError``): a model that is not a ``BaseChatModel`` (a model
with tools already bound, a chain), a tool that is not a ``BaseTool`` (provider built-in tool dicts,
plain functions), duplicate tool names, a ``return_direct`` tool (the session always lets the model
read a result), a ``dex_effect`` that is not an effect, a ``response_format`` that is not a Pydantic
model or whose name is a tool's, and a model that cannot bind tools when tools are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack, final

from langchain_core.exceptions import ModelError
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from dex_agents.adapters.kit import (
    RETRYABLE_CLIENT_STATUSES,
    SessionFlowOptions,
    is_final_client_status,
    tool_effect_from_metadata,
    user_message,
)
from dex_agents.adapters.langchain.messages import user_prompt_item
from dex_agents.adapters.langchain.model_step import BoundModel, ModelSetup, run_model_step
from dex_agents.adapters.langchain.structured_output import StructuredOutput, structured_output
from dex_agents.adapters.langchain.tools import execute_tool_call
from dex_agents.pure.runner_values import AgentTurnOutcome
from dex_agents.pure.values import FrameworkMessage
from dex_agents.shell.flow import AgentSessionFlow, create_agent_session_flow
from dex_agents.shell.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    NonRetryableModelError,
    ToolExecutionResult,
)


def _status_code(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def is_non_retryable(error: BaseException) -> bool:
    """Whether a retry of the model call cannot succeed after ``error``.

    An HTTP status of 408, 409, 425 or 429 is retryable; otherwise LangChain's own
    ``langchain_core.exceptions.ModelError`` classification decides (``is_retryable``: authentication,
    permission, invalid request, unknown model, context overflow and refusal are not); otherwise an
    exception with an ``int`` ``status_code`` (openai's and anthropic's ``APIStatusError``) is
    non-retryable when that status is 4xx. Everything else is retried.
    """
    status = _status_code(error)
    if status in RETRYABLE_CLIENT_STATUSES:
        return False
    if isinstance(error, ModelError):
        return not error.is_retryable
    return status is not None and is_final_client_status(status)


def _checked_tools(tools: Sequence[BaseTool]) -> dict[str, BaseTool]:
    by_name: dict[str, BaseTool] = {}
    for tool in tools:
        if not isinstance(tool, BaseTool):
            raise TypeError(f"tools must be LangChain BaseTools (StructuredTool.from_function, @tool), got {tool!r}")
        if tool.name in by_name:
            raise ValueError(f"two tools are named {tool.name!r}")
        if tool.return_direct:
            raise ValueError(f"tool {tool.name!r} has return_direct=True, which a session does not support: "
                             "the model always reads a tool's result")
        by_name[tool.name] = tool
    return by_name


def _bound(model: BaseChatModel, tools: Sequence[BaseTool], output: StructuredOutput | None) -> BoundModel:
    if not tools and output is None:
        return model
    bindable: list[BaseTool | type[BaseModel]] = list(tools)
    if output is not None:
        bindable.append(output.schema)
    try:
        if output is not None:
            bound: BoundModel = model.bind_tools(bindable, tool_choice="any")
        else:
            bound = model.bind_tools(bindable)
    except NotImplementedError as error:
        raise ValueError(f"the model {type(model).__name__} cannot bind tools (bind_tools is not implemented)") from error
    return bound


def model_setup(model: BaseChatModel, tools: Sequence[BaseTool], *, system_prompt: str | None = None,
                response_format: type[BaseModel] | None = None) -> ModelSetup:
    """The checked setup of a runner (see the module docstring for what is refused)."""
    if not isinstance(model, BaseChatModel):
        raise TypeError(f"model must be a LangChain BaseChatModel (give the tools separately), got {model!r}")
    by_name = _checked_tools(tools)
    effects = {name: tool_effect_from_metadata(name, tool.metadata) for name, tool in by_name.items()}
    output = structured_output(response_format)
    if output is not None and output.tool_name in by_name:
        raise ValueError(f"response_format {output.tool_name!r} has the name of a tool")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise TypeError(f"system_prompt must be a str, got {system_prompt!r}")
    return ModelSetup(model=model, bound=_bound(model, list(by_name.values()), output), tools=by_name,
                      effects=effects, system_prompt=system_prompt, output=output)


@final
class LangChainRunner:
    """``AgentFrameworkRunner`` for a LangChain chat model and its tools (keeps no state between calls)."""

    def __init__(self, model: BaseChatModel, tools: Sequence[BaseTool], *, system_prompt: str | None = None,
                 response_format: type[BaseModel] | None = None) -> None:
        self._setup = model_setup(model, tools, system_prompt=system_prompt, response_format=response_format)

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text, user_prompt_item(text))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        try:
            return await run_model_step(self._setup, turn)
        except Exception as error:
            if is_non_retryable(error) and not isinstance(error, NonRetryableModelError):
                raise NonRetryableModelError(f"{type(error).__name__}: {error}") from error
            raise

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return await execute_tool_call(self._setup.tools, call)


def create_langchain_session_flow(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    flow_type: str,
    *,
    system_prompt: str | None = None,
    response_format: type[BaseModel] | None = None,
    **options: Unpack[SessionFlowOptions],
) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``model`` with ``tools``.

    Args:
        model: The chat model (``BaseChatModel``); the tools are bound to it here.
        tools: Its tools (``BaseTool``s); ``metadata={"dex_effect": "read"}`` gives a tool's effect.
        flow_type: The Dex Flow type.
        system_prompt: Sent first on every model call (not stored in the session).
        response_format: A Pydantic model for structured output ("tool strategy", as ``create_agent``).
        options: The keyword options of ``create_agent_session_flow``.

    Raises:
        TypeError, ValueError: see the module docstring, or an option out of range.
    """
    runner = LangChainRunner(model, tools, system_prompt=system_prompt, response_format=response_format)
    return create_agent_session_flow(runner, flow_type, **options)


__all__ = ["LangChainRunner", "create_langchain_session_flow", "is_non_retryable", "model_setup"]
