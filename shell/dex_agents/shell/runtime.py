"""``SessionRuntime``: what every Step and RPC of one session Flow shares (never persisted)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

from dex import Step, Stream

from dex_agents.pure.persistence import StepType
from dex_agents.pure.state import SessionConfig
from dex_agents.pure.values import AgentEvent
from dex_agents.shell.runner import AgentFrameworkRunner
from dex_agents.shell.timing import SessionTiming


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRuntime:
    """The runner, the reducers' configuration, the clock, the Flow's event Stream and its Step classes.

    Invariant: ``step_classes`` holds one registered Step class per ``StepType`` (the class name is
    the Step type), so every movement target resolves.
    """

    runner: AgentFrameworkRunner
    config: SessionConfig
    timing: SessionTiming
    events: Stream[AgentEvent]
    step_classes: Mapping[StepType, type[Step[Any]]]

    def step_class_of(self, step_type: StepType) -> type[Step[Any]]:
        """The Step class registered for ``step_type``."""
        return self.step_classes[step_type]


__all__ = ["SessionRuntime"]
