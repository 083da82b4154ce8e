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

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, final

from dex_agents.pure.machine.reducers import TASK_ARGUMENT
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolEffect

if TYPE_CHECKING:
    from dex_agents.shell.flow import AgentSessionFlow

EFFECT_ORDER: Final = (ToolEffect.READ, ToolEffect.IDEMPOTENT_WRITE, ToolEffect.NON_IDEMPOTENT_WRITE,
                       ToolEffect.UNCLASSIFIED)
"""Effects from weakest to strongest."""

DEX_EFFECT_ATTRIBUTE: Final = "dex_effect"
"""The attribute (and framework metadata key) that carries a tool's effect."""

TASK_PARAMETERS: Final = MappingProxyType({
    "type": "object",
    "properties": {TASK_ARGUMENT: {"type": "string", "description": "The task for the sub-agent, in full."}},
    "required": [TASK_ARGUMENT],
    "additionalProperties": False,
})
"""The JSON schema of a sub-agent tool's arguments: one string, ``task``."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentTool:
    """A tool whose calls run as child sessions of ``child`` (build it with ``subagent_tool``)."""

    name: str
    description: str
    child: AgentSessionFlow
    effect: ToolEffect
    requires_approval: bool

    @property
    def child_flow_type(self) -> str:
        """The child agent's Flow type."""
        return self.child.get_flow_type()

    def as_function(self) -> Callable[[str], Awaitable[str]]:
        """The tool as a plain async Python function ``<name>(task: str) -> str`` with the description as
        its docstring and its effect as its ``dex_effect`` attribute: what each adapter's
        ``native_subagent_tool`` wraps the framework's way. Its body never runs: the session routes
        the tool's calls to the child session; called anyway, it raises ``RuntimeError``."""
        name, child = self.name, self.child_flow_type

        async def delegate(task: str) -> str:
            raise RuntimeError(f"tool {name!r} runs as a child session of {child!r} (AwaitSubAgent), not here")

        delegate.__name__ = delegate.__qualname__ = name
        delegate.__doc__ = f"{self.description}\n\nArgs:\n    {TASK_ARGUMENT}: The task for the sub-agent, in full.\n"
        setattr(delegate, DEX_EFFECT_ATTRIBUTE, self.effect.value)
        return delegate

    @property
    def policy(self) -> ToolPolicy:
        """The tool's policy in the parent Flow."""
        return ToolPolicy(effect=self.effect, requires_approval=self.requires_approval, sub_agent=self.child_flow_type)


def strongest_effect(effects: Sequence[ToolEffect]) -> ToolEffect:
    """The strongest of ``effects`` (``EFFECT_ORDER``); ``unclassified`` for none."""
    return max(effects, key=EFFECT_ORDER.index, default=ToolEffect.UNCLASSIFIED)


def subagent_tool(child: AgentSessionFlow, *, name: str, description: str, effect: ToolEffect | str | None = None,
                  requires_approval: bool = False) -> SubAgentTool:
    """A tool named ``name`` whose calls run as child sessions of ``child``'s agent.

    Give it to the parent's Flow (``sub_agents=[tool]``) and its framework-native form to the parent
    agent (each adapter's ``native_subagent_tool``); serve ``child`` on the same Workers.

    Raises:
        ValueError: a blank name or description, an unknown effect, or a child that serves no sessions.
        TypeError: ``child`` is not an ``AgentSessionFlow``.
    """
    from dex_agents.shell.flow import AgentSessionFlow

    if not isinstance(child, AgentSessionFlow):
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
    declared = [policy.effect for policy in config.tool_policies.values()] or [config.default_tool_effect]
    try:
        chosen = strongest_effect(declared) if effect is None else ToolEffect(effect)
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


__all__ = ["DEX_EFFECT_ATTRIBUTE", "EFFECT_ORDER", "TASK_PARAMETERS", "SubAgentTool", "strongest_effect", "sub_agent_policies",
           "subagent_tool"]
