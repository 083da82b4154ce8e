"""Engine rooms, one-way imports: the engine package's modules import each other without a cycle,
counting every import (module level, inside functions, under ``TYPE_CHECKING``), so no module
dodges a cycle with a local import; and every import follows the layer table (``LAYERS``,
``MAY_IMPORT``): the adapters in particular never import storage (the repository). Parses the
sources with ``ast``; imports nothing of the engine beyond its package path."""

from __future__ import annotations

import ast
from pathlib import Path

import dex_agents.engine

PACKAGE = "dex_agents.engine"
SOURCES = Path(dex_agents.engine.__file__).parent

LAYERS: dict[str, frozenset[str]] = {
    "package": frozenset({"__init__"}),
    "leaves": frozenset({"errors", "durability", "timing", "lock_discipline", "blobs", "policy", "rows",
                         "step_phase", "waits", "reset_replay", "attribute_locks", "request_checks", "auth",
                         "child_group"}),
    "storage": frozenset({"repository"}),
    "offline": frozenset({"run_history"}),
    "scheduling": frozenset({"tasks", "pending", "scheduler", "dispatch", "long_polls"}),
    "core": frozenset({"core"}),
    "operations": frozenset({"history", "step_creation", "streams", "channels", "queries", "flow_state", "flows",
                             "subflows", "outcomes", "steps", "flow_rpcs", "reset", "continue_as_new"}),
    "top": frozenset({"engine", "recovery", "backup"}),
    "adapters": frozenset({"grpc_service", "worker_service", "server", "launch", "cli"}),
}
"""Each engine module (the ``repository`` package counts as one) in exactly one layer."""

MAY_IMPORT: dict[str, frozenset[str]] = {
    "package": frozenset({"leaves", "adapters"}),  # lazily, by name only (``__init__``)
    "leaves": frozenset({"leaves"}),
    "storage": frozenset({"leaves"}),
    "offline": frozenset({"storage"}),
    "scheduling": frozenset({"leaves", "scheduling"}),
    "core": frozenset({"leaves", "storage", "scheduling"}),
    "operations": frozenset({"leaves", "storage", "scheduling", "core", "operations"}),
    "top": frozenset({"leaves", "storage", "scheduling", "core", "operations", "top"}),
    "adapters": frozenset({"leaves", "scheduling", "core", "operations", "top", "adapters"}),
}
"""Which layers a layer's modules may import (its own included only where listed). The adapters
(the gRPC service, the Worker stream service, the server, the launcher, the command line) reach
storage only through the engine, never by importing the repository."""


def _node(path: Path) -> str:
    """The graph node of a source file: its module name, or its top package's (``repository``)."""
    parts = path.relative_to(SOURCES).parts
    return parts[0] if len(parts) > 1 else path.stem


def _module_names() -> set[str]:
    return {_node(path) for path in SOURCES.rglob("*.py")}


def imports_of(source: str, module: str, modules: set[str], package: tuple[str, ...] = ()) -> set[str]:
    """The package modules that ``module`` (a file in the subpackage ``package`` of the engine, or at
    its top) imports anywhere in ``source`` (``__init__`` is the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name[len(PACKAGE) + 1:].split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                parts = [*above, *base.split(".")] if base else list(above)
            elif base == PACKAGE or base.startswith(PACKAGE + "."):
                parts = base[len(PACKAGE) + 1:].split(".") if base != PACKAGE else []
            else:
                continue
            if parts:
                found.add(parts[0])
            else:  # ``from . import x`` / ``from dex_agents.engine import x``: x may be a module
                found.update(alias.name for alias in node.names if alias.name in modules)
                if not any(alias.name in modules for alias in node.names):
                    found.add("__init__")
    found.discard(module)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    modules = _module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for path in sorted(SOURCES.rglob("*.py")):
        name = _node(path)
        package = path.relative_to(SOURCES).parts[:-1]
        graph[name] |= imports_of(path.read_text(encoding="utf-8"), name, modules, package)
    return graph


def layer_of(module: str) -> str:
    return next(layer for layer, members in LAYERS.items() if module in members)


def forbidden_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import the layer table does not allow, as ``module (layer) -> module (layer)``."""
    return [f"{module} ({layer_of(module)}) -> {target} ({layer_of(target)})"
            for module in sorted(graph) for target in sorted(graph[module])
            if layer_of(target) not in MAY_IMPORT[layer_of(module)]]


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
    assert imports_of("from ..rows import Row\nfrom .store import Store\n", "repository", {"rows", "repository"},
                      ("repository",)) == {"rows"}
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


def test_every_engine_module_is_in_exactly_one_layer() -> None:
    placed = [module for members in LAYERS.values() for module in members]
    assert len(placed) == len(set(placed)), "a module is in two layers"
    assert set(placed) == _module_names(), (
        f"unplaced: {sorted(_module_names() - set(placed))}; stale: {sorted(set(placed) - _module_names())}")


def test_every_import_follows_the_layer_table() -> None:
    forbidden = forbidden_imports(import_graph())
    assert not forbidden, "imports the layer table forbids: " + "; ".join(forbidden)


def test_the_adapters_never_import_storage() -> None:
    graph = import_graph()
    assert "storage" not in MAY_IMPORT["adapters"]
    offenders = {module: sorted(graph[module] & LAYERS["storage"]) for module in sorted(LAYERS["adapters"])
                 if graph[module] & LAYERS["storage"]}
    assert not offenders, f"adapters importing storage (go through the engine instead): {offenders}"


def test_the_table_check_reports_a_forbidden_import() -> None:
    graph = {"grpc_service": {"repository"}, "repository": set()}
    assert forbidden_imports(graph) == ["grpc_service (adapters) -> repository (storage)"]
