"""``create_agent_session_flow`` validates its options at creation, and builds the spec's Flow."""

from __future__ import annotations

from typing import Any

import dex
import pytest

from dex_agents import ToolEffect, ToolPolicy, create_agent_session_flow, session_registry
from dex_agents.pure.values.persistence import AttributeName, ChannelMapName, ChannelName, MapName, RpcName, StepType, StreamName
from dex_agents.shell.flow_validation import MAX_INTERRUPT_DEADLINE_MS
from dex_agents.testing.scripted_runner import ScriptedAgentRunner

RUNNER = ScriptedAgentRunner()


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"event_stream_capacity_bytes": 0}, ValueError, "event_stream_capacity_bytes must be > 0"),
        ({"event_stream_capacity_bytes": -1}, ValueError, "event_stream_capacity_bytes must be > 0"),
        ({"event_stream_capacity_bytes": 1.5}, TypeError, "must be an int"),
        ({"interrupt_deadline_ms": -1}, ValueError, "a Dex Timer"),
        ({"interrupt_deadline_ms": MAX_INTERRUPT_DEADLINE_MS + 1}, ValueError, "a Dex Timer"),
        ({"interrupt_deadline_ms": True}, TypeError, "interrupt_deadline_ms must be an int"),
        ({"tool_policies": {"search": ToolPolicy(effect="dangerous")}}, ValueError,  # type: ignore[arg-type]
         r"tool_policies\['search'\] has unknown effect 'dangerous'"),
        ({"tool_policies": {"search": "read"}}, TypeError, "must be a ToolPolicy"),
        ({"tool_policies": {"": ToolPolicy(effect=ToolEffect.READ)}}, ValueError, "non-empty tool names"),
        ({"default_tool_effect": "risky"}, ValueError, "default_tool_effect has unknown effect 'risky'"),
        ({"max_model_calls_per_turn": 0}, ValueError, "max_model_calls_per_turn must be >= 1, got 0"),
        ({"max_model_calls_per_turn": -3}, ValueError, "max_model_calls_per_turn must be >= 1, got -3"),
        ({"max_model_calls_per_turn": True}, TypeError, "max_model_calls_per_turn must be an int, got bool"),
        ({"max_model_calls_per_turn": 2.0}, TypeError, "max_model_calls_per_turn must be an int, got float"),
        ({"max_model_calls_per_turn": "5"}, TypeError, "max_model_calls_per_turn must be an int, got str"),
    ],
)
def test_a_bad_option_fails_at_creation_with_a_clear_error(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        create_agent_session_flow(RUNNER, "Agent", **options)


@pytest.mark.parametrize("flow_type", ["", "  ", "a/b"])
def test_a_blank_or_slashed_flow_type_is_refused(flow_type: str) -> None:
    with pytest.raises(ValueError, match="flow_type must be non-blank"):
        create_agent_session_flow(RUNNER, flow_type)


def test_a_runner_without_the_contract_is_refused() -> None:
    with pytest.raises(TypeError, match="lacks the runner contract's run_model_step, execute_deferred_tool_call"):
        create_agent_session_flow(object.__new__(type("Half", (), {"build_user_message": lambda self, t: t})), "A")


def test_the_model_call_cap_is_50_by_default_and_reaches_the_core() -> None:
    assert create_agent_session_flow(RUNNER, "Agent").runtime.config.max_model_calls_per_turn == 50
    assert create_agent_session_flow(RUNNER, "Agent", max_model_calls_per_turn=1).runtime.config.max_model_calls_per_turn == 1


def test_effects_may_be_given_as_their_wire_strings() -> None:
    flow = create_agent_session_flow(
        RUNNER, "Agent", tool_policies={"s": ToolPolicy(effect="read")}, default_tool_effect="idempotent_write"  # type: ignore[arg-type]
    )
    assert flow.runtime.config.resolve_tool_policy("s", None).effect is ToolEffect.READ
    assert flow.runtime.config.default_tool_effect is ToolEffect.IDEMPOTENT_WRITE


def test_the_flow_has_the_spec_step_types_persisted_names_and_rpcs() -> None:
    flow = create_agent_session_flow(RUNNER, "Agent", event_stream_capacity_bytes=4096)
    registered = session_registry([flow])._flow_by_type("Agent")
    assert set(registered.steps) == {step_type.value for step_type in StepType}
    assert registered.start_step is not None and registered.start_step.name == StepType.START_AGENT_SESSION.value
    expected = {*AttributeName, *MapName, *ChannelName, *ChannelMapName, *StreamName}
    assert set(registered.persistence) == {name.value for name in expected}
    assert set(registered.rpcs) == {name.value for name in RpcName}
    assert flow.agent_events.stream_capacity_bytes == 4096


def test_several_agents_live_in_one_registry_with_their_own_streams() -> None:
    first = create_agent_session_flow(RUNNER, "First")
    second = create_agent_session_flow(RUNNER, "Second")
    registry = session_registry([first, second])
    assert isinstance(registry, dex.Registry)
    assert first.agent_events is not second.agent_events
