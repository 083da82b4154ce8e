"""``FrameworkMessage`` builders: one per role, so an adapter fills only what its role has.

``framework_item`` is the framework-native JSON the session replays unchanged; the other fields are
display projections (spec: "Rebuild framework input from ``frameworkItem`` only").
"""

from __future__ import annotations

from dex_agents.pure.values import FrameworkMessage, MessageRole


def user_message(text: str | None, framework_item: str) -> FrameworkMessage:
    """A user message showing ``text`` (``None``: a request with no text to show, e.g. only instructions)."""
    return FrameworkMessage(role=MessageRole.USER, text=text, tool_call_id=None, tool_name=None,
                            tool_arguments=None, tool_output=None, framework_item=framework_item)


def assistant_message(
    framework_item: str,
    *,
    text: str | None = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    tool_arguments: str | None = None,
) -> FrameworkMessage:
    """A model response: its text, and the call it makes when it makes exactly one."""
    return FrameworkMessage(role=MessageRole.ASSISTANT, text=text, tool_call_id=tool_call_id, tool_name=tool_name,
                            tool_arguments=tool_arguments, tool_output=None, framework_item=framework_item)


def tool_message(framework_item: str, *, tool_call_id: str, tool_name: str, output: str) -> FrameworkMessage:
    """The result of one tool call, as the model reads it."""
    return FrameworkMessage(role=MessageRole.TOOL, text=None, tool_call_id=tool_call_id, tool_name=tool_name,
                            tool_arguments=None, tool_output=output, framework_item=framework_item)


__all__ = ["assistant_message", "tool_message", "user_message"]
