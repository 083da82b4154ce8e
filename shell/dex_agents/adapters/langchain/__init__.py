"""The LangChain adapter: ``create_langchain_session_flow(model, tools, flow_type, **options)``.

A session Flow from a LangChain ``BaseChatModel`` and its ``BaseTool``s (the pieces of ``create_agent``;
no langgraph), a binding of the turn template (``kit.turn``; the details: ``binding``). Needs the
``langchain`` extra. Tool effects: the Flow's ``tool_policies``, then ``metadata={"dex_effect": ...}``,
then MCP annotations (``metadata["annotations"]``), then the Flow's default effect.

Refused at creation (``TypeError`` / ``ValueError``): a model that is not a ``BaseChatModel`` (a model
with tools already bound, a chain), a tool that is not a ``BaseTool`` (provider built-in tool dicts,
plain functions), duplicate tool names, a ``return_direct`` tool (the model always reads a result), a
``dex_effect`` that is not an effect, a ``response_format`` that is not a Pydantic model or whose name
is a tool's, and a model that cannot bind tools when tools are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY, SessionFlowOptions, SubAgentTool, native_function
from dex_agents.adapters.kit.turn import OUTPUT_NOT_PROCESSED, TurnRunner, create_session_flow
from dex_agents.adapters.langchain.binding import IDEMPOTENCY_KEY_CONFIG, LangChainBinding, is_context_window_exceeded
from dex_agents.adapters.langchain.binding import is_non_retryable
from dex_agents.shell.flow import AgentSessionFlow


def LangChainRunner(model: BaseChatModel, tools: Sequence[BaseTool], *, system_prompt: str | None = None,  # noqa: N802
                    response_format: type[BaseModel] | None = None) -> TurnRunner[BaseMessage]:
    """The session runner (``AgentFrameworkRunner``) of ``model`` with ``tools``."""
    return TurnRunner(LangChainBinding(model, tools, system_prompt=system_prompt, response_format=response_format))


def native_subagent_tool(subagent: SubAgentTool) -> StructuredTool:
    """``subagent`` (``kit.subagent_tool``) as a LangChain ``StructuredTool`` for the parent's tools."""
    return StructuredTool.from_function(coroutine=native_function(subagent), name=subagent.name,
                                        description=subagent.description,
                                        metadata={DEX_EFFECT_METADATA_KEY: subagent.effect.value})


def create_langchain_session_flow(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    flow_type: str,
    *,
    system_prompt: str | None = None,
    response_format: type[BaseModel] | None = None,
    **options: Unpack[SessionFlowOptions],
) -> AgentSessionFlow:
    """A session Flow of type ``flow_type`` driven by ``model`` (a ``BaseChatModel``; the tools are bound
    here, once) with ``tools`` (``BaseTool``s; ``metadata={"dex_effect": "read"}`` gives an effect).
    ``system_prompt`` is sent first on every model call (never stored); ``response_format`` is a Pydantic
    model for structured output ("tool strategy"); ``options`` are ``create_agent_session_flow``'s.
    Raises ``TypeError`` / ``ValueError`` (see the module docstring, or an option out of range)."""
    binding = LangChainBinding(model, tools, system_prompt=system_prompt, response_format=response_format)
    return create_session_flow(binding, flow_type, **options)


__all__ = ["DEX_EFFECT_METADATA_KEY", "IDEMPOTENCY_KEY_CONFIG", "OUTPUT_NOT_PROCESSED", "LangChainBinding",
           "LangChainRunner", "create_langchain_session_flow", "is_context_window_exceeded", "is_non_retryable",
           "native_subagent_tool"]
