"""``dex-agents sessions ...`` against a running engine with a Worker child serving the support agent."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.session_client import AgentSessionTestClient
from tests.cli.support import cli_environment, run_cli
from tests.shell.agents import (
    LOOKUP_ANSWER,
    LOOKUP_MESSAGE,
    REFUND_ANSWER,
    REFUND_MESSAGE,
    WORKER_MODULE,
    build_support_flow,
    unique_flow_type,
    worker_environment,
)


def _support_agent(label: str, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
                   killable_worker: KillableWorkerFactory, tmp_path: Path) -> tuple[str, AgentSessionTestClient]:
    """A new Flow type of the support agent, served by a Worker child, and a session client for it."""
    flow_type = unique_flow_type(label)
    flow = build_support_flow(tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow], is_worker_in_process=False), flow)
    killable_worker(WORKER_MODULE, environment=worker_environment(tmp_path, flow_type))
    return flow_type, sessions


def test_list_show_approve_send_and_tail_a_session(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    killable_worker: KillableWorkerFactory, tmp_path: Path,
) -> None:
    flow_type, sessions = _support_agent("CliSessions", agent_environment, agent_sessions, killable_worker, tmp_path)
    sessions.start_session("cli-1", REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt("cli-1", "refund")
    server = {"DEX_SERVER_ADDRESS": dex_engine.server_address}

    def cli(*arguments: str) -> tuple[int, str, str]:
        result = run_cli("sessions", *arguments, "--flow-type", flow_type, environment=server)
        return result.returncode, result.stdout, result.stderr

    status, out, err = cli("list")
    assert status == 0, err
    assert "cli-1" in out and "running" in out

    status, out, err = cli("show", "cli-1")
    assert status == 0, err
    assert interrupt.interrupt_id in out and "awaiting_approval" in out and REFUND_MESSAGE in out

    status, out, err = cli("approve", "cli-1", interrupt.interrupt_id)
    assert status == 0, err
    assert f"interrupt {interrupt.interrupt_id} approved" in out
    sessions.wait_for_completed_turns("cli-1", 1)

    status, out, err = cli("approve", "cli-1", interrupt.interrupt_id)
    assert status == 1
    assert err.strip().splitlines() == [
        f"dex-agents: error: interrupt {interrupt.interrupt_id} is not pending "
        f"(hint: see the pending interrupts with: dex-agents sessions show cli-1)"]

    for command in (("show", "no-such-session"), ("tail", "no-such-session"), ("send", "no-such-session", "hi")):
        status, out, err = cli(*command)
        assert status == 1
        assert err.strip().splitlines() == ["dex-agents: error: session no-such-session was not found or is not "
                                            "running (hint: see the sessions with: dex-agents sessions list)"]

    status, out, err = cli("send", "cli-1", LOOKUP_MESSAGE, "--message-id", "cli-msg-1")
    assert status == 0, err
    assert "sent to cli-1" in out
    sessions.wait_for_completed_turns("cli-1", 2)
    status, out, err = cli("send", "cli-1", LOOKUP_MESSAGE, "--message-id", "cli-msg-1")  # repeated: nothing queued
    assert status == 0, err
    status, out, err = cli("send", "cli-1", LOOKUP_MESSAGE, "--message-id", "a/b")
    assert status == 2 and "message_id must not contain '/'" in err

    status, out, err = cli("tail", "cli-1", "--no-follow")
    assert status == 0, err
    assert out.index("turn 1") < out.index(REFUND_ANSWER) < out.index("turn 2") < out.index(LOOKUP_ANSWER)
    assert f"interrupt {interrupt.interrupt_id} approved" in out
    assert "tool refund finished: succeeded" in out and "tool lookup_order finished: succeeded" in out
    assert "turn 2 completed; usage: requests=2 input_tokens=20 output_tokens=10" in out

    status, out, err = cli("show", "cli-1")
    assert status == 0, err
    assert LOOKUP_ANSWER in out and "usage: requests=4 input_tokens=40 output_tokens=20" in out
    assert "turns 2 (completed 2, failed 0)" in out and "queued 0" in out

    status, out, err = cli("compact", "cli-1")  # two turns, both kept whole: nothing to compact yet
    assert status == 0, err
    assert "cli-1 has nothing to compact" in out
    sessions.send_user_message("cli-1", "hello")
    sessions.wait_for_completed_turns("cli-1", 3)
    status, out, err = cli("compact", "cli-1")
    assert status == 0, err
    assert "cli-1 compacts its history before its next model call" in out
    sessions.send_user_message("cli-1", "hello again")
    sessions.wait_for_completed_turns("cli-1", 4)
    compacted = [e for e in sessions.events("cli-1") if e.type == "dex_agents.history_compacted"]
    assert [e.payload["trigger"] for e in compacted] == ["requested"]
    messages = sessions.snapshot("cli-1").messages
    assert len(messages) == 12, "the transcript is never cut"
    assert messages[-1].text == "echo: hello again (3 messages)", "the model saw turns 3 and 4 after the summary"


def test_reject_tells_the_model(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    killable_worker: KillableWorkerFactory, tmp_path: Path,
) -> None:
    flow_type, sessions = _support_agent("CliReject", agent_environment, agent_sessions, killable_worker, tmp_path)
    sessions.start_session("cli-2", REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt("cli-2", "refund")

    result = run_cli("sessions", "reject", "cli-2", interrupt.interrupt_id, "--message", "not today",
                     "--flow-type", flow_type, "--server", dex_engine.server_address)
    assert result.returncode == 0, result.stderr
    sessions.wait_for_turns("cli-2", 1)
    tail = run_cli("sessions", "tail", "cli-2", "--no-follow", "--flow-type", flow_type,
                   "--server", dex_engine.server_address)
    assert tail.returncode == 0, tail.stderr
    assert f"interrupt {interrupt.interrupt_id} rejected: not today" in tail.stdout
    assert "tool refund finished: rejected" in tail.stdout


def _read_until(lines: queue.Queue[str], marker: str, seen: list[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(marker in line for line in seen):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no line with {marker!r}; seen: {seen}"
        try:
            seen.append(lines.get(timeout=remaining))
        except queue.Empty:
            continue


def test_tail_follows_new_turns_live_until_ctrl_c(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    killable_worker: KillableWorkerFactory, tmp_path: Path,
) -> None:
    flow_type, sessions = _support_agent("CliTail", agent_environment, agent_sessions, killable_worker, tmp_path)
    sessions.start_session("cli-3", LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns("cli-3", 1)
    tail = subprocess.Popen(
        [sys.executable, "-m", "dex_agents.cli", "sessions", "tail", "cli-3", "--flow-type", flow_type],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=cli_environment({"DEX_SERVER_ADDRESS": dex_engine.server_address}))
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []
    assert tail.stdout is not None
    stdout = tail.stdout

    def read_lines() -> None:
        for line in stdout:
            lines.put(line)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()
    try:
        _read_until(lines, "turn 1 completed", seen)
        sessions.send_user_message("cli-3", REFUND_MESSAGE)
        _read_until(lines, "approval needed for refund", seen)
        interrupt = sessions.wait_for_pending_interrupt("cli-3", "refund")
        sessions.resolve_interrupt("cli-3", interrupt.interrupt_id, True)
        _read_until(lines, "turn 2 completed", seen)
        tail.send_signal(signal.SIGINT)
        assert tail.wait(timeout=30) == 130
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()
        reader.join(timeout=5)
    text = "".join(seen)
    assert text.index(LOOKUP_ANSWER) < text.index("turn 2") < text.index("tool refund finished: succeeded")
    assert REFUND_ANSWER in text
