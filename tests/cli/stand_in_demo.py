"""A scripted stand-in for the demo's support agent (same Flow type, tools, refunds log and crash gate),
so the demo command's loop is tested without a model: ``DEMO_TURNS``, ``build_support_flow`` and
``support_flow`` (for ``dex-agents worker --agent tests.cli.stand_in_demo:support_flow``).
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

LOOKUP_TURN: Final = "Where is order 42?"
REFUND_TURN: Final = "Please refund order 42."
LOOKUP_ANSWER: Final = "Order 42 shipped yesterday."
REFUND_ANSWER: Final = "I asked for the refund of order 42."
DEMO_TURNS: Final = (LOOKUP_TURN, REFUND_TURN)


def _call(tool_name: str, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(tool_call_id=call_id, tool_name=tool_name, arguments=json.dumps({"order_id": 42}))


SCRIPT: Final = {
    LOOKUP_TURN: (ScriptedModelCall(tool_calls=(_call("lookup_order", "call-lookup"),)),
                  ScriptedModelCall(text=LOOKUP_ANSWER)),
    REFUND_TURN: (ScriptedModelCall(tool_calls=(_call("refund_order", "call-refund"),)),
                  ScriptedModelCall(text=REFUND_ANSWER)),
}


def build_support_flow(*, state_directory: Path, flow_type: str = "SupportAgent") -> AgentSessionFlow:
    async def lookup_order(call: DeferredToolExecution) -> str:
        return "order 42 shipped"

    async def refund_order(call: DeferredToolExecution) -> str:
        with (state_directory / "refunds.log").open("a") as log:
            log.write(f"{call.idempotency_key}\n")
        if os.environ.get("DEX_AGENTS_DEMO_CRASH_GATE") == "1":
            await FileGate(state_directory, "refund").mark_reached_async()
        return "order 42 refunded"

    runner = ScriptedAgentRunner(script=SCRIPT, tools={"lookup_order": lookup_order, "refund_order": refund_order})
    policies = {"lookup_order": ToolPolicy(effect=ToolEffect.READ),
                "refund_order": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE)}
    return create_agent_session_flow(runner, flow_type, tool_policies=policies)


def support_flow() -> AgentSessionFlow:
    """The stand-in as the demo's Worker children serve it (state in ``DEX_AGENTS_DEMO_STATE_DIR``)."""
    return build_support_flow(state_directory=Path(os.environ["DEX_AGENTS_DEMO_STATE_DIR"]))


def chat_flow() -> AgentSessionFlow:
    """The stand-in for ``dex-agents chat --agent tests.cli.stand_in_demo:chat_flow`` (state in
    ``DEX_AGENTS_DEMO_STATE_DIR``, default the working directory)."""
    return build_support_flow(state_directory=Path(os.environ.get("DEX_AGENTS_DEMO_STATE_DIR", ".")),
                              flow_type="StandInChat")
