"""Tool policies: which effect a tool has, and what that effect decides (the spec's Effects table).

=========================  =========================  ========  =========================  ========
Effect                     Step                       Attempts  Crash / retries exhausted  Approval
=========================  =========================  ========  =========================  ========
``read``                   ``CallTool``               3         ``failed``                 no
``idempotent_write``       ``CallTool``               3         ``outcome_unknown``        no
``non_idempotent_write``   ``CallSingleAttemptTool``  1         ``outcome_unknown``        yes
``unclassified``           ``CallSingleAttemptTool``  1         ``outcome_unknown``        yes
=========================  =========================  ========  =========================  ========

("Approval" is the default when the tool's policy does not set ``requires_approval``.)

Effect precedence: the tool's configured ``ToolPolicy``, then the effect the framework passes, then the
Flow's ``default_tool_effect``. ``requires_approval`` comes from the policy when it sets one, otherwise
from the resolved effect's default.

MCP annotations (``tool_effect_from_mcp_annotations``), an interpretation of the MCP hints, whose own
defaults are ``readOnlyHint=false``, ``destructiveHint=true``, ``idempotentHint=false`` and which MCP
defines as meaningful for writes only when ``readOnlyHint`` is false:

* no annotations, or none of ``readOnlyHint`` / ``destructiveHint`` / ``idempotentHint`` set (only
  ``openWorldHint``, which says nothing about repeating a call) -> ``None``: the default applies;
* ``readOnlyHint`` true -> ``read`` (whatever else is set: the other hints only describe writes);
* otherwise ``idempotentHint`` true -> ``idempotent_write`` (destructive or not: a repeat is harmless);
* otherwise any explicit hint (``readOnlyHint`` false, ``destructiveHint`` true or false,
  ``idempotentHint`` false) -> ``non_idempotent_write``. In particular ``destructiveHint`` false with no
  idempotent hint is ``non_idempotent_write``: the hint only says the tool makes additive changes, so it
  *is* a write, and an additive write performed twice (an order created twice) is exactly the double
  effect a single attempt prevents; MCP's default for a missing ``idempotentHint`` is false. Returning
  ``None`` instead would let a permissive ``default_tool_effect`` (say ``read``) retry it.

Only pass annotations of trusted servers: they are hints, and this function believes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, assert_never

from dex_agents.pure.flow.table import STEP_TABLE
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.runner import McpToolAnnotations, ResolvedToolPolicy, ToolPolicy
from dex_agents.pure.values.session import AgentToolCall, ToolCallStatus, ToolEffect


EFFECT_ORDER: Final = (ToolEffect.READ, ToolEffect.IDEMPOTENT_WRITE, ToolEffect.NON_IDEMPOTENT_WRITE,
                       ToolEffect.UNCLASSIFIED)
"""Effects from weakest to strongest (``unclassified`` is treated as the strongest: anything may happen)."""


def strongest_effect(effects: Iterable[ToolEffect]) -> ToolEffect:
    """The strongest of ``effects`` (``EFFECT_ORDER``); ``unclassified`` for none."""
    return max(effects, key=EFFECT_ORDER.index, default=ToolEffect.UNCLASSIFIED)


def strongest_declared_effect(tool_policies: Mapping[str, ToolPolicy], default_tool_effect: ToolEffect) -> ToolEffect:
    """The strongest effect a Flow declares: among its tool policies, else its default tool effect
    (a sub-agent tool's effect when none is given)."""
    return strongest_effect([policy.effect for policy in tool_policies.values()] or [default_tool_effect])


def approval_required_by_default(effect: ToolEffect) -> bool:
    """Whether a call of this effect waits for approval when its policy does not say.

    Writes that may not be repeated (``non_idempotent_write``, ``unclassified``) do; ``read`` and
    ``idempotent_write`` do not.
    """
    match effect:
        case ToolEffect.READ | ToolEffect.IDEMPOTENT_WRITE:
            return False
        case ToolEffect.NON_IDEMPOTENT_WRITE | ToolEffect.UNCLASSIFIED:
            return True
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(effect)


def tool_step_type(effect: ToolEffect) -> StepType:
    """The Step that runs a call of this effect: ``CallTool`` retries, ``CallSingleAttemptTool`` never does."""
    match effect:
        case ToolEffect.READ | ToolEffect.IDEMPOTENT_WRITE:
            return StepType.CALL_TOOL
        case ToolEffect.NON_IDEMPOTENT_WRITE | ToolEffect.UNCLASSIFIED:
            return StepType.CALL_SINGLE_ATTEMPT_TOOL
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(effect)


def call_step_type(record: AgentToolCall) -> StepType:
    """The Step that runs ``record``: ``AwaitSubAgent`` for a sub-agent's call (ours: its child session
    runs the task), else the Step of its effect (``tool_step_type``)."""
    return StepType.AWAIT_SUB_AGENT if record.sub_agent is not None else tool_step_type(record.effect)


def tool_step_attempts(effect: ToolEffect) -> int:
    """How many attempts the tool Step of this effect gets (its row of the flow table: 3 for
    ``CallTool``, 1 for ``CallSingleAttemptTool``)."""
    retry = STEP_TABLE[tool_step_type(effect)].execute_retry
    if retry is None or retry.maximum_attempts is None:
        raise ValueError(f"the flow table gives {tool_step_type(effect)} no attempt count")
    return retry.maximum_attempts


def crash_status(effect: ToolEffect) -> ToolCallStatus:
    """The final status recorded when a call's attempts run out, it crashed, or it timed out.

    A ``read`` changed nothing, so it is ``failed``; any write (and an unclassified tool, which may be
    one) may have taken effect, so it is ``outcome_unknown``.
    """
    match effect:
        case ToolEffect.READ:
            return ToolCallStatus.FAILED
        case ToolEffect.IDEMPOTENT_WRITE | ToolEffect.NON_IDEMPOTENT_WRITE | ToolEffect.UNCLASSIFIED:
            return ToolCallStatus.OUTCOME_UNKNOWN
        case _:  # pragma: no cover - unreachable, exhaustiveness is checked by mypy
            assert_never(effect)


def resolve_tool_policy(
    tool_name: str,
    framework_effect: ToolEffect | None,
    tool_policies: Mapping[str, ToolPolicy],
    default_effect: ToolEffect,
) -> ResolvedToolPolicy:
    """Return the effective policy of a call of ``tool_name``.

    The effect is the tool's configured policy's, else ``framework_effect``, else ``default_effect``.
    ``requires_approval`` is the policy's explicit value, else the resolved effect's default (a policy
    that sets only the effect still gets that effect's default approval).

    >>> resolve_tool_policy("search", None, {}, ToolEffect.UNCLASSIFIED)
    ResolvedToolPolicy(effect=<ToolEffect.UNCLASSIFIED: 'unclassified'>, requires_approval=True, sub_agent=None)
    """
    policy = tool_policies.get(tool_name)
    if policy is not None:
        effect = policy.effect
    elif framework_effect is not None:
        effect = framework_effect
    else:
        effect = default_effect
    if policy is not None and policy.requires_approval is not None:
        requires_approval = policy.requires_approval
    else:
        requires_approval = approval_required_by_default(effect)
    return ResolvedToolPolicy(effect=effect, requires_approval=requires_approval,
                              sub_agent=None if policy is None else policy.sub_agent)


def tool_effect_from_mcp_annotations(annotations: McpToolAnnotations | None) -> ToolEffect | None:
    """Classify an MCP tool by its annotation hints (see the module docstring for the table).

    >>> tool_effect_from_mcp_annotations(McpToolAnnotations(read_only_hint=True))
    <ToolEffect.READ: 'read'>
    >>> tool_effect_from_mcp_annotations(McpToolAnnotations(open_world_hint=True)) is None
    True
    """
    if annotations is None:
        return None
    if annotations.read_only_hint is True:
        return ToolEffect.READ
    if annotations.idempotent_hint is True:
        return ToolEffect.IDEMPOTENT_WRITE
    has_write_hint = (
        annotations.read_only_hint is not None
        or annotations.destructive_hint is not None
        or annotations.idempotent_hint is not None
    )
    return ToolEffect.NON_IDEMPOTENT_WRITE if has_write_hint else None


__all__ = [
    "EFFECT_ORDER",
    "approval_required_by_default",
    "call_step_type",
    "crash_status",
    "resolve_tool_policy",
    "strongest_declared_effect",
    "strongest_effect",
    "tool_effect_from_mcp_annotations",
    "tool_step_attempts",
    "tool_step_type",
]
