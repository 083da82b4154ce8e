"""Tool policies: one scenario per row of the spec's Effects table, effect precedence, approval
defaults and overrides, and the MCP annotation mapping."""

import doctest
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dex_agents.pure.machine import policies
from dex_agents.pure.machine.policies import (
    approval_required_by_default,
    crash_status,
    resolve_tool_policy,
    tool_effect_from_mcp_annotations,
    tool_step_attempts,
    tool_step_type,
)
from dex_agents.pure.values.persistence import StepType
from dex_agents.pure.values.runner import McpToolAnnotations, ResolvedToolPolicy, ToolPolicy
from dex_agents.pure.values.session import ToolCallStatus, ToolEffect

# The spec's Effects table, row by row: effect, Step, attempts, status after a crash or the last attempt,
# default approval.
EFFECTS_TABLE = [
    (ToolEffect.READ, "CallTool", 3, ToolCallStatus.FAILED, False),
    (ToolEffect.IDEMPOTENT_WRITE, "CallTool", 3, ToolCallStatus.OUTCOME_UNKNOWN, False),
    (ToolEffect.NON_IDEMPOTENT_WRITE, "CallSingleAttemptTool", 1, ToolCallStatus.OUTCOME_UNKNOWN, True),
    (ToolEffect.UNCLASSIFIED, "CallSingleAttemptTool", 1, ToolCallStatus.OUTCOME_UNKNOWN, True),
]

effects = st.sampled_from(ToolEffect)
optional_effects = st.none() | effects
optional_bools = st.none() | st.booleans()
policies_strategy = st.builds(ToolPolicy, effect=effects, requires_approval=optional_bools)


@pytest.mark.parametrize(
    ("effect", "step_type", "attempts", "crashed", "approval"), EFFECTS_TABLE, ids=lambda v: str(v)
)
def test_effects_table_row(
    effect: ToolEffect, step_type: str, attempts: int, crashed: ToolCallStatus, approval: bool
) -> None:
    assert tool_step_type(effect) == step_type
    assert tool_step_type(effect).value == step_type
    assert tool_step_attempts(effect) == attempts
    assert crash_status(effect) is crashed
    assert crash_status(effect).is_final
    assert approval_required_by_default(effect) is approval
    # With no policy and no framework effect, the default effect decides everything.
    expected = ResolvedToolPolicy(effect=effect, requires_approval=approval)
    assert resolve_tool_policy("tool", None, {}, effect) == expected


def test_effects_table_covers_every_effect() -> None:
    assert {row[0] for row in EFFECTS_TABLE} == set(ToolEffect)
    assert {row[1] for row in EFFECTS_TABLE} == {StepType.CALL_TOOL.value, StepType.CALL_SINGLE_ATTEMPT_TOOL.value}


def test_single_attempt_step_is_exactly_the_approval_default() -> None:
    for effect in ToolEffect:
        single = tool_step_type(effect) is StepType.CALL_SINGLE_ATTEMPT_TOOL
        assert single == approval_required_by_default(effect) == (tool_step_attempts(effect) == 1)


@pytest.mark.parametrize(
    ("policies_by_tool", "framework_effect", "default_effect", "expected"),
    [
        # Policy beats the framework effect and the default.
        (
            {"search": ToolPolicy(effect=ToolEffect.READ)},
            ToolEffect.NON_IDEMPOTENT_WRITE,
            ToolEffect.UNCLASSIFIED,
            ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False),
        ),
        # No policy: the framework effect beats the default.
        (
            {},
            ToolEffect.IDEMPOTENT_WRITE,
            ToolEffect.UNCLASSIFIED,
            ResolvedToolPolicy(effect=ToolEffect.IDEMPOTENT_WRITE, requires_approval=False),
        ),
        # Neither: the default.
        ({}, None, ToolEffect.READ, ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=False)),
        # A policy for another tool does not apply.
        (
            {"other": ToolPolicy(effect=ToolEffect.READ)},
            None,
            ToolEffect.UNCLASSIFIED,
            ResolvedToolPolicy(effect=ToolEffect.UNCLASSIFIED, requires_approval=True),
        ),
        # An explicit approval overrides the effect's default, both ways.
        (
            {"search": ToolPolicy(effect=ToolEffect.READ, requires_approval=True)},
            None,
            ToolEffect.UNCLASSIFIED,
            ResolvedToolPolicy(effect=ToolEffect.READ, requires_approval=True),
        ),
        (
            {"search": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)},
            None,
            ToolEffect.READ,
            ResolvedToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
        ),
        # A policy with only an effect takes that effect's default approval, not the default effect's.
        (
            {"search": ToolPolicy(effect=ToolEffect.UNCLASSIFIED)},
            ToolEffect.READ,
            ToolEffect.READ,
            ResolvedToolPolicy(effect=ToolEffect.UNCLASSIFIED, requires_approval=True),
        ),
    ],
)
def test_resolve_tool_policy_precedence(
    policies_by_tool: dict[str, ToolPolicy],
    framework_effect: ToolEffect | None,
    default_effect: ToolEffect,
    expected: ResolvedToolPolicy,
) -> None:
    assert resolve_tool_policy("search", framework_effect, policies_by_tool, default_effect) == expected


