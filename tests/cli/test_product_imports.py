"""The product stands on its own: nothing the command line, the demo, the session client or the
Worker serving imports comes from the testing export."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SHELL = Path(__file__).resolve().parents[2] / "shell" / "dex_agents"
PRODUCT_PACKAGES = ("cli", "demo", "client", "serving", "console")


def _imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


@pytest.mark.parametrize("package", PRODUCT_PACKAGES)
def test_the_product_does_not_import_the_testing_export(package: str) -> None:
    offenders = {str(path.relative_to(SHELL)): sorted(module for module in _imported_modules(path)
                                                        if module == "dex_agents.testing"
                                                        or module.startswith("dex_agents.testing."))
                 for path in sorted((SHELL / package).rglob("*.py"))}
    assert {path: modules for path, modules in offenders.items() if modules} == {}
