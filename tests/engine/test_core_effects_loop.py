"""The engine's one effects loop: operations hand their after-commit effects over as data
(``EngineCore.after_commit``) and only the loop performs them, depth first, when a ``locked()``
block ends or a scheduler callback returns. No operation re-enters it: the source says so (no
module but the core names the loop) and the loop refuses at run time (``EffectsLoopReentered``)."""

from __future__ import annotations

import ast
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from dex_agents.engine.core import EngineCore
from dex_agents.engine.performers import EffectsLoopReentered
from dex_agents.engine.engine import Engine
from dex_agents.engine.repository.store import Store
from dex_agents.engine.rows import Effects

ENGINE_SOURCES = Path(__file__).resolve().parents[2] / "engine" / "dex_agents" / "engine"
LOOP = "perform_pending"
LOOP_CALLERS = {"locked", "_after_callback"}
"""The core's two places that run the loop: a ``locked()`` block's end, a scheduler callback's end."""


def _calls_to(tree: ast.AST, name: str) -> list[ast.Attribute]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == name]


def test_no_module_but_the_core_runs_the_effects_loop() -> None:
    """Operations, adapters and the top module never name the loop (nor the old re-entrant ``apply``):
    they hand effects over with ``after_commit`` and the core performs them."""
    offenders: list[str] = []
    for path in sorted(ENGINE_SOURCES.rglob("*.py")):
        if path.name == "core.py" and path.parent == ENGINE_SOURCES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.name}:{node.lineno} .{node.attr}" for name in (LOOP, "apply", "_perform")
                      for node in _calls_to(tree, name)]
    assert not offenders, f"only the core may run the effects loop: {offenders}"


def test_inside_the_core_only_the_block_end_and_the_scheduler_hook_run_the_loop() -> None:
    tree = ast.parse((ENGINE_SOURCES / "core.py").read_text(encoding="utf-8"))
    callers = {function.name for function in ast.walk(tree) if isinstance(function, ast.FunctionDef)
               for call in _calls_to(function, LOOP)}
    assert callers == LOOP_CALLERS


class _Steps:
    """Step performers that record their calls; ``follow_ups`` are handed to the loop by a launch."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core
        self.calls: list[str] = []
        self.follow_ups: dict[str, Effects] = {}
        self.reenter = False

    def launch(self, uid: int, seid: str) -> None:
        self.calls.append(f"launch {seid}")
        if seid in self.follow_ups:
            self.core.after_commit(self.follow_ups.pop(seid))
        if self.reenter:
            self.core.perform_pending()  # what an operation must never do

    def drop_task(self, uid: int, seid: str) -> None:
        self.calls.append(f"drop {seid}")


class _Waits:
    """Wait performers that record their calls in the Step performers' list."""

    def __init__(self, steps: _Steps) -> None:
        self.calls = steps.calls

    def check_waits(self, uid: int) -> None:
        self.calls.append(f"check {uid}")

    def complete_waits(self, db: sqlite3.Connection, uid: int, effects: Effects) -> None:
        """Not called by the loop."""

    def fire_timer(self, uid: int, seid: str, idx: int) -> None:
        self.calls.append(f"timer {seid}")


class _Flows:
    def arm_timeout(self, uid: int, timeout_ms: int, timeout_policy: int) -> None:
        """Not needed here."""


@pytest.fixture
def core(tmp_path: Path) -> Iterator[tuple[EngineCore, _Steps]]:
    store = Store(tmp_path / "loop.db")
    try:
        engine_core = EngineCore(store)
        steps = _Steps(engine_core)
        engine_core.wire(steps, _Waits(steps), _Flows())
        yield engine_core, steps
    finally:
        store.close()


def test_effects_wait_for_the_end_of_the_block_and_follow_ups_go_first(core: tuple[EngineCore, _Steps]) -> None:
    """Nothing is performed while the block runs; a performer's follow-ups are performed before the
    rest of the batch that caused them (the order nested calls had), and later batches after that."""
    engine_core, steps = core
    steps.follow_ups["A-1"] = Effects(launches=[(1, "C-1")], cancels=[(1, "D-1")])
    with engine_core.locked():
        engine_core.after_commit(Effects(launches=[(1, "A-1"), (1, "B-1")], wait_checks={1}))
        engine_core.after_commit(Effects(launches=[(2, "E-1")]))
        assert steps.calls == [], "an operation's effects are performed only after its block"
    assert steps.calls == ["launch A-1", "drop D-1", "launch C-1", "launch B-1", "check 1", "launch E-1"]


def test_the_loop_refuses_to_be_reentered(core: tuple[EngineCore, _Steps]) -> None:
    engine_core, steps = core
    steps.reenter = True
    with pytest.raises(EffectsLoopReentered), engine_core.locked():
        engine_core.after_commit(Effects(launches=[(1, "A-1")]))
    steps.reenter = False
    with engine_core.locked():  # the failed loop dropped its work and is usable again
        engine_core.after_commit(Effects(launches=[(1, "B-1")]))
    assert steps.calls == ["launch A-1", "launch B-1"]


def test_the_engine_wires_its_components_into_the_loop_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "engine.db")
    try:
        engine = Engine(store)
        with engine.core.locked():
            engine.core.after_commit(Effects(launches=[(1, "S-1")]))  # no such run: the launch does nothing
        assert not engine.core.running
        with pytest.raises(RuntimeError, match="wired already"):
            engine.core.wire(engine.steps, engine.waits, engine.flows)
    finally:
        store.close()
