"""A missing framework extra and a bad ``--model`` are reported before anything starts, with a hint
whose install command works from this checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.support import run_cli

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture
def without_pydantic_ai(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import pydantic_ai`` fails as it does without the extra."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "pydantic_ai.py").write_text(
        'raise ModuleNotFoundError("No module named \'pydantic_ai\'", name="pydantic_ai")\n')
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    search_path = os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": search_path, "TMPDIR": str(scratch)}


def _install_hint() -> str:
    import sys

    return f'install the pydantic-ai extra: {sys.executable} -m pip install -e "{CHECKOUT}[pydantic-ai]"'


@pytest.mark.parametrize("command", [("demo",), ("demo", "--auto-approve"), ("chat",), ("chat", "--auto-approve")])
def test_without_the_extra_the_first_error_is_the_install_hint(command: tuple[str, ...],
                                                                without_pydantic_ai: dict[str, str]) -> None:
    result = run_cli(*command, environment=without_pydantic_ai, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"dex-agents: error: the demo agent cannot be loaded: No module named 'pydantic_ai' (hint: {_install_hint()})"]
    assert result.stdout == ""  # no engine, no Worker
    assert os.listdir(without_pydantic_ai["TMPDIR"]) == []


def test_a_worker_for_an_agent_whose_extra_is_missing_names_the_install(without_pydantic_ai: dict[str, str]) -> None:
    result = run_cli("worker", "--agent", "dex_agents.demo.support_agent:support_flow", "--server", "127.0.0.1:9",
                     environment=without_pydantic_ai, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"dex-agents: error: --agent: cannot import 'dex_agents.demo.support_agent': No module named 'pydantic_ai' "
        f"(hint: {_install_hint()})"]


MODEL_HINT = ("pass --model provider:name (e.g. openai:gpt-4o-mini) with the provider's API key set, or leave "
              "--model out for the scripted model, which needs no key")


@pytest.mark.parametrize(("command", "model", "problem"), [
    ("demo", "nonsense", "model must be 'provider:name', got 'nonsense'"),
    ("demo", "no-such-provider:model", "Unknown model: no-such-provider:model"),
    ("demo", "openai:gpt-4o-mini", "model 'openai:gpt-4o-mini' needs the environment variable OPENAI_API_KEY, "
                                   "which is not set"),
    ("chat", "anthropic:claude-sonnet-4-5", "model 'anthropic:claude-sonnet-4-5' needs the environment variable "
                                            "ANTHROPIC_API_KEY, which is not set"),
])
def test_a_bad_model_is_refused_before_anything_starts(command: str, model: str, problem: str, tmp_path: Path) -> None:
    environment = {"TMPDIR": str(tmp_path), "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    result = run_cli(command, "--model", model, environment=environment, timeout=60)  # no terminal either
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"dex-agents: error: --model {model!r}: {problem} (hint: {MODEL_HINT})"]
    assert result.stdout == "" and os.listdir(tmp_path) == []


def test_model_is_for_the_demo_agent_only(tmp_path: Path) -> None:
    result = run_cli("chat", "--agent", "tests.cli.stand_in_demo:chat_flow", "--model", "openai:gpt-4o",
                     environment={"TMPDIR": str(tmp_path)}, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "dex-agents: error: --model applies to the demo agent only (hint: drop --model, or drop --agent)"]
