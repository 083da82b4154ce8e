"""A tool's effect from its framework metadata: the ``dex_effect`` key, else MCP annotations.

Precedence inside the metadata: ``{"dex_effect": "<ToolEffect value>"}`` first, then MCP annotation
hints under ``"annotations"`` (camelCase keys, as MCP servers send them and Pydantic AI stores them).
The session then applies its own precedence: the Flow's ``tool_policies`` over this framework effect
over the Flow's default effect.

Invariant: a ``dex_effect`` value that is not a ``ToolEffect`` raises ``ValueError`` naming the tool;
it never falls back silently to another effect (a misspelt ``"read_only"`` on a refund tool must not
make it run without approval).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from dex_agents.pure.machine.policies import tool_effect_from_mcp_annotations
from dex_agents.pure.values.runner import McpToolAnnotations
from dex_agents.pure.values.session import ToolEffect

DEX_EFFECT_METADATA_KEY: Final = "dex_effect"
"""The metadata key that carries a tool's effect (a ``ToolEffect`` value)."""

MCP_ANNOTATIONS_METADATA_KEY: Final = "annotations"
"""The metadata key under which MCP annotation hints sit."""

_EFFECTS: Final = ", ".join(repr(effect.value) for effect in ToolEffect)


def _hint(annotations: Mapping[object, object], key: str) -> bool | None:
    found = annotations.get(key)
    return found if isinstance(found, bool) else None


def tool_effect_from_metadata(tool_name: str, metadata: Mapping[str, object] | None) -> ToolEffect | None:
    """The effect ``metadata`` gives ``tool_name``, or ``None`` when it gives none.

    Raises:
        ValueError: ``dex_effect`` is present but not a ``ToolEffect`` value.
    """
    if not metadata:
        return None
    if DEX_EFFECT_METADATA_KEY in metadata:
        value = metadata[DEX_EFFECT_METADATA_KEY]
        if isinstance(value, str) and value in ToolEffect.__members__.values():
            return ToolEffect(value)
        raise ValueError(f"tool {tool_name!r} has {DEX_EFFECT_METADATA_KEY}={value!r}; expected one of {_EFFECTS}")
    annotations = metadata.get(MCP_ANNOTATIONS_METADATA_KEY)
    if isinstance(annotations, Mapping):
        return tool_effect_from_mcp_annotations(
            McpToolAnnotations(
                read_only_hint=_hint(annotations, "readOnlyHint"),
                destructive_hint=_hint(annotations, "destructiveHint"),
                idempotent_hint=_hint(annotations, "idempotentHint"),
                open_world_hint=_hint(annotations, "openWorldHint"),
            )
        )
    return None


__all__ = ["DEX_EFFECT_METADATA_KEY", "MCP_ANNOTATIONS_METADATA_KEY", "tool_effect_from_metadata"]
