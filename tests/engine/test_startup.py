"""Start-up as a new user meets it: a database the engine cannot write is refused before the ready
line (and the error names the database, not the address); ``start_engine(db_path)`` creates a
missing directory in process and as a child alike; a failed child start leaves no temporary log;
``--log-level`` takes any case; every third-party module the engine imports is declared; and
SearchFlows splits clauses only on an ``AND`` outside quoted values."""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path

import pytest
from dex import Channel, Context, PersistenceSchema, Step, StepDecision, StepList, Wait, dead_end

from dex_agents.engine import EngineProcess, EngineServer, start_engine
from dex_agents.engine.launch import EngineStartError
from dex_agents.engine.repository.store import DatabaseError, Store
from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow
from tests.engine.processes import REPO_ROOT, engine_is_healthy

ENGINE_PACKAGE = REPO_ROOT / "engine" / "dex_agents" / "engine"
_never = Channel("Never", str)


def _run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``dex-agents engine``; stdin at end of file makes a started engine stop at once."""
    return subprocess.run(
        [sys.executable, "-m", "dex_agents.engine.cli", "engine", "--port", "0", "--stop-on-stdin-eof", *args],
        cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
    )


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """Make ``path`` unwritable for this process: mode 0444, or for root (which ignores modes) the
    immutable attribute; restored on exit so the temporary directory can be removed."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
        return
    subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True, capture_output=True)


def _existing_database(tmp_path: Path) -> Path:
    db = tmp_path / "engine.sqlite3"
    Store(db).close()
    return db


def test_a_read_only_database_is_refused_before_the_ready_line(tmp_path: Path) -> None:
    db = _existing_database(tmp_path)
    with _read_only(db):
        result = _run_cli("--db", str(db), cwd=tmp_path)
    assert "ready on" not in result.stdout
    assert result.returncode == 2, result.stderr
    assert f"--db {db}" in result.stderr and "cannot start on" not in result.stderr


def test_a_read_only_database_fails_an_in_process_start(tmp_path: Path) -> None:
    db = _existing_database(tmp_path)
    with _read_only(db), pytest.raises(DatabaseError, match="readonly|not writable|cannot be used"):
        EngineServer(db).start()


def test_a_database_in_use_is_blamed_not_the_address(tmp_path: Path) -> None:
    db = tmp_path / "engine.sqlite3"
    holder = Store(db)
    try:
        result = _run_cli("--db", str(db), cwd=tmp_path)
    finally:
        holder.close()
    assert result.returncode == 2, result.stderr
    assert "in use by another engine" in result.stderr
    assert "cannot start on" not in result.stderr and f"--db {db}" in result.stderr


@pytest.mark.parametrize("in_process", [True, False])
def test_start_engine_creates_a_missing_database_directory_either_way(tmp_path: Path, in_process: bool) -> None:
    db = tmp_path / "new" / "state" / "engine.sqlite3"
    with start_engine(db, in_process=in_process) as engine:
        assert engine_is_healthy(engine.address, tmp_path)
    assert db.is_file()


def test_a_failed_child_start_leaves_no_temporary_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with pytest.raises(EngineStartError, match="does not exist"):
        EngineProcess.start(tmp_path / "engine.sqlite3", token_file=tmp_path / "absent")
    engine = EngineProcess.start(tmp_path / "engine.sqlite3")
    assert engine.log_path.parent == temp
    engine.stop()
    assert sorted(temp.iterdir()) == []


def test_log_level_accepts_any_case(tmp_path: Path) -> None:
    result = _run_cli("--db", str(tmp_path / "engine.sqlite3"), "--log-level", "info", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ready on 127.0.0.1:" in result.stdout


def _imported_modules(package: Path) -> set[str]:
    """Every absolute module the package's sources import (``from x import y`` counts ``x.y`` too)."""
    found: set[str] = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return found


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    return metadata.packages_distributions()  # scans every installed distribution: once


@functools.cache
def _distribution_files(name: str) -> tuple[str, ...]:
    return tuple(str(file) for file in metadata.distribution(name).files or [])


def _distributions_providing(module: str) -> set[str]:
    top = module.split(".")[0]
    prefix = module.replace(".", "/")
    return {name for name in _packages_distributions().get(top, [])
            if any(file.startswith(prefix) for file in _distribution_files(name))}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_third_party_module_the_engine_imports_is_declared() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {_normalized(match.group(0)) for requirement in project["dependencies"]
                if (match := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement))}
    third_party = {m for m in _imported_modules(ENGINE_PACKAGE)
                   if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "dex_agents"}
    missing = {module: sorted(providers) for module in sorted(third_party)
               if not (providers := {_normalized(d) for d in _distributions_providing(module)}) & declared}
    assert third_party and not missing, f"imported by the engine but not declared: {missing}"


class _Park(Step[str]):
    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(_never.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        return dead_end()


class _ParkFlow(NamedFlow[str]):
    def get_steps(self) -> StepList[str]:
        return StepList.start_step(_Park())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(_never)


def test_search_keeps_an_and_inside_a_quoted_value(dex: DexFixture) -> None:
    flow = _ParkFlow(dex.flow_type())
    harness = dex.start(flow)
    flow_id = f"rock and roll {dex.flow_id()}"
    harness.client.start_flow(flow, flow_id, "x")
    page = harness.client.search_flows(f"FlowId = '{flow_id}' AND FlowType = '{flow.get_flow_type()}'", 10, "")
    assert [entry.flow_id for entry in page.flows] == [flow_id]
