"""Validation of ``create_agent_session_flow``'s options: every bad option is a clear error at
creation, before any Worker or Client sees the Flow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pyrsistent import pmap

from dex_agents.pure.flow.rows import RetryPolicy
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.machine.compaction import CompactionPolicy
from dex_agents.pure.machine.state import DEFAULT_MAX_MODEL_CALLS_PER_TURN, SessionConfig
from dex_agents.pure.values.session import ToolEffect

MAX_TIMER_SECONDS: Final = 2**31 - 1
"""Dex durations are whole seconds within int32; an approval deadline Timer must fit."""

MAX_INTERRUPT_DEADLINE_MS: Final = MAX_TIMER_SECONDS * 1000

_RUNNER_METHODS: Final = ("build_user_message", "run_model_step", "execute_deferred_tool_call")
_EFFECTS: Final = ", ".join(effect.value for effect in ToolEffect)


def validate_runner(runner: object) -> None:
    """Raise ``TypeError`` unless ``runner`` has the contract's three methods."""
    missing = [name for name in _RUNNER_METHODS if not callable(getattr(runner, name, None))]
    if missing:
        raise TypeError(f"runner {type(runner).__name__} lacks the runner contract's {', '.join(missing)}")


def validate_flow_type(flow_type: object) -> None:
    """Raise unless ``flow_type`` is a non-blank ``str`` without ``/``."""
    if not isinstance(flow_type, str):
        raise TypeError(f"flow_type must be a str, got {type(flow_type).__name__}")
    if flow_type.strip() == "" or "/" in flow_type:
        raise ValueError(f"flow_type must be non-blank and contain no '/', got {flow_type!r}")


def validate_stream_capacity(capacity_bytes: object) -> None:
    """Raise unless the event Stream's byte budget is a positive ``int``."""
    if isinstance(capacity_bytes, bool) or not isinstance(capacity_bytes, int):
        raise TypeError(f"event_stream_capacity_bytes must be an int, got {type(capacity_bytes).__name__}")
    if capacity_bytes <= 0:
        raise ValueError(f"event_stream_capacity_bytes must be > 0, got {capacity_bytes}")


def tool_effect(value: object, what: str) -> ToolEffect:
    """``value`` as a ``ToolEffect`` (its wire string is accepted too)."""
    try:
        if isinstance(value, str):
            return ToolEffect(value)
    except ValueError:
        pass
    raise ValueError(f"{what} has unknown effect {value!r}; expected one of {_EFFECTS}")


def _tool_policy(name: object, policy: object) -> ToolPolicy:
    if not isinstance(name, str) or name == "":
        raise ValueError(f"tool_policies keys must be non-empty tool names, got {name!r}")
    if not isinstance(policy, ToolPolicy):
        raise TypeError(f"tool_policies[{name!r}] must be a ToolPolicy, got {type(policy).__name__}")
    approval = policy.requires_approval
    if approval is not None and not isinstance(approval, bool):
        raise TypeError(f"tool_policies[{name!r}].requires_approval must be a bool or None, got {approval!r}")
    if policy.reconcile is not None and not callable(policy.reconcile):
        raise TypeError(f"tool_policies[{name!r}].reconcile must be callable, got {policy.reconcile!r}")
    sub_agent: object = policy.sub_agent
    if sub_agent is not None and (not isinstance(sub_agent, str) or sub_agent == ""):
        raise TypeError(f"tool_policies[{name!r}].sub_agent must be a Flow type or None, got {sub_agent!r}")
    return ToolPolicy(effect=tool_effect(policy.effect, f"tool_policies[{name!r}]"), requires_approval=approval,
                      reconcile=policy.reconcile, sub_agent=policy.sub_agent)


def _interrupt_deadline(deadline_ms: object) -> int | None:
    if deadline_ms is None:
        return None
    if isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int):
        raise TypeError(f"interrupt_deadline_ms must be an int or None, got {type(deadline_ms).__name__}")
    if not 0 <= deadline_ms <= MAX_INTERRUPT_DEADLINE_MS:
        raise ValueError(
            f"interrupt_deadline_ms must be in 0..{MAX_INTERRUPT_DEADLINE_MS} (a Dex Timer of whole seconds "
            f"within int32), got {deadline_ms}"
        )
    return deadline_ms


def _max_model_calls_per_turn(cap: object) -> int:
    if isinstance(cap, bool) or not isinstance(cap, int):
        raise TypeError(f"max_model_calls_per_turn must be an int, got {type(cap).__name__}")
    if cap < 1:
        raise ValueError(f"max_model_calls_per_turn must be >= 1, got {cap}")
    return cap


def session_config(
    tool_policies: Mapping[str, ToolPolicy],
    default_tool_effect: object,
    interrupt_deadline_ms: object,
    max_model_calls_per_turn: object = DEFAULT_MAX_MODEL_CALLS_PER_TURN,
    compaction: object = None,
    model_retry: object = None,
) -> SessionConfig:
    """The validated ``SessionConfig`` of a Flow's options."""
    if compaction is not None and not isinstance(compaction, CompactionPolicy):
        raise TypeError(f"compaction must be a CompactionPolicy or None, got {type(compaction).__name__}")
    if model_retry is not None and not isinstance(model_retry, RetryPolicy):
        raise TypeError(f"model_retry must be a dex_agents.RetryPolicy or None, got {type(model_retry).__name__}")
    if not isinstance(tool_policies, Mapping):
        raise TypeError(f"tool_policies must be a mapping of tool name to ToolPolicy, got {type(tool_policies).__name__}")
    policies = {name: _tool_policy(name, policy) for name, policy in tool_policies.items()}
    return SessionConfig(
        tool_policies=pmap(policies),
        default_tool_effect=tool_effect(default_tool_effect, "default_tool_effect"),
        interrupt_deadline_ms=_interrupt_deadline(interrupt_deadline_ms),
        max_model_calls_per_turn=_max_model_calls_per_turn(max_model_calls_per_turn),
        compaction=compaction,
        model_retry=model_retry,
    )


__all__ = [
    "MAX_INTERRUPT_DEADLINE_MS",
    "MAX_TIMER_SECONDS",
    "session_config",
    "tool_effect",
    "validate_flow_type",
    "validate_runner",
    "validate_stream_capacity",
]
