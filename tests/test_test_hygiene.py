"""The tests themselves are held to what makes them fail when the code moves: no test patches an
attribute with ``monkeypatch.setattr(..., raising=False)`` (a renamed constant or method would then be
patched into a new attribute nobody reads, and the test would pass without testing anything)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LENIENT_SETATTR = re.compile(r"\.setattr\((?:[^()]|\([^()]*\))*raising\s*=\s*False", re.DOTALL)


def test_no_test_patches_an_attribute_that_may_not_exist() -> None:
    offenders = [str(path.relative_to(TESTS)) for path in sorted(TESTS.rglob("*.py"))
                 if path != Path(__file__).resolve() and LENIENT_SETATTR.search(path.read_text(encoding="utf-8"))]
    assert offenders == [], f"monkeypatch.setattr(..., raising=False) in {offenders}"


def test_the_check_catches_a_lenient_patch() -> None:
    assert LENIENT_SETATTR.search('monkeypatch.setattr(module, "NAME", f(1), raising=False)')
    assert not LENIENT_SETATTR.search('monkeypatch.delenv("KEY", raising=False)')
