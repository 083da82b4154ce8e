"""The functional core stays pure: no module under ``pure/`` imports I/O, clocks, randomness, Dex,
gRPC, the shell or the engine, and none calls a clock (``datetime`` is allowed for pure formatting)."""

import ast
import re
from pathlib import Path

import pytest

PURE_ROOT = Path(__file__).resolve().parents[2] / "pure" / "dex_agents" / "pure"
FORBIDDEN_ROOTS = frozenset({"dex", "grpc", "time", "random", "uuid", "os", "asyncio", "socket", "sqlite3", "threading", "subprocess"})
CLOCK_CALLS = re.compile(r"\.(now|utcnow|today|fromtimestamp|perf_counter|monotonic|time_ns)\s*\(")
FORBIDDEN_PACKAGES = ("dex_agents.shell", "dex_agents.engine")


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            names.append(node.module)
    return names


def is_forbidden(module: str) -> bool:
    return module.split(".")[0] in FORBIDDEN_ROOTS or module.startswith(FORBIDDEN_PACKAGES)


PURE_MODULES = sorted(PURE_ROOT.rglob("*.py"))


def test_pure_package_has_modules() -> None:
    assert PURE_MODULES, f"no modules found under {PURE_ROOT}"


@pytest.mark.parametrize("path", PURE_MODULES, ids=lambda p: str(p.relative_to(PURE_ROOT)))
def test_pure_module_imports_nothing_impure(path: Path) -> None:
    offending = [name for name in imported_modules(path) if is_forbidden(name)]
    assert offending == [], f"{path.name} imports {offending}"


@pytest.mark.parametrize("path", PURE_MODULES, ids=lambda p: str(p.relative_to(PURE_ROOT)))
def test_pure_module_reads_no_clock(path: Path) -> None:
    assert CLOCK_CALLS.findall(path.read_text(encoding="utf-8")) == [], f"{path.name} reads a clock"


@pytest.mark.parametrize("module", ["time", "dex.client", "dex_agents.shell.flow", "dex_agents.engine", "os.path"])
def test_detector_flags_forbidden_imports(module: str) -> None:
    assert is_forbidden(module)


@pytest.mark.parametrize("module", ["dataclasses", "pyrsistent", "returns.result", "dex_agents.pure.values.session", "typing"])
def test_detector_allows_pure_imports(module: str) -> None:
    assert not is_forbidden(module)
