"""Sub-agents: a tool whose calls run as child sessions of another agent (``subagent_tool``).

A call of the tool runs in the parent's ``AwaitSubAgent`` Step: its ``wait_for`` starts the child
session, a Dex SubFlow of the parent of the child agent's Flow type, whose initial message is the
call's ``task`` argument; the wait ends when the child's turn ends (the child session then completes
its Flow), and ``execute`` records the child's final text (or its failure) as the call's result and
adds the child's usage to the parent's. The child's tool calls are its own durable Steps, its
approvals its own interrupts (``SessionClient.pending_interrupts`` lists them through the parent).

Invariant: a sub-agent tool's effect is declared, by default the strongest effect among the child
Flow's tool policies (its ``default_tool_effect`` when it has none; ``read`` < ``idempotent_write`` <
``non_idempotent_write`` < ``unclassified``); it decides what a crash of the call records (``failed``
for a ``read``, else ``outcome_unknown``). The call itself waits for no approval by default
(``requires_approval=False``): the child asks for its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from dex_agents.pure.machine.policies import strongest_declared_effect
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell.runtime import SessionRuntime


@runtime_checkable
class ChildAgentFlow(Protocol):
    """What a sub-agent's child is: an agent's session Flow (``AgentSessionFlow``; this module does not
    import it, since ``shell.flow`` takes its sub-agent tools from here)."""

    runtime: SessionRuntime

    @property
    def serves_sessions(self) -> bool: ...

    def get_flow_type(self) -> str: ...


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentTool:
    """A tool whose calls run as child sessions of ``child`` (build it with ``subagent_tool``; each
    adapter's ``native_subagent_tool`` gives its framework form, built on ``kit.native_function``)."""

    name: str
    description: str
    child: ChildAgentFlow
    effect: ToolEffect
    requires_approval: bool

    @property
    def child_flow_type(self) -> str:
        """The child agent's Flow type."""
        return self.child.get_flow_type()

    @property
    def policy(self) -> ToolPolicy:
        """The tool's policy in the parent Flow."""
        return ToolPolicy(effect=self.effect, requires_approval=self.requires_approval, sub_agent=self.child_flow_type)


def subagent_tool(child: ChildAgentFlow, *, name: str, description: str, effect: ToolEffect | str | None = None,
                  requires_approval: bool = False) -> SubAgentTool:
    """A tool named ``name`` whose calls run as child sessions of ``child``'s agent.

    Give it to the parent's Flow (``sub_agents=[tool]``) and its framework-native form to the parent
    agent (each adapter's ``native_subagent_tool``); serve ``child`` on the same Workers.

    Raises:
        ValueError: a blank name or description, an unknown effect, or a child that serves no sessions.
        TypeError: ``child`` is not an ``AgentSessionFlow``.
    """
    if not isinstance(child, ChildAgentFlow):
        raise TypeError(f"subagent_tool's child must be an AgentSessionFlow, got {type(child).__name__}")
    if not child.serves_sessions:
        raise ValueError(f"subagent_tool's child {child.get_flow_type()!r} is a Client's definition; give the "
                         "Flow from create_agent_session_flow (or an adapter's factory)")
    texts: tuple[object, ...] = (name, description)
    if not all(isinstance(text, str) and text.strip() for text in texts):
        raise ValueError("subagent_tool needs a non-blank name and description")
    if not isinstance(requires_approval, bool):
        raise TypeError(f"requires_approval must be a bool, got {requires_approval!r}")
    config = child.runtime.config
    try:
        chosen = (strongest_declared_effect(config.tool_policies, config.default_tool_effect) if effect is None
                  else ToolEffect(effect))
    except ValueError:
        raise ValueError(f"subagent_tool {name!r} has unknown effect {effect!r}") from None
    return SubAgentTool(name=name, description=description, child=child, effect=chosen,
                        requires_approval=requires_approval)


def sub_agent_policies(tools: Sequence[SubAgentTool], policies: Mapping[str, ToolPolicy]) -> dict[str, ToolPolicy]:
    """``policies`` with each sub-agent tool's policy added.

    Raises:
        ValueError: two sub-agent tools, or a sub-agent tool and a tool policy, share a name.
        TypeError: an element is not a ``SubAgentTool``.
    """
    merged = dict(policies)
    for tool in tools:
        if not isinstance(tool, SubAgentTool):
            raise TypeError(f"sub_agents must hold SubAgentTools (subagent_tool(...)), got {type(tool).__name__}")
        if tool.name in merged:
            raise ValueError(f"tool {tool.name!r} is both a sub-agent and in tool_policies (or twice a sub-agent)")
        merged[tool.name] = tool.policy
    return merged


__all__ = ["ChildAgentFlow", "SubAgentTool", "sub_agent_policies", "subagent_tool"]
