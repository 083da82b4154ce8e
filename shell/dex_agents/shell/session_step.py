"""``SessionStep``: the base of the session's Step classes (one per spec Step type).

Invariants: a Step class's name is its spec Step type; its static options come from the pure table
(``step_options_for``), except for the tool-call Steps, which are only ever reached through
movements carrying their complete per-call options, so statically they only set SYNC durability.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from dex import Context, Step, StepDurability, StepOptions

from dex_agents.pure.persistence import TOOL_CALL_STEP_TYPES, StepType
from dex_agents.pure.step_options import step_options_for
from dex_agents.shell.options import dex_step_options
from dex_agents.shell.runtime import SessionRuntime

InputT = TypeVar("InputT")

NO_RECOVERY_ERROR = "the failed Step reported no error"


class SessionStep(Step[InputT], Generic[InputT]):
    """A Step of one session Flow; holds the Flow's ``SessionRuntime``."""

    step_type: StepType

    def __init__(self, runtime: SessionRuntime) -> None:
        self.runtime = runtime

    def get_step_type(self) -> str:
        return self.step_type.value

    def get_step_options(self) -> StepOptions | None:
        if self.step_type in TOOL_CALL_STEP_TYPES:
            return StepOptions(wait_for_durability=StepDurability.SYNC, execute_durability=StepDurability.SYNC)
        return dex_step_options(step_options_for(self.step_type), self.runtime.step_class_of)


def recovery_error_text(context: Context) -> str:
    """The text of the failure that routed here (the failed attempt's message)."""
    info = context.recovery_error
    if info is None:
        return NO_RECOVERY_ERROR
    return info.detail or info.error_type or NO_RECOVERY_ERROR


__all__ = ["NO_RECOVERY_ERROR", "SessionStep", "recovery_error_text"]
