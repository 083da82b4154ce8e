"""The Pydantic AI adapter: ``create_pydantic_ai_session_flow(agent, flow_type, **options)``, a
binding of the turn template (``binding.PydanticAIBinding``; messages: ``messages``).

Needs the ``pydantic-ai`` extra (from a checkout: ``pip install ".[pydantic-ai]"``).
"""

from typing import Any, Unpack

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage
from pydantic_ai.toolsets import FunctionToolset

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY, SessionFlowOptions, SubAgentTool, native_function
from dex_agents.adapters.kit import tool_effect_from_metadata
from dex_agents.adapters.kit.turn import TurnRunner, create_session_flow
from dex_agents.adapters.pydantic_ai.binding import PydanticAIBinding, is_non_retryable
from dex_agents.shell.flow import AgentSessionFlow


def PydanticAIRunner(agent: Agent[Any, Any], *, deps: object = None) -> TurnRunner[ModelMessage]:  # noqa: N802
    """The session runner of ``agent`` (``ValueError``: the agent has no model)."""
    return TurnRunner(PydanticAIBinding(agent, deps))


def native_subagent_tool(subagent: SubAgentTool) -> Tool[Any]:
    """``subagent`` (``kit.subagent_tool``) as a Pydantic AI ``Tool`` for the parent ``Agent``'s tools."""
    return Tool(native_function(subagent), name=subagent.name, description=subagent.description,
                metadata={DEX_EFFECT_METADATA_KEY: subagent.effect.value})


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
    for toolset in agent.toolsets:
        if isinstance(toolset, FunctionToolset):
            for name, tool in toolset.tools.items():
                tool_effect_from_metadata(name, tool.metadata)
    return create_session_flow(PydanticAIBinding(agent, deps), flow_type, **options)


__all__ = ["DEX_EFFECT_METADATA_KEY", "PydanticAIRunner", "create_pydantic_ai_session_flow", "is_non_retryable",
           "native_subagent_tool"]
