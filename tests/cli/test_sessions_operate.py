"""``dex-agents sessions approve --edit-arguments``, ``extend`` and ``resolve`` as subprocesses against a
running engine with a Worker child serving the support agent (issue 25): an approval bound to the
arguments the approver saw and edited, a deadline moved, an unknown outcome settled; every bad input
is one line saying why, exits non-zero and changes nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from dex_agents.client import SessionClient
from dex_agents.pure.machine.deadlines import parse_instant
from dex_agents.pure.values.session import ToolCallStatus, text_sha256
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import background_cli, run_cli, served_support_agent, sessions_cli
from tests.shell.agents import (
    LOST_REFUND_ANSWER,
    LOST_REFUND_CALL_ID,
    LOST_REFUND_MESSAGE,
    REFUND_ANSWER,
    REFUND_CALL_ID,
    REFUND_MESSAGE,
    tool_invocations,
)

DEADLINE_MS = 3_600_000


def test_approve_with_edited_arguments_extend_and_resolve(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    killable_worker: KillableWorkerFactory, tmp_path: Path,
) -> None:
    flow_type, sessions = served_support_agent("CliOperate", agent_environment, agent_sessions, killable_worker,
                                               tmp_path, interrupt_deadline_ms=DEADLINE_MS)
    cli = sessions_cli(dex_engine.server_address)
    # An approval bound to its arguments, a deadline moved, then the edit.
    assert cli("start", flow_type, "op-1", REFUND_MESSAGE)[0] == 0
    interrupt = sessions.wait_for_pending_interrupt("op-1", "refund")
    status, out, err = cli("show", "op-1")
    assert status == 0 and f"arguments_sha256={interrupt.arguments_sha256}" in out, err

    status, out, err = cli("approve", "op-1", interrupt.interrupt_id, "--edit-arguments", '{"order_id":7}',
                           "--arguments-sha256", text_sha256('{"order_id":4200}'), "--approver", "ana")
    assert status == 1 and "the approver saw other arguments" in err, (out, err)
    status, out, err = cli("approve", "op-1", interrupt.interrupt_id, "--edit-arguments", "[7]")
    assert status == 1 and "edited_arguments must be a JSON object" in err, (out, err)
    status, out, err = cli("extend", "op-1", interrupt.interrupt_id)
    assert (status, err.strip()) == (2, "dex-agents: error: give exactly one of --deadline-ms and --minutes")
    status, out, err = cli("extend", "op-1", "turn-1:nope", "--minutes", "90")
    assert status == 1 and "the deadline of interrupt turn-1:nope did not move" in err, (out, err)
    assert [i.interrupt_id for i in sessions.sessions.pending_interrupts("op-1")] == [interrupt.interrupt_id]
    assert tool_invocations(tmp_path).entries() == []  # nothing ran

    status, out, err = cli("extend", "op-1", interrupt.interrupt_id, "--minutes", "120")
    assert status == 0, err
    (moved,) = sessions.sessions.pending_interrupts("op-1")
    assert moved.deadline is not None and interrupt.deadline is not None
    assert parse_instant(moved.deadline) > parse_instant(interrupt.deadline)
    assert out.strip() == f"interrupt {interrupt.interrupt_id} now expires at {moved.deadline}"

    status, out, err = cli("approve", "op-1", interrupt.interrupt_id, "--edit-arguments", '{"order_id":7}',
                           "--arguments-sha256", interrupt.arguments_sha256 or "", "--approver", "ana",
                           "--reason", "wrong order")
    assert status == 0, err
    assert out.strip() == f"interrupt {interrupt.interrupt_id} approved with edited arguments; the call runs with them"
    sessions.wait_for_completed_turns("op-1", 1)
    assert tool_invocations(tmp_path).entries() == [f"refund:op-1/turn-1/{REFUND_CALL_ID}"]  # once, its own key
    assert sessions.snapshot("op-1").messages[-1].text == REFUND_ANSWER

    # An unknown outcome settled.
    assert cli("start", flow_type, "op-2", LOST_REFUND_MESSAGE)[0] == 0
    sessions.wait_for_completed_turns("op-2", 1)
    assert sessions.snapshot("op-2").messages[-1].text == LOST_REFUND_ANSWER
    resolve = ("resolve", "op-2", LOST_REFUND_CALL_ID)
    for arguments, code, says in [
        (("--status", "maybe", "--output", "x", "--resolver", "bo"), 2, "--status must be succeeded or failed"),
        (("--status", "failed", "--output", "x", "--resolver", "bo"), 2, "--status failed takes --message (only)"),
        (("--status", "succeeded", "--output", "x", "--resolver", " "), 2, "--resolver must name who settles"),
    ]:
        status, out, err = cli(*resolve, *arguments)
        assert (status, says in err) == (code, True), (arguments, out, err)
    status, out, err = cli("resolve", "op-2", "nope", "--status", "failed", "--message", "x", "--resolver", "bo")
    assert status == 1 and "no tool call 'nope' of this session has an unknown outcome" in err, (out, err)
    still = sessions.sessions.unknown_outcome("op-2", LOST_REFUND_CALL_ID)
    assert still is not None and still.status is ToolCallStatus.OUTCOME_UNKNOWN

    status, out, err = cli(*resolve, "--status", "succeeded", "--output", "refund rf_1 found", "--resolver",
                           "bo@ops", "--reason", "bank statement")
    assert status == 0, err
    assert out.strip() == (f"tool call {LOST_REFUND_CALL_ID} settled as succeeded by bo@ops; the session's next "
                           "model call is told")
    sessions.wait_for_completed_turns("op-2", 2)
    told = sessions.snapshot("op-2").messages[-1].text or ""
    assert told.startswith("echo: [Dex] An operator settled the outcome of an earlier tool call, lost_refund")
    assert "bo@ops settled it as succeeded. Reason: bank statement.\nrefund rf_1 found" in told
    status, out, err = cli(*resolve, "--status", "failed", "--message", "no", "--resolver", "ana")
    assert status == 1 and "was already settled as succeeded by bo@ops" in err, (out, err)


@pytest.mark.skipif(importlib.util.find_spec("pydantic_ai") is None, reason="the pydantic-ai extra is not installed")
def test_approve_with_edited_arguments_is_checked_by_the_tools_schema(tmp_path: Path) -> None:
    """The demo agent (Pydantic AI) served by ``dex-agents worker``: an edit its tool's schema refuses
    exits 1 with Pydantic AI's validation error and leaves the approval pending; a valid one runs once."""
    state = tmp_path / "state"
    engine_directory = tmp_path / "engine"
    engine_directory.mkdir()
    with background_cli("engine", "--port", "0", "--db", str(engine_directory / "engine.sqlite3")) as engine:
        address = engine.wait_for_line("dex-agents engine ready on ").split()[4].rstrip(";")
        server = ("--server", address)
        with background_cli("worker", "--agent", "dex_agents.demo.support_agent:support_flow", *server,
                            environment={"DEX_AGENTS_DEMO_STATE_DIR": str(state), "TMPDIR": str(tmp_path)}) as worker:
            worker.wait_for_line("dex-agents worker ready")
            assert run_cli("sessions", "start", "SupportAgent", "edit-1", "Please refund order 42", *server
                           ).returncode == 0
            with SessionClient.connect(address, "SupportAgent") as sessions:
                interrupt = sessions.wait_for_pending_interrupt("edit-1", "refund_order")
                bad = run_cli("sessions", "approve", "edit-1", interrupt.interrupt_id, *server, "--edit-arguments",
                              '{"order_id":42,"amount":"lots"}', "--arguments-sha256",
                              interrupt.arguments_sha256 or "", "--approver", "ana")
                assert bad.returncode == 1, bad.stdout
                assert "the edited arguments were refused: Invalid arguments for tool 'refund_order'" in bad.stderr
                assert "amount" in bad.stderr and f"interrupt {interrupt.interrupt_id} is pending again" in bad.stderr
                assert [i.interrupt_id for i in sessions.pending_interrupts("edit-1")] == [interrupt.interrupt_id]
                assert not (state / "refunds.log").exists()  # nothing ran

                good = run_cli("sessions", "approve", "edit-1", interrupt.interrupt_id, *server, "--edit-arguments",
                               '{"order_id":42,"amount":5}', "--arguments-sha256", interrupt.arguments_sha256 or "",
                               "--approver", "ana", "--reason", "partial refund")
                assert good.returncode == 0, good.stderr
                sessions.wait_for_completed_turns("edit-1", 1)
                assert (state / "refunds.log").read_text().splitlines() == [
                    f"order=42 amount=5.00 key=edit-1/turn-1/{interrupt.tool_call_id}"]  # once, with the edit
                sessions.stop("edit-1")
