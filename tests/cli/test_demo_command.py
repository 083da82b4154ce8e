"""``dex-agents demo`` end to end: a local engine, a Worker child, the scripted turns, approvals, a crash.

The loop is tested with ``tests.cli.stand_in_demo`` (a scripted agent with the demo's tools, refunds
log and crash gate, no model); the command itself runs as a user runs it once ``dex_agents.demo``
is installed.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from dex_agents.cli.demo_command import DemoOptions, run_demo
from dex_agents.cli.frameworks import Framework
from tests.cli import stand_in_demo
from tests.cli.support import run_cli

STAND_IN = {"agent": "tests.cli.stand_in_demo:support_flow"}
HAS_DEMO = importlib.util.find_spec("dex_agents.demo") is not None


def _demo_output(*, crash: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the demo's scratch directory, checked afterwards
    output = io.StringIO()
    console = Console(file=output, width=200, color_system=None)
    assert run_demo(DemoOptions(auto_approve=True, crash=crash, agent=STAND_IN["agent"]), console) == 0
    assert list(tmp_path.iterdir()) == [], "the demo left files behind"
    return output.getvalue()


def test_the_demo_runs_every_turn_with_approval_and_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _demo_output(crash=False, tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert text.index(stand_in_demo.LOOKUP_ANSWER) < text.index("auto-approved refund_order")
    assert text.index("auto-approved refund_order") < text.index(stand_in_demo.REFUND_ANSWER)
    assert "tool refund_order finished: succeeded" in text
    assert "turn 2 completed; usage: requests=2 input_tokens=20 output_tokens=10" in text
    assert "refunds performed: 1" in text and "outcome_unknown" not in text


def test_the_crash_demo_records_outcome_unknown_and_refunds_once(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    text = _demo_output(crash=True, tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert "CRASH: Worker pid" in text and "worker 2: pid" in text
    assert "tool refund_order finished: outcome_unknown" in text
    assert "the model was told: The tool call's outcome is unknown" in text
    assert "refunds performed: 1" in text


@pytest.mark.skipif(not HAS_DEMO, reason="dex_agents.demo is not installed")
@pytest.mark.parametrize("framework", [framework.value for framework in Framework])
def test_demo_auto_approve_as_a_user_runs_it(tmp_path: Path, framework: str) -> None:
    result = run_cli("demo", "--auto-approve", "--framework", framework, environment={"TMPDIR": str(tmp_path)},
                     timeout=300)
    assert result.returncode == 0, result.stderr
    assert "tool lookup_order finished: succeeded" in result.stdout
    assert "auto-approved refund_order" in result.stdout and "tool refund_order finished: succeeded" in result.stdout
    assert "turn 2 completed; usage: requests=" in result.stdout
    assert "refunds performed: 1" in result.stdout
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not HAS_DEMO, reason="dex_agents.demo is not installed")
@pytest.mark.parametrize("framework", [framework.value for framework in Framework])
def test_demo_crash_as_a_user_runs_it(tmp_path: Path, framework: str) -> None:
    result = run_cli("demo", "--crash", "--auto-approve", "--framework", framework,
                     environment={"TMPDIR": str(tmp_path)}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "CRASH: Worker pid" in result.stdout and "worker 2: pid" in result.stdout
    assert "tool refund_order: the unknown outcome was settled by its reconcile check: succeeded" in result.stdout
    assert "tool refund_order finished: succeeded" in result.stdout and "outcome_unknown" not in result.stdout
    assert "the model was told: [Dex] The outcome was unknown (" in result.stdout
    assert "the tool's reconcile check settled it as succeeded" in result.stdout
    assert "refunds performed: 1" in result.stdout
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not HAS_DEMO, reason="dex_agents.demo is not installed")
def test_demo_subagent_shows_the_childs_tool_calls_indented_under_the_parents(tmp_path: Path) -> None:
    result = run_cli("demo", "--subagent", "--auto-approve", environment={"TMPDIR": str(tmp_path)}, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    requested = lines.index("  tool ask_billing requested (non_idempotent_write)")
    child = [line for line in lines[requested + 1:] if line.startswith("    │ ")]
    assert child[0].startswith("    │ child session SubFlow:demo-") and child[0].endswith("(BillingAgent)")
    assert "    │   tool refund_order finished: succeeded" in child and "    │ child session ended: COMPLETED" in child
    after = lines.index("    │ child session ended: COMPLETED")
    assert requested < lines.index("    │   tool refund_order started") < after < lines.index(
        "  tool ask_billing finished: succeeded")
    assert any(line.startswith("  sub-agent ask_billing: child session SubFlow:demo-") for line in lines)
    assert "The billing agent answered: Done: Refunded 19.99 for order 42." in result.stdout
    assert "tool call ask_billing: succeeded" in result.stdout and "refunds performed: 1" in result.stdout
    assert os.listdir(tmp_path) == []


def test_demo_subagent_refuses_another_framework_or_crash() -> None:
    for extra in (("--framework", "langchain"), ("--crash",)):
        result = run_cli("demo", "--subagent", "--auto-approve", *extra, timeout=60)
        assert result.returncode == 2 and "--subagent runs on Pydantic AI" in result.stdout + result.stderr
