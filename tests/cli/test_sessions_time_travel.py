"""``dex-agents sessions rewind`` and ``sessions fork`` as subprocesses against the local engine, with the
support agent served by an in-process Worker: a rewind past an approved refund (a non-idempotent write)
names it and asks first (no: nothing changes; yes: rewound), ``--yes`` does not ask, a turn that has not
ended is one error line; a fork starts from turn 1 and the original is unchanged; both sessions' exports
replay identically (``sessions export``, ``replay``)."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.session_client import AgentSessionTestClient
from tests.cli.support import run_cli
from tests.shell.agents import LOOKUP_ANSWER, LOOKUP_MESSAGE, REFUND_MESSAGE, build_support_flow, unique_flow_type


def _refund_turn(sessions: AgentSessionTestClient, session_id: str, turns: int) -> None:
    assert sessions.send_user_message(session_id, REFUND_MESSAGE)
    interrupt = sessions.wait_for_pending_interrupt(session_id, "refund")
    assert sessions.resolve_interrupt(session_id, interrupt.interrupt_id, True)
    sessions.wait_for_completed_turns(session_id, turns)


def test_rewind_asks_before_removing_a_write_and_fork_starts_a_session_from_a_turn(
        dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        tmp_path: Path) -> None:
    flow_type = unique_flow_type("CliRewind")
    flow = build_support_flow(tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow]), flow)
    server = {"DEX_SERVER_ADDRESS": dex_engine.server_address}
    session_id = "cli-rewind-1"
    sessions.start_session(session_id, LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)
    after_turn_1 = sessions.snapshot(session_id)
    _refund_turn(sessions, session_id, 2)
    after_turn_2 = sessions.snapshot(session_id)
    key = f"{session_id}/turn-2/call-refund"

    declined = run_cli("sessions", "rewind", session_id, "--to-turn", "1", environment=server, stdin_text="n\n")
    assert declined.returncode == 1, declined.stdout + declined.stderr
    assert (f"rewinding {session_id} to right after turn 1 removes 1 turn(s); these tool calls may have had effects, "
            f"which a rewind does not undo:") in declined.stdout
    assert f"  refund  non_idempotent_write  succeeded  key {key}  (turn-2, call-refund)" in declined.stdout
    assert "rewind? [y/N]" in declined.stdout
    assert declined.stderr.strip() == ("dex-agents: error: not rewound: nothing changed (hint: pass --yes to rewind "
                                       "without asking)")
    assert sessions.snapshot(session_id) == after_turn_2

    not_ended = run_cli("sessions", "rewind", session_id, "--to-turn", "5", environment=server)
    assert (not_ended.returncode, not_ended.stderr.strip()) == (
        1, f"dex-agents: error: cannot rewind {session_id}: turn 5 has not ended: the session has ended 2 turns "
           f"(hint: see its turns with: dex-agents sessions show {session_id})")

    accepted = run_cli("sessions", "rewind", session_id, "--to-turn", "1", "--reason", "wrong order",
                       environment=server, stdin_text="y\n")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert f"rewound {session_id} to right after turn 1 (removed 1 turn(s)" in accepted.stdout
    assert "1 removed tool call(s) may have had effects, not undone:" in accepted.stdout
    assert f"  refund  non_idempotent_write  succeeded  key {key}" in accepted.stdout
    assert sessions.snapshot(session_id) == after_turn_1
    tail = run_cli("sessions", "tail", session_id, "--no-follow", environment=server)
    assert tail.returncode == 0 and "dex_agents.session_rewound" in tail.stdout, tail.stdout + tail.stderr

    _refund_turn(sessions, session_id, 2)
    without_asking = run_cli("sessions", "rewind", session_id, "--to-turn", "1", "--yes", environment=server)
    assert without_asking.returncode == 0, without_asking.stdout + without_asking.stderr
    assert "rewind?" not in without_asking.stdout and "rewinding" not in without_asking.stdout
    assert f"  refund  non_idempotent_write  succeeded  key {key}" in without_asking.stdout
    assert sessions.snapshot(session_id) == after_turn_1

    _refund_turn(sessions, session_id, 2)
    forked = run_cli("sessions", "fork", session_id, "--at-turn", "1", "cli-fork-1", environment=server)
    assert forked.returncode == 0, forked.stdout + forked.stderr
    assert forked.stdout.startswith(f"forked {session_id} after turn 1 into cli-fork-1 (run ")
    sessions.wait_for_status("cli-fork-1", "waiting_for_user_message")
    assert sessions.snapshot("cli-fork-1").messages == after_turn_1.messages
    assert sessions.snapshot("cli-fork-1").messages[-1].text == LOOKUP_ANSWER
    assert len(sessions.snapshot(session_id).messages) > len(after_turn_1.messages)  # the original is unchanged
    for exported_id in (session_id, "cli-fork-1"):  # dex-agents export and replay: identical
        out = tmp_path / f"{exported_id}.json"
        exported = run_cli("sessions", "export", exported_id, "--out", str(out), environment=server)
        assert exported.returncode == 0, exported.stderr
        replayed = run_cli("replay", str(out))
        assert replayed.returncode == 0 and "identical" in replayed.stdout, replayed.stdout + replayed.stderr
    assert '"rewound_runs": [' in (tmp_path / f"{session_id}.json").read_text(encoding="utf-8")
    assert "the export also holds 2 run(s) a rewind replaced (rewound_runs)" in run_cli(
        "replay", str(tmp_path / f"{session_id}.json")).stdout
    again = run_cli("sessions", "fork", session_id, "--at-turn", "3", "cli-fork-2", environment=server)
    assert (again.returncode, again.stderr.strip()) == (
        1, f"dex-agents: error: cannot fork {session_id}: turn 3 has not ended: the session has ended 2 turns "
           f"(hint: see its turns with: dex-agents sessions show {session_id})")
