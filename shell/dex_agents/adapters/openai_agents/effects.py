"""A ``FunctionTool``'s effect: ``with_tool_effect(tool, "read")`` sets the attribute ``dex_effect`` (the
kit's key; ``FunctionTool`` has no metadata mapping), which survives ``Agent.clone`` and ``copy.copy``;
an MCP tool's effect comes from its MCP annotations (``FunctionTool.mcp_annotations``). The session's
precedence: the Flow's ``tool_policies``, then this effect, then the Flow's default. A ``dex_effect``
that is not a ``ToolEffect`` value raises ``ValueError`` naming the tool (at Flow creation for the
agent's own tools), never falls back to another effect.
"""

from __future__ import annotations

from agents.tool import FunctionTool, function_tool

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY, SubAgentTool, native_function, tool_effect_from_metadata
from dex_agents.pure.values.session import ToolEffect


def with_tool_effect(tool: FunctionTool, effect: ToolEffect | str) -> FunctionTool:
    """Give ``tool`` its effect (``ToolEffect`` or its value; ``ValueError`` for another value); ``tool``."""
    value = effect.value if isinstance(effect, ToolEffect) else effect
    tool_effect_from_metadata(tool.name, {DEX_EFFECT_METADATA_KEY: value})  # raises for a bad value
    setattr(tool, DEX_EFFECT_METADATA_KEY, value)
    return tool


def native_subagent_tool(subagent: SubAgentTool) -> FunctionTool:
    """``subagent`` (``kit.subagent_tool``) as a ``FunctionTool`` with its effect, for the parent ``Agent``."""
    made = function_tool(native_function(subagent), name_override=subagent.name, description_override=subagent.description)
    return with_tool_effect(made, subagent.effect)


def tool_effect(tool: FunctionTool) -> ToolEffect | None:
    """The effect ``tool`` carries (``dex_effect``, else MCP annotations), or ``None`` (``ValueError``: a
    ``dex_effect`` that is not a ``ToolEffect`` value)."""
    metadata: dict[str, object] = {}
    if hasattr(tool, DEX_EFFECT_METADATA_KEY):
        metadata[DEX_EFFECT_METADATA_KEY] = getattr(tool, DEX_EFFECT_METADATA_KEY)
    elif tool.mcp_annotations is not None:  # MCP's camelCase hints, as the kit reads them
        hints = tool.mcp_annotations.model_dump(by_alias=True).items()
        metadata["annotations"] = {name: value for name, value in hints if isinstance(value, bool)}
    return tool_effect_from_metadata(tool.name, metadata)


__all__ = ["tool_effect", "with_tool_effect"]
