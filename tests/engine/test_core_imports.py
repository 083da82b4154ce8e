"""Engine core, one-way imports: the engine package's modules import each other without a cycle,
counting every import (module level, inside functions, under ``TYPE_CHECKING``), so no module
dodges a cycle with a local import. Parses the sources with ``ast``; imports nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import dex_agents.engine

PACKAGE = "dex_agents.engine"
SOURCES = Path(dex_agents.engine.__file__).parent


def _module_names() -> set[str]:
    return {path.stem for path in SOURCES.glob("*.py")}


def imports_of(source: str, module: str, modules: set[str]) -> set[str]:
    """The package modules that ``module`` imports anywhere in ``source`` (``__init__`` is the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name[len(PACKAGE) + 1:].split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 1 or base == PACKAGE or base.startswith(PACKAGE + "."):
                inner = base if node.level == 1 else base[len(PACKAGE) + 1:]
                if inner:
                    found.add(inner.split(".")[0])
                else:  # ``from . import x`` / ``from dex_agents.engine import x``: x may be a module
                    found.update(alias.name for alias in node.names if alias.name in modules)
                    if not any(alias.name in modules for alias in node.names):
                        found.add("__init__")
    found.discard(module)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: imports_of((SOURCES / f"{name}.py").read_text(encoding="utf-8"), name, modules)
            for name in sorted(modules)}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle is not None:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle is not None:
                return cycle
    return None


def test_the_engine_package_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle in the engine package: " + " -> ".join(cycle or [])


def test_the_checker_sees_local_and_type_checking_imports() -> None:
    modules = {"a", "b", "c", "d"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import c\n"
        "if TYPE_CHECKING:\n    from .b import Thing\n"
        "def later() -> None:\n    from dex_agents.engine.d import helper\n"
    )
    assert imports_of(source, "a", modules) == {"b", "c", "d"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_core_imports_no_operation() -> None:
    graph = import_graph()
    operations = {"flows", "steps", "outcomes", "flow_rpcs", "streams", "queries", "step_creation", "subflows",
                  "flow_state", "reset", "continue_as_new", "engine", "recovery", "grpc_service", "worker_service", "server"}
    reachable: set[str] = set()
    frontier = ["core"]
    while frontier:
        for nxt in graph[frontier.pop()]:
            if nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    assert not reachable & operations, f"the core depends on operations: {sorted(reachable & operations)}"
