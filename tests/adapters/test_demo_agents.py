"""The demo support agent on each framework (``dex_agents.demo.support_agent``, ``openai_agents_agent``,
``langchain_agent``, ``openai_chat_agent``): the same agent, the same conversation through a session, and a
Worker killed during the refund. What only one framework's demo does is tested beside its adapter's tests."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Protocol

import pytest
from agents import set_tracing_disabled

from dex_agents.demo import langchain_agent, openai_agents_agent, openai_chat_agent, support_agent, support_script
from dex_agents.demo.support_script import DEMO_TURNS, REFUNDS_LOG
from dex_agents.pure.machine.texts import OUTCOME_UNKNOWN_PREFIX
from dex_agents.pure.values.session import MessageRole
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.testing import FileGate, completed_step_types, read_step_history
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory

set_tracing_disabled(True)


class DemoModule(Protocol):
    """What a demo module offers (``dex-agents demo`` and ``worker`` use the same names)."""

    @property
    def DEMO_TURNS(self) -> tuple[str, ...]: ...

    def build_support_flow(self, *, model: str | None = None, state_directory: Path,
                           flow_type: str = "SupportAgent") -> AgentSessionFlow: ...

    def check_model(self, model: str) -> None: ...

    def support_flow(self) -> AgentSessionFlow: ...


DEMOS: dict[str, DemoModule] = {
    "support_agent": support_agent, "openai_agents_agent": openai_agents_agent, "langchain_agent": langchain_agent,
    "openai_chat_agent": openai_chat_agent}
OPENAI_ONLY_DEMOS = ("openai_agents_agent", "langchain_agent", "openai_chat_agent")
SHARED_NAMES = ("DEMO_TURNS", "CRASH_GATE_ENV", "STATE_DIR_ENV", "MODEL_ENV", "REFUNDS_LOG", "REFUND_GATE",
                "REFUND_AMOUNT", "INSTRUCTIONS", "MissingModelKeyError")


def _flow_type(name: str) -> str:
    return f"{name.title().replace('_', '')}{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("name", DEMOS)
def test_every_demo_is_the_same_agent(name: str) -> None:
    for shared in SHARED_NAMES:
        assert getattr(DEMOS[name], shared) is getattr(support_script, shared), (name, shared)


@pytest.mark.parametrize("name", DEMOS)
def test_a_real_model_needs_provider_name_and_its_key(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = DEMOS[name]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(support_script.MissingModelKeyError, match="OPENAI_API_KEY"):
        demo.build_support_flow(model="openai:gpt-4o-mini", state_directory=tmp_path)
    with pytest.raises(ValueError, match="provider:name"):
        demo.build_support_flow(model="gpt-4o-mini", state_directory=tmp_path)
    with pytest.raises(ValueError, match="provider:name"):
        demo.check_model("gpt-4o-mini")


@pytest.mark.parametrize("name", OPENAI_ONLY_DEMOS)
def test_the_demos_off_pydantic_ai_run_only_openai(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = DEMOS[name]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="only OpenAI models"):
        demo.build_support_flow(model="anthropic:claude-sonnet-4-5", state_directory=tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # built, never called
    demo.check_model("openai:gpt-4o-mini")
    assert demo.build_support_flow(model="openai:gpt-4o-mini", state_directory=tmp_path,
                                   flow_type="Real").get_flow_type() == "Real"


@pytest.mark.parametrize("name", DEMOS)
def test_the_demo_conversation_looks_up_then_refunds_once_after_approval(
        name: str, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        tmp_path: Path) -> None:
    flow = DEMOS[name].build_support_flow(state_directory=tmp_path, flow_type=_flow_type(name))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = f"s-{uuid.uuid4().hex}"

    sessions.start_session(session_id, DEMO_TURNS[0])
    sessions.wait_for_completed_turns(session_id, 1)
    assert completed_step_types(read_step_history(environment.server_address, session_id)) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"]
    snapshot = sessions.snapshot(session_id)
    assert [m.role for m in snapshot.messages] == [
        MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.ASSISTANT]
    assert snapshot.messages[1].tool_name == "lookup_order"
    assert snapshot.messages[1].tool_arguments == '{"order_id":42}'
    assert "shipped" in (snapshot.messages[3].text or "")
    deltas = [event for event in sessions.events(session_id) if event.type == "text_delta"]
    assert "".join(str(event.payload["text"]) for event in deltas) == snapshot.messages[3].text

    sessions.send_user_message(session_id, DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    assert (tmp_path / REFUNDS_LOG).exists() is False
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True)
    sessions.wait_for_completed_turns(session_id, 2)
    snapshot = sessions.snapshot(session_id)
    assert (snapshot.messages[-1].text or "").startswith("Done: Refunded 19.99")
    assert (tmp_path / REFUNDS_LOG).read_text().splitlines() == [
        f"order=42 amount=19.99 key={session_id}/turn-2/{interrupt.tool_call_id}"]  # the ledger, by idempotency key
    assert snapshot.usage.requests == 4 and snapshot.usage.input_tokens > 0


@pytest.mark.parametrize("name", DEMOS)
def test_a_crash_during_the_refund_is_reconciled_from_the_ledger_and_the_model_is_told(
        name: str, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    flow_type = _flow_type(f"crash_{name}")
    flow = DEMOS[name].build_support_flow(state_directory=tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    environment = {"TEST_DEMO_MODULE": name, "TEST_STATE_DIR": str(tmp_path), "TEST_FLOW_TYPE": flow_type,
                   "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    worker = killable_worker("tests.adapters.crash_worker",
                             environment={**environment, "DEX_AGENTS_DEMO_CRASH_GATE": "1"})
    session_id = f"s-{uuid.uuid4().hex}"
    sessions.start_session(session_id, DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund_order")
    sessions.resolve_interrupt(session_id, interrupt.interrupt_id, approved=True)
    gate = FileGate(tmp_path, "refund")
    gate.wait_until_reached()
    worker.kill()
    gate.release()
    killable_worker("tests.adapters.crash_worker", environment={**environment, "DEX_AGENTS_DEMO_CRASH_GATE": "0"})
    sessions.wait_for_completed_turns(session_id, 1)
    snapshot = sessions.snapshot(session_id)
    tool_message = [m for m in snapshot.messages if m.role == MessageRole.TOOL][0]
    told = tool_message.tool_output or ""
    assert told.startswith("[Dex] The outcome was unknown (") and OUTCOME_UNKNOWN_PREFIX not in told
    assert told.endswith("the tool's reconcile check settled it as succeeded.\nRefunded 19.99 for order 42.")
    assert "the refund ledger shows it went through" in (snapshot.messages[-1].text or "")
    key = f"{session_id}/turn-1/{interrupt.tool_call_id}"
    assert (tmp_path / REFUNDS_LOG).read_text().splitlines() == [f"order=42 amount=19.99 key={key}"]  # ran once
    (settled,) = [e for e in sessions.events(session_id) if e.type == "dex_agents.tool_outcome_settled"]
    assert (settled.payload["status"], settled.payload["settled_by"]) == ("succeeded", "reconcile")
    assert len(snapshot.tool_calls) == 0