@given(
    tool_name=st.text(),
    framework_effect=optional_effects,
    policy=st.none() | policies_strategy,
    default_effect=effects,
)
def test_resolve_tool_policy_property(
    tool_name: str, framework_effect: ToolEffect | None, policy: ToolPolicy | None, default_effect: ToolEffect
) -> None:
    table = {} if policy is None else {tool_name: policy}
    resolved = resolve_tool_policy(tool_name, framework_effect, table, default_effect)
    if policy is not None:
        assert resolved.effect is policy.effect
    elif framework_effect is not None:
        assert resolved.effect is framework_effect
    else:
        assert resolved.effect is default_effect
    if policy is not None and policy.requires_approval is not None:
        assert resolved.requires_approval is policy.requires_approval
    else:
        assert resolved.requires_approval is approval_required_by_default(resolved.effect)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, None),
        (McpToolAnnotations(), None),
        (McpToolAnnotations(open_world_hint=True), None),
        (McpToolAnnotations(open_world_hint=False), None),
        (McpToolAnnotations(read_only_hint=True), ToolEffect.READ),
        (McpToolAnnotations(read_only_hint=True, open_world_hint=True), ToolEffect.READ),
        # readOnlyHint wins: MCP gives the write hints meaning only when readOnlyHint is false.
        (McpToolAnnotations(read_only_hint=True, destructive_hint=True, idempotent_hint=False), ToolEffect.READ),
        (McpToolAnnotations(idempotent_hint=True), ToolEffect.IDEMPOTENT_WRITE),
        (McpToolAnnotations(read_only_hint=False, idempotent_hint=True), ToolEffect.IDEMPOTENT_WRITE),
        (McpToolAnnotations(destructive_hint=True, idempotent_hint=True), ToolEffect.IDEMPOTENT_WRITE),
        (McpToolAnnotations(destructive_hint=False, idempotent_hint=True), ToolEffect.IDEMPOTENT_WRITE),
        # destructiveHint false with no idempotent hint: an additive write, not safe to repeat.
        (McpToolAnnotations(destructive_hint=False), ToolEffect.NON_IDEMPOTENT_WRITE),
        (McpToolAnnotations(destructive_hint=False, read_only_hint=False), ToolEffect.NON_IDEMPOTENT_WRITE),
        (McpToolAnnotations(destructive_hint=True), ToolEffect.NON_IDEMPOTENT_WRITE),
        (McpToolAnnotations(read_only_hint=False), ToolEffect.NON_IDEMPOTENT_WRITE),
        (McpToolAnnotations(idempotent_hint=False), ToolEffect.NON_IDEMPOTENT_WRITE),
        (
            McpToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
            ToolEffect.NON_IDEMPOTENT_WRITE,
        ),
    ],
)
def test_mcp_annotation_mapping(annotations: McpToolAnnotations | None, expected: ToolEffect | None) -> None:
    assert tool_effect_from_mcp_annotations(annotations) is expected


HINT_VALUES = [None, True, False]


@pytest.mark.parametrize(
    ("read_only", "destructive", "idempotent", "open_world"),
    list(itertools.product(HINT_VALUES, repeat=4)),
)
def test_mcp_mapping_over_every_hint_combination(
    read_only: bool | None, destructive: bool | None, idempotent: bool | None, open_world: bool | None
) -> None:
    annotations = McpToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=open_world
    )
    effect = tool_effect_from_mcp_annotations(annotations)
    without_open_world = McpToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent
    )
    assert effect is tool_effect_from_mcp_annotations(without_open_world), "openWorldHint never changes the effect"
    if read_only is True:
        assert effect is ToolEffect.READ
    elif idempotent is True:
        assert effect is ToolEffect.IDEMPOTENT_WRITE
    elif (read_only, destructive, idempotent) == (None, None, None):
        assert effect is None, "no effect hint: the default applies"
    else:
        assert effect is ToolEffect.NON_IDEMPOTENT_WRITE
    # A tool MCP does not call read-only never becomes a read (it would be retried after a crash as "failed").
    if read_only is not True:
        assert effect is not ToolEffect.READ


def test_mcp_effect_as_framework_effect_yields_to_the_policy() -> None:
    framework_effect = tool_effect_from_mcp_annotations(McpToolAnnotations(read_only_hint=True))
    table = {"delete_order": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE)}
    resolved = resolve_tool_policy("delete_order", framework_effect, table, ToolEffect.UNCLASSIFIED)
    assert resolved == ResolvedToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=True)


def test_docstring_examples() -> None:
    results = doctest.testmod(policies)
    assert results.attempted > 0
    assert results.failed == 0


@given(st.lists(st.sampled_from(list(ToolEffect))))
def test_the_strongest_effect_is_the_latest_in_the_order(effects: list[ToolEffect]) -> None:
    strongest = policies.strongest_effect(effects)
    assert strongest is (ToolEffect.UNCLASSIFIED if not effects else max(effects, key=policies.EFFECT_ORDER.index))
    assert all(policies.EFFECT_ORDER.index(effect) <= policies.EFFECT_ORDER.index(strongest) for effect in effects)


def test_a_flow_declares_its_strongest_policy_else_its_default_effect() -> None:
    table = {"lookup": ToolPolicy(effect=ToolEffect.READ), "refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE)}
    assert policies.strongest_declared_effect(table, ToolEffect.READ) is ToolEffect.NON_IDEMPOTENT_WRITE
    assert policies.strongest_declared_effect({}, ToolEffect.IDEMPOTENT_WRITE) is ToolEffect.IDEMPOTENT_WRITE
