"""``replay`` of the facts a finished session reduced reproduces its committed snapshot: the live
session and the offline fold agree (the shell decides nothing the reducers do not)."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

from dex_agents.pure.offline.replay import replay_snapshot
from dex_agents.pure.machine.step_inputs import SessionInput
from dex_agents.shell import DeferredToolExecution, create_agent_session_flow
from dex_agents.testing import ScriptedAgentRunner
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.agents import LOOKUP_MESSAGE, REFUND_MESSAGE, SUPPORT_SCRIPT, TOOL_POLICIES, unique_flow_type


async def order_tool(call: DeferredToolExecution) -> str:
    return f"order {json.loads(call.tool_call.arguments)['order_id']} done"


def test_replaying_the_recorded_facts_reproduces_the_final_snapshot(
    agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path
) -> None:
    facts: list[SessionInput] = []
    lock = threading.Lock()

    def record(fact: SessionInput) -> None:
        with lock:
            facts.append(fact)

    runner = ScriptedAgentRunner(script=SUPPORT_SCRIPT, tools={"lookup_order": order_tool, "refund": order_tool})
    flow = create_agent_session_flow(runner, unique_flow_type(), tool_policies=TOOL_POLICIES, fact_observer=record)
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = f"session-{uuid.uuid4().hex[:12]}"

    sessions.start_session(session_id, LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)
    assert sessions.send_user_message(session_id, REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=False, rejection_message="no")
    sessions.wait_for_completed_turns(session_id, 2)
    assert sessions.send_user_message(session_id, "thanks")
    sessions.wait_for_completed_turns(session_id, 3)

    snapshot = sessions.snapshot(session_id)
    with lock:
        recorded = list(facts)
    assert len(snapshot.messages) == 10  # 4 per tool turn, 2 for the echo
    assert replay_snapshot(recorded, flow.runtime.config) == snapshot
