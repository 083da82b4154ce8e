"""The ``ToolExecutionError``s every adapter raises for a call the framework cannot run.

The texts are the same for every adapter, so the conformance suite can check them and a model sees
the same sentence whichever framework runs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from dex_agents.shell.runner import ToolExecutionError


def unknown_tool_error(tool_name: str, known_tools: Iterable[str]) -> ToolExecutionError:
    """The model called a tool the agent does not have."""
    known = sorted(set(known_tools))
    listed = ", ".join(repr(name) for name in known) if known else "none"
    return ToolExecutionError(f"Unknown tool {tool_name!r}; the available tools are: {listed}")


def invalid_arguments_error(tool_name: str, detail: str) -> ToolExecutionError:
    """The model's arguments for ``tool_name`` do not validate (``detail`` says why)."""
    return ToolExecutionError(f"Invalid arguments for tool {tool_name!r}: {detail}")


__all__ = ["invalid_arguments_error", "unknown_tool_error"]
