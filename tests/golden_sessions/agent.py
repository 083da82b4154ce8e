"""The agent of the golden sessions and of the export tests: scripted turns that go through an
approval, a rejection, a crash inside a single-attempt write (``outcome_unknown``), a failed turn
(its second model call fails all three attempts after a read ran, so the turn ends with the failure
note), and echo answers for anything else. Approvals expire after a day, so interrupts carry a
deadline and the Worker clock matters.

A Worker child serves it with ``python -m tests.golden_sessions.worker_main`` and the environment of
``worker_environment(state_directory, flow_type)``; the refund tool stops at ``FileGate(state
directory, "refund")`` when its arguments carry ``"gate": "refund"``, so a test can SIGKILL it there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell import AgentSessionFlow, DeferredToolExecution, create_agent_session_flow
from dex_agents.testing import FileGate, ScriptedAgentRunner, ScriptedModelCall, ScriptedToolCall

STATE_DIR_ENV: Final = "GOLDEN_STATE_DIR"
FLOW_TYPE_ENV: Final = "GOLDEN_FLOW_TYPE"
WORKER_MODULE: Final = "tests.golden_sessions.worker_main"
REFUND_GATE: Final = "refund"
DAY_MS: Final = 24 * 60 * 60 * 1000

REFUND_7: Final = "Refund order 7"
REFUND_8_CAREFULLY: Final = "Refund order 8, carefully"
REFUND_9: Final = "Refund order 9"
CHECK_WAREHOUSE: Final = "Check the warehouse"
REFUND_7_CALL: Final = "call-refund-7"


def _call(tool_name: str, call_id: str, **arguments: object) -> ScriptedToolCall:
    return ScriptedToolCall(tool_call_id=call_id, tool_name=tool_name,
                            arguments=json.dumps(arguments, sort_keys=True, separators=(",", ":")))


SCRIPT: Final = {
    REFUND_7: (ScriptedModelCall(tool_calls=(_call("refund", REFUND_7_CALL, order_id=7),)),
               ScriptedModelCall(text="Order 7 is refunded.")),
    REFUND_8_CAREFULLY: (ScriptedModelCall(tool_calls=(_call("refund", "call-refund-8", order_id=8, gate=REFUND_GATE),)),
                         ScriptedModelCall(text="The refund of order 8 may or may not have happened.")),
    REFUND_9: (ScriptedModelCall(tool_calls=(_call("refund", "call-refund-9", order_id=9),)),
               ScriptedModelCall(text="Order 9 was not refunded.")),
    CHECK_WAREHOUSE: (ScriptedModelCall(tool_calls=(_call("lookup_order", "call-lookup-5", order_id=5),)),
                      ScriptedModelCall(text="never said", fail_attempts=3)),
}
"""Model calls by user message; any other message is answered ``echo: <text> (<n> messages)``."""

TOOL_POLICIES: Final = {
    "lookup_order": ToolPolicy(effect=ToolEffect.READ),
    "refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE),
}


def build_golden_flow(state_directory: Path, flow_type: str) -> AgentSessionFlow:
    """The agent's Flow, with its refund gate in ``state_directory``."""

    async def lookup_order(call: DeferredToolExecution) -> str:
        return f"order {json.loads(call.tool_call.arguments)['order_id']} is in the warehouse"

    async def refund(call: DeferredToolExecution) -> str:
        arguments = json.loads(call.tool_call.arguments)
        if arguments.get("gate") == REFUND_GATE:
            await FileGate(state_directory, REFUND_GATE).mark_reached_async()
        return f"order {arguments['order_id']} refunded"

    runner = ScriptedAgentRunner(script=SCRIPT, tools={"lookup_order": lookup_order, "refund": refund},
                                 gate_directory=state_directory)
    return create_agent_session_flow(runner, flow_type, tool_policies=TOOL_POLICIES, interrupt_deadline_ms=DAY_MS)


def worker_environment(state_directory: Path, flow_type: str) -> dict[str, str]:
    """The environment a Worker child (``WORKER_MODULE``) needs to build the same Flow."""
    return {STATE_DIR_ENV: str(state_directory), FLOW_TYPE_ENV: flow_type}


def golden_flow_from_environment() -> AgentSessionFlow:
    """The Flow a Worker child serves (``GOLDEN_STATE_DIR``, ``GOLDEN_FLOW_TYPE``)."""
    return build_golden_flow(Path(os.environ[STATE_DIR_ENV]), os.environ[FLOW_TYPE_ENV])
