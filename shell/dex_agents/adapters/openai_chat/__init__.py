"""The ``openai`` client, no framework: ``create_openai_chat_session_flow(client, model, tools, flow_type)``.

Plain functions as tools (``@tool(effect="read")``: its effect; ``native_subagent_tool``: a sub-agent's); a tool
raises ``ToolExecutionError`` for a failure the model reads (others: the tool Step's retry policy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Unpack

from openai import AsyncOpenAI

from dex_agents.adapters.kit import SessionFlowOptions, native_function as native_subagent_tool
from dex_agents.adapters.kit.turn import create_session_flow
from dex_agents.adapters.openai_chat.binding import OpenAIChatBinding, function_tool, tool
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.runner import ToolExecutionError


def create_openai_chat_session_flow(client: AsyncOpenAI, model: str, tools: Sequence[Callable[..., Any]],
                                    flow_type: str, *, instructions: str | None = None,
                                    model_settings: Mapping[str, Any] | None = None,
                                    **options: Unpack[SessionFlowOptions]) -> AgentSessionFlow:
    """A session Flow of type ``flow_type``: ``model`` through ``client`` with ``tools`` (``function_tool``);
    ``instructions``: the system message; ``model_settings``: more ``chat.completions.create`` arguments
    (``temperature``, ``response_format``, ...); ``options``: those of ``create_agent_session_flow``."""
    by_name = {made.schema["function"]["name"]: made for made in map(function_tool, tools)}
    if len(by_name) < len(tools):
        raise ValueError(f"two tools have the same name: {sorted(function.__name__ for function in tools)}")
    return create_session_flow(OpenAIChatBinding(client, model, by_name, instructions=instructions,
                                                 model_settings=model_settings or {}), flow_type, **options)


__all__ = ["OpenAIChatBinding", "ToolExecutionError", "create_openai_chat_session_flow", "function_tool",
           "native_subagent_tool", "tool"]
