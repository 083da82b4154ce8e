"""What an engine child imports, since every child pays for it at start: bad arguments are refused
before grpc or the server is imported; a launcher that only starts children imports neither; a
serving engine loads the SDK's protocol modules (``dex.dexpb``) without the rest of the SDK, and the
``dex`` package still loads in full, in that process, on the first use of one of its names."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEAVY = ("grpc", "dex", "dex_agents.engine.server")
"""Modules (with their submodules) a refused start must not import."""


def _run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, check=False)


def _imported(importtime_stderr: str) -> set[str]:
    """The modules a ``python -X importtime`` run imported, read from its stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime_stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2} - {"package"}


def _within(modules: set[str], package: str) -> set[str]:
    return {name for name in modules if name == package or name.startswith(package + ".")}


@pytest.mark.parametrize(("args", "needle", "allowed"), [
    (("--port", "eighty"), "not a port number: 'eighty'", ()),
    (("--db", "absent-directory/engine.sqlite3"), "directory absent-directory does not exist", ()),
    (("--token-file", "absent-token"), "--token-file", ("grpc",)),
], ids=["bad-port", "missing-db-directory", "missing-token-file"])
def test_a_refused_start_imports_neither_grpc_nor_the_server(
        tmp_path: Path, args: tuple[str, ...], needle: str, allowed: tuple[str, ...]) -> None:
    result = _run_python("-X", "importtime", "-m", "dex_agents.engine.cli", "engine", "--port", "0", *args,
                         cwd=tmp_path)
    assert result.returncode == 2 and needle in result.stderr, result.stderr[-2000:]
    imported = _imported(result.stderr)
    assert "dex_agents.engine.launch" in imported, "the importtime report was read"
    for package in HEAVY:
        if package not in allowed:
            assert not _within(imported, package), f"{package} imported by a refused start"


def test_a_launcher_imports_neither_grpc_nor_the_server(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys
        from dex_agents.engine import Durability, EngineProcess
        print(sorted(name for name in sys.modules if name.split(".")[0] in ("grpc", "dex")
                     or name == "dex_agents.engine.server"))
        """)
    result = _run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_serving_engine_loads_the_protocol_modules_without_the_rest_of_the_sdk(tmp_path: Path) -> None:
    # stdin at end of file: the engine stops right after its ready line (exit 0).
    result = _run_python("-X", "importtime", "-m", "dex_agents.engine.cli", "engine", "--port", "0",
                         "--db", str(tmp_path / "engine.sqlite3"), "--stop-on-stdin-eof", cwd=tmp_path)
    assert result.returncode == 0 and "dex-agents engine ready on 127.0.0.1:" in result.stdout, result.stderr[-2000:]
    imported = _imported(result.stderr)
    assert {"dex.dexpb.dex_pb2", "dex.dexpb.dex_pb2_grpc", "dex_agents.engine.server"} <= imported
    assert not _within(imported, "dex.client") and not _within(imported, "dex.worker")


def test_the_deferred_sdk_package_loads_in_full_on_first_use(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys
        from dex_agents.engine import cli
        cli._defer_dex_package_init()
        from dex.dexpb import dex_pb2
        assert "dex.dexpb.dex_pb2" in sys.modules and "dex.client" not in sys.modules
        from dex import Client, Registry
        import dex
        assert dex.Client is Client and dex.Worker.__module__ == "dex.worker" and "dex.client" in sys.modules
        assert dex.dexpb.dex_pb2 is sys.modules["dex.dexpb.dex_pb2"]
        try:
            dex.NoSuchName
        except AttributeError as error:
            print("missing:", error)
        """)
    result = _run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "missing: module 'dex' has no attribute 'NoSuchName'"


def test_the_package_lists_its_public_names_before_they_load(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import dex_agents.engine as package
        assert set(package.__all__) <= set(dir(package)) and "EngineServer" not in vars(package)
        try:
            package.NoSuchName
        except AttributeError as error:
            print(error)
        """)
    result = _run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "module 'dex_agents.engine' has no attribute 'NoSuchName'"
