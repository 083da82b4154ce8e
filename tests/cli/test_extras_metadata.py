"""The extras install what the README's examples import (issue 29, finding 2): the ``pydantic-ai`` extra
carries a model provider usable from the README (``pydantic-ai-slim[openai]``: ``OpenAIChatModel``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def test_the_pydantic_ai_extra_installs_the_openai_provider() -> None:
    requirements = _extras()["pydantic-ai"]
    assert any(re.match(r"pydantic-ai-slim\[[^\]]*\bopenai\b[^\]]*\]", requirement) for requirement in requirements), \
        requirements


def test_the_readme_says_which_provider_the_extra_installs_and_how_to_add_others() -> None:
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    assert "pydantic-ai-slim[openai]" in readme
    assert 'pip install "pydantic-ai-slim[anthropic]' in readme
