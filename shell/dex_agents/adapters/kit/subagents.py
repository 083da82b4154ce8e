"""A sub-agent tool (``shell.subagents.SubAgentTool``) in the form every framework wraps: a plain async
function ``<name>(task: str) -> str`` with the tool's description as its docstring and its effect under
``DEX_EFFECT_METADATA_KEY`` (read back by ``tool_effect_from_metadata``).

Invariant: the function's body never runs: the session routes the tool's calls to the child session
(``AwaitSubAgent``); called anyway, it raises ``RuntimeError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dex_agents.adapters.kit.tool_effects import DEX_EFFECT_METADATA_KEY
from dex_agents.pure.machine.reducers import TASK_ARGUMENT
from dex_agents.shell.subagents import SubAgentTool


def native_function(tool: SubAgentTool) -> Callable[[str], Awaitable[str]]:
    """``tool`` as a plain async function, what each adapter's ``native_subagent_tool`` wraps."""
    name, child = tool.name, tool.child_flow_type

    async def delegate(task: str) -> str:
        raise RuntimeError(f"tool {name!r} runs as a child session of {child!r} (AwaitSubAgent), not here")

    delegate.__name__ = delegate.__qualname__ = name
    delegate.__doc__ = f"{tool.description}\n\nArgs:\n    {TASK_ARGUMENT}: The task for the sub-agent, in full.\n"
    setattr(delegate, DEX_EFFECT_METADATA_KEY, tool.effect.value)
    return delegate


__all__ = ["native_function"]
