"""The session Flow's shape as data: which Steps each Step may move to, its failure route, and which
Step produces each input. Tests check every transition against it; tools can draw it.

```text
StartAgentSession -> RunModel (initial message) | AwaitUserMessage
AwaitUserMessage -> RunModel
RunModel -> AwaitUserMessage (final answer)
         | one Step per tool call + ResumeTurn(n) (tool calls, all at once)
         | RecordTurnFailure -> AwaitUserMessage (retries exhausted)
AwaitToolApproval(id) -> CallTool(id) | CallSingleAttemptTool(id) (approved)
                       | AwaitToolApproval(id) (late or early Timer: wait again)
                       | dead end, after publishing to ToolCallResults (rejected or deadline)
CallTool(id), CallSingleAttemptTool(id), RecordToolFailure(id), RecordToolOutcomeUnknown(id)
    -> dead end, after publishing to ToolCallResults
ResumeTurn(n) -> RunModel | ResumeTurn(k) (k records still open)
```
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, assert_never

from dex_agents.pure.persistence import StepType
from dex_agents.pure.step_inputs import (
    ApprovalWaitEnded,
    ModelCallFinished,
    SessionStarted,
    SingleAttemptToolFailed,
    StepInput,
    ToolAttemptsExhausted,
    ToolCallSucceeded,
    ToolExecutionFailed,
    ToolResultsArrived,
    ToolStepStarted,
    TurnFailed,
    UserMessageArrived,
)

_TOOL_STEPS: Final = frozenset({StepType.CALL_TOOL, StepType.CALL_SINGLE_ATTEMPT_TOOL})

NEXT_STEPS: Final[Mapping[StepType, frozenset[StepType]]] = MappingProxyType(
    {
        StepType.START_AGENT_SESSION: frozenset({StepType.RUN_MODEL, StepType.AWAIT_USER_MESSAGE}),
        StepType.AWAIT_USER_MESSAGE: frozenset({StepType.RUN_MODEL}),
        StepType.RUN_MODEL: frozenset({StepType.AWAIT_USER_MESSAGE, StepType.AWAIT_TOOL_APPROVAL, StepType.RESUME_TURN})
        | _TOOL_STEPS,
        StepType.AWAIT_TOOL_APPROVAL: frozenset({StepType.AWAIT_TOOL_APPROVAL}) | _TOOL_STEPS,
        StepType.CALL_TOOL: frozenset(),
        StepType.CALL_SINGLE_ATTEMPT_TOOL: frozenset(),
        StepType.RECORD_TOOL_FAILURE: frozenset(),
        StepType.RECORD_TOOL_OUTCOME_UNKNOWN: frozenset(),
        StepType.RESUME_TURN: frozenset({StepType.RUN_MODEL, StepType.RESUME_TURN}),
        StepType.RECORD_TURN_FAILURE: frozenset({StepType.AWAIT_USER_MESSAGE}),
    }
)
"""The Steps each Step may move to (an empty set: it only dead-ends)."""

FAILURE_ROUTES: Final[Mapping[StepType, StepType]] = MappingProxyType(
    {
        StepType.RUN_MODEL: StepType.RECORD_TURN_FAILURE,
        StepType.CALL_TOOL: StepType.RECORD_TOOL_FAILURE,
        StepType.CALL_SINGLE_ATTEMPT_TOOL: StepType.RECORD_TOOL_OUTCOME_UNKNOWN,
    }
)
"""Where a Step goes when its ``execute`` runs out of attempts (only these three have a route)."""


def steps_producing(step_input: StepInput) -> frozenset[StepType]:
    """The Step (or, for a tool outcome, the two tool Steps) whose invocation produces ``step_input``."""
    match step_input:
        case SessionStarted():
            return frozenset({StepType.START_AGENT_SESSION})
        case UserMessageArrived():
            return frozenset({StepType.AWAIT_USER_MESSAGE})
        case ModelCallFinished():
            return frozenset({StepType.RUN_MODEL})
        case ApprovalWaitEnded():
            return frozenset({StepType.AWAIT_TOOL_APPROVAL})
        case ToolStepStarted():
            return frozenset({step_input.step_type}) & _TOOL_STEPS
        case ToolCallSucceeded() | ToolExecutionFailed():
            return _TOOL_STEPS
        case ToolAttemptsExhausted():
            return frozenset({StepType.RECORD_TOOL_FAILURE})
        case SingleAttemptToolFailed():
            return frozenset({StepType.RECORD_TOOL_OUTCOME_UNKNOWN})
        case ToolResultsArrived():
            return frozenset({StepType.RESUME_TURN})
        case TurnFailed():
            return frozenset({StepType.RECORD_TURN_FAILURE})
        case _:
            assert_never(step_input)


def allowed_next_steps(step_input: StepInput) -> frozenset[StepType]:
    """Every Step a transition of ``step_input`` may move to."""
    allowed: frozenset[StepType] = frozenset()
    for step_type in steps_producing(step_input):
        allowed |= NEXT_STEPS[step_type]
    return allowed


__all__ = ["FAILURE_ROUTES", "NEXT_STEPS", "allowed_next_steps", "steps_producing"]
