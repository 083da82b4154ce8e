"""The rooms of ``dex_agents.pure`` import one way (``dex_agents.pure.ROOMS``): every module's imports,
read with ``ast``, name only its own room and the rooms its room may import; outside ``machine`` the
reducers are reached through ``machine.reducers`` alone; every module sits in a room of the table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dex_agents.pure import ROOMS

PURE_ROOT = Path(__file__).resolve().parents[2] / "pure" / "dex_agents" / "pure"
PACKAGE = "dex_agents.pure"
REDUCERS = f"{PACKAGE}.machine.reducers"
MODULES = sorted(path for path in PURE_ROOT.rglob("*.py") if path != PURE_ROOT / "__init__.py")


def room_of(path: Path) -> str:
    """The room a module of ``pure/`` sits in: the first folder under the package."""
    return path.relative_to(PURE_ROOT).parts[0]


def pure_imports(source: str) -> list[str]:
    """Every ``dex_agents.pure`` module ``source`` imports, ``from package import name`` read as
    ``package.name`` (the name may be a module)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return [name for name in names if name == PACKAGE or name.startswith(f"{PACKAGE}.")]


def reaches_into_reducers(name: str) -> bool:
    """Whether ``name`` is one reducer module (or a name in one), not the ``machine.reducers`` package."""
    if not name.startswith(f"{REDUCERS}."):
        return False
    rest = name.removeprefix(f"{REDUCERS}.").split(".")
    return len(rest) > 1 or (PURE_ROOT / "machine" / "reducers" / f"{rest[0]}.py").exists()


def forbidden_imports(room: str, source: str) -> list[str]:
    """The imports in ``source`` (a module of ``room``) that break the rooms' rules."""
    allowed = ROOMS[room] | {room}
    offending: list[str] = []
    for name in pure_imports(source):
        parts = name.split(".")
        target = parts[2] if len(parts) > 2 else None
        if target is None or target not in ROOMS:
            offending.append(f"{name} (not a room)")
        elif target not in allowed:
            offending.append(f"{name} ({room} may import {sorted(allowed)})")
        elif room != "machine" and reaches_into_reducers(name):
            offending.append(f"{name} (a reducer's module: outside machine, import from {REDUCERS})")
    return offending


def test_every_module_sits_in_a_room() -> None:
    assert MODULES
    assert {room_of(path) for path in MODULES} <= set(ROOMS), "a folder of pure/ is missing from ROOMS"
    assert set(ROOMS) <= {room_of(path) for path in MODULES}, "ROOMS names a folder pure/ lacks"


def test_rooms_are_a_one_way_order() -> None:
    """No cycle: each room's allowed rooms are allowed to it transitively already, and never itself."""
    for room, below in ROOMS.items():
        assert room not in below
        for lower in below:
            assert ROOMS[lower] <= below, f"{room} may import {lower} but not everything {lower} imports"
            assert room not in ROOMS[lower], f"{room} and {lower} may import each other"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PURE_ROOT)))
def test_module_imports_only_the_rooms_below(path: Path) -> None:
    offending = forbidden_imports(room_of(path), path.read_text(encoding="utf-8"))
    assert offending == [], f"{path.relative_to(PURE_ROOT)} imports {offending}"


@pytest.mark.parametrize(
    ("room", "source"),
    [
        ("wire", "from dex_agents.pure.values.session import AgentState"),
        ("values", "from dex_agents.pure.flow.table import STEP_TABLE"),
        ("flow", "from dex_agents.pure.machine import events"),
        ("machine", "import dex_agents.pure.offline.replay"),
        ("offline", "from dex_agents.pure.machine.reducers.model import reduce_model_step_started"),
        ("offline", "from dex_agents.pure.machine.reducers import model"),
        ("offline", "from dex_agents.pure import ROOMS"),
    ],
)
def test_detector_flags_a_forbidden_import(room: str, source: str) -> None:
    assert forbidden_imports(room, source) != []


@pytest.mark.parametrize(
    ("room", "source"),
    [
        ("offline", "from dex_agents.pure.machine.reducers import reduce, snapshot_of"),
        ("offline", "from dex_agents.pure.wire import encode"),
        ("machine", "from dex_agents.pure.machine.reducers.common import go_to"),
        ("machine", "from dex_agents.pure.flow import table"),
        ("values", "import pyrsistent"),
    ],
)
def test_detector_allows_the_rooms_below(room: str, source: str) -> None:
    assert forbidden_imports(room, source) == []
