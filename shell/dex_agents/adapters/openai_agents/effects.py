"""A ``FunctionTool``'s effect, as the SDK lets a tool carry it.

``FunctionTool`` has no metadata mapping, so the effect rides on the tool object itself, under the
kit's key: ``with_tool_effect(tool, "read")`` sets the attribute ``dex_effect`` (a ``ToolEffect``
value) and returns the tool. It survives ``Agent.clone`` and ``copy.copy``. An MCP tool's effect
comes from its MCP annotations (``FunctionTool.mcp_annotations``), read as the kit reads MCP hints.

Precedence (the session's): the Flow's ``tool_policies``, then this effect, then the Flow's default.

Invariant: a ``dex_effect`` that is not a ``ToolEffect`` value raises ``ValueError`` naming the tool
(at Flow creation for the agent's own tools), never falls back to another effect.
"""

from __future__ import annotations

from typing import Final

from agents.tool import FunctionTool

from dex_agents.adapters.kit import DEX_EFFECT_METADATA_KEY, tool_effect_from_metadata
from dex_agents.pure.values import ToolEffect

_MCP_HINTS: Final = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}


def with_tool_effect(tool: FunctionTool, effect: ToolEffect | str) -> FunctionTool:
    """Give ``tool`` its effect (``ToolEffect`` or its value) and return it.

    Raises:
        ValueError: ``effect`` is not a ``ToolEffect`` value.
    """
    value = effect.value if isinstance(effect, ToolEffect) else effect
    tool_effect_from_metadata(tool.name, {DEX_EFFECT_METADATA_KEY: value})  # raises for a bad value
    setattr(tool, DEX_EFFECT_METADATA_KEY, value)
    return tool


def _annotations(tool: FunctionTool) -> dict[str, object] | None:
    found = tool.mcp_annotations
    if found is None:
        return None
    hints: dict[str, object] = {}
    for camel, snake in _MCP_HINTS.items():
        value = getattr(found, snake, getattr(found, camel, None))
        if isinstance(value, bool):
            hints[camel] = value
    return hints


def tool_effect(tool: FunctionTool) -> ToolEffect | None:
    """The effect ``tool`` carries (``dex_effect``, else MCP annotations), or ``None``.

    Raises:
        ValueError: ``dex_effect`` is set but not a ``ToolEffect`` value.
    """
    metadata: dict[str, object] = {}
    if hasattr(tool, DEX_EFFECT_METADATA_KEY):
        metadata[DEX_EFFECT_METADATA_KEY] = getattr(tool, DEX_EFFECT_METADATA_KEY)
    else:
        annotations = _annotations(tool)
        if annotations is not None:
            metadata["annotations"] = annotations
    return tool_effect_from_metadata(tool.name, metadata)


__all__ = ["tool_effect", "with_tool_effect"]
