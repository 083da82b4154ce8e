"""Named scenarios for each row of the spec's Effects table: the tool Step, retries, idempotency key,
crash record and default approval of every effect class, and the effect precedence."""

from __future__ import annotations

import pytest
from pyrsistent import pmap

from dex_agents.pure.machine.endings import ExecuteDeferredToolCall
from dex_agents.pure.flow.rows import MapInstanceRef
from dex_agents.pure.values.persistence import MapName, StepType
from dex_agents.pure.machine.policies import resolve_tool_policy
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.values.session import ToolCallStatus, ToolEffect

from tests.pure.scenario_support import (
    FLOW_ID,
    completed,
    completions_of,
    movements_of,
    of_type,
    requested,
    started_session,
    tool_call,
)

EFFECTS_TABLE = [
    # effect, Step, attempts, failure route, crash status, default approval
    (ToolEffect.READ, StepType.CALL_TOOL, 3, StepType.RECORD_TOOL_FAILURE, ToolCallStatus.FAILED, False),
    (ToolEffect.IDEMPOTENT_WRITE, StepType.CALL_TOOL, 3, StepType.RECORD_TOOL_FAILURE, ToolCallStatus.OUTCOME_UNKNOWN, False),
    (
        ToolEffect.NON_IDEMPOTENT_WRITE,
        StepType.CALL_SINGLE_ATTEMPT_TOOL,
        1,
        StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
        ToolCallStatus.OUTCOME_UNKNOWN,
        True,
    ),
    (
        ToolEffect.UNCLASSIFIED,
        StepType.CALL_SINGLE_ATTEMPT_TOOL,
        1,
        StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
        ToolCallStatus.OUTCOME_UNKNOWN,
        True,
    ),
]


@pytest.mark.parametrize(("effect", "step", "attempts", "route", "crash", "approval"), EFFECTS_TABLE)
def test_effect_row_decides_step_attempts_route_crash_record_and_default_approval(
    effect: ToolEffect, step: StepType, attempts: int, route: StepType, crash: ToolCallStatus, approval: bool
) -> None:
    session = started_session()
    t = session.model(requested(tool_call("x", effect)))
    record = t.state.tool_calls["x"]
    assert record.requires_approval is approval
    first = movements_of(t)[0]
    if approval:
        assert (first.step_type, first.input) == (StepType.AWAIT_TOOL_APPROVAL, "x")
        session.resolve("turn-1:x", True)
        first = movements_of(session.resolution_arrives("x", True))[0]
    assert (first.step_type, first.input) == (step, "x")
    retry = first.options.execute_retry
    assert retry is not None and retry.maximum_attempts == attempts
    assert first.options.failure_route is not None and first.options.failure_route.step_type is route
    instance = MapInstanceRef(name=MapName.AGENT_TOOL_CALLS, key="x")
    assert list(first.options.execute_load_attribute_map_instances) == [instance]
    assert list(first.options.failure_route.options.execute_load_attribute_map_instances) == [instance]
    if route is StepType.RECORD_TOOL_FAILURE:
        crashed = session.attempts_exhausted("x", "crash")
    else:
        crashed = session.single_attempt_failed("x", "crash")
    assert crashed.state.tool_calls["x"].status is crash
    assert completions_of(crashed) == ["x"]


def test_idempotent_write_runs_with_the_same_key_on_every_attempt() -> None:
    session = started_session()
    session.model(requested(tool_call("pay", ToolEffect.IDEMPOTENT_WRITE)))
    keys: list[str] = []
    for _attempt in range(3):
        started = session.tool_started("pay")
        keys.extend(ending.idempotency_key for ending in of_type([started.ending], ExecuteDeferredToolCall))
    assert keys == [f"{FLOW_ID}/turn-1/pay"] * 3


def test_idempotency_keys_are_scoped_to_the_turn_so_ids_may_repeat_across_turns() -> None:
    session = started_session()
    session.model(requested(tool_call("a", ToolEffect.IDEMPOTENT_WRITE)))
    session.run_tool("a")
    session.results_arrive(1)
    session.model(completed("done"))
    session.send("again")
    session.user_message_arrives("again")
    t = session.model(requested(tool_call("a", ToolEffect.IDEMPOTENT_WRITE)))
    assert t.state.tool_calls["a"].idempotency_key == f"{FLOW_ID}/turn-2/a"


@pytest.mark.parametrize(
    ("policies", "framework_effect", "default", "expected"),
    [
        ({"t": ToolPolicy(effect=ToolEffect.READ)}, ToolEffect.UNCLASSIFIED, ToolEffect.UNCLASSIFIED, ToolEffect.READ),
        ({}, ToolEffect.IDEMPOTENT_WRITE, ToolEffect.READ, ToolEffect.IDEMPOTENT_WRITE),
        ({}, None, ToolEffect.NON_IDEMPOTENT_WRITE, ToolEffect.NON_IDEMPOTENT_WRITE),
    ],
    ids=["policy-wins", "framework-effect-next", "default-last"],
)
def test_effect_precedence_policy_then_framework_effect_then_default(
    policies: dict[str, ToolPolicy], framework_effect: ToolEffect | None, default: ToolEffect, expected: ToolEffect
) -> None:
    assert resolve_tool_policy("t", framework_effect, policies, default).effect is expected


def test_a_read_with_a_policy_requiring_approval_waits_for_approval() -> None:
    session = started_session()
    t = session.model(requested(tool_call("r", ToolEffect.READ, requires_approval=True)))
    assert movements_of(t)[0].step_type is StepType.AWAIT_TOOL_APPROVAL
    assert t.state.tool_calls["r"].interrupt_id == "turn-1:r"


def test_the_session_config_resolves_policies_for_the_runner() -> None:
    config = SessionConfig(
        tool_policies=pmap({"search": ToolPolicy(effect=ToolEffect.READ)}), default_tool_effect=ToolEffect.IDEMPOTENT_WRITE
    )
    assert config.resolve_tool_policy("search", ToolEffect.UNCLASSIFIED).effect is ToolEffect.READ
    assert config.resolve_tool_policy("other").effect is ToolEffect.IDEMPOTENT_WRITE
    assert config.resolve_tool_policy("other", ToolEffect.NON_IDEMPOTENT_WRITE).requires_approval is True
    assert SessionConfig().resolve_tool_policy("anything").effect is ToolEffect.UNCLASSIFIED
