"""Issue 29, finding 9: the ``sessions`` commands as a new user met them. A refused send is one clear
line (no SDK internals); a resend of a queued message ID says it was already queued and sends nothing;
``--debug`` works after a subcommand; ``show`` cuts long messages (``--full`` shows them whole);
``send`` reads ``-`` from stdin; ``--flow-type`` of another type is worded for any type name."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.cli.support import run_cli
from tests.shell.agents import LOOKUP_MESSAGE, build_support_flow, unique_flow_type


def test_the_sessions_commands_say_what_happened_in_words_of_their_own(
    dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
    tmp_path: Path,
) -> None:
    flow_type = unique_flow_type("CliFriction")
    flow = build_support_flow(tmp_path, flow_type=flow_type)
    sessions = agent_sessions(agent_environment([flow]), flow)  # the Worker runs in this process
    sessions.start_session("friction-1", LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns("friction-1", 1)
    server = {"DEX_SERVER_ADDRESS": dex_engine.server_address}

    def cli(*arguments: str, stdin_text: str | None = None) -> tuple[int, str, str]:
        result = run_cli("sessions", *arguments, environment=server, stdin_text=stdin_text)
        return result.returncode, result.stdout, result.stderr

    status, out, err = cli("send", "friction-1", LOOKUP_MESSAGE, "--message-id", "m-1")
    assert (status, out.strip()) == (0, "sent to friction-1"), err
    sessions.wait_for_completed_turns("friction-1", 2)
    status, out, err = cli("send", "friction-1", LOOKUP_MESSAGE, "--message-id", "m-1")
    assert (status, out.strip()) == (0, "message m-1 was already queued to friction-1: nothing sent"), err

    status, out, err = cli("send", "friction-1", "another text", "--message-id", "m-1")
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dex-agents: error: session friction-1 refused the message: "), err
    assert "WorkerInvocationError" not in err and "rpc send_user_message_once failed" not in err

    status, out, err = cli("send", "no-such-session", "hi", "--debug")  # --debug after the subcommand
    assert status == 1 and "No such option" not in err
    assert "Traceback" in err and "session no-such-session was not found" in err

    long_text = "x" * 5000
    status, out, err = cli("send", "friction-1", "-", stdin_text=long_text + "\n")
    assert (status, out.strip()) == (0, "sent to friction-1"), err
    sessions.wait_for_completed_turns("friction-1", 3)
    assert any(message.text == long_text for message in sessions.snapshot("friction-1").messages)

    status, out, err = cli("show", "friction-1")
    assert status == 0, err
    assert long_text not in out and "(4,000 more characters: --full shows them)" in out
    status, out, err = cli("show", "friction-1", "--full")
    assert status == 0, err
    assert long_text in out

    status, out, err = cli("show", "friction-1", "--flow-type", "Agent")
    assert status == 2
    assert f"session friction-1 has Flow type {flow_type}, not Agent" in err and "is a " not in err
