"""The OpenAI Agents SDK adapter: ``create_openai_agents_session_flow(agent, flow_type, **options)``.

Needs the ``openai-agents`` extra (from a checkout: ``pip install ".[openai-agents]"``). A function tool's
effect: ``with_tool_effect(function_tool(f), "read")`` (the ``dex_effect`` attribute), else its MCP
annotations, else the Flow's policies and default.
"""

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY
from dex_agents.adapters.openai_agents.runner import is_context_window_exceeded, is_non_retryable
from dex_agents.adapters.openai_agents.effects import native_subagent_tool, tool_effect, with_tool_effect
from dex_agents.adapters.openai_agents.runner import OpenAIAgentsRunner, check_agent, create_openai_agents_session_flow

__all__ = ["DEX_EFFECT_METADATA_KEY", "OpenAIAgentsRunner", "check_agent", "create_openai_agents_session_flow",
           "is_context_window_exceeded", "is_non_retryable", "native_subagent_tool", "tool_effect", "with_tool_effect"]
