"""The repository owns every SQL statement: no engine module outside ``dex_agents.engine.repository``
calls a connection's ``execute``/``executemany``/``executescript`` or holds a string that starts an
SQL statement. Parses the sources with ``ast``; imports nothing of the engine."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ENGINE_SOURCES = Path(__file__).resolve().parents[2] / "engine" / "dex_agents" / "engine"
REPOSITORY = ENGINE_SOURCES / "repository"
_STATEMENT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|ROLLBACK)\b",
                        re.IGNORECASE)
_RUNS_SQL = frozenset({"execute", "executemany", "executescript"})


def sql_in(source: str) -> list[str]:
    """What in ``source`` runs or spells SQL: ``.execute(...)``-style calls and statement strings."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RUNS_SQL:
            found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _STATEMENT.match(node.value):
            if not _is_docstring_like(node.value):
                found.append(f"line {node.lineno}: {node.value[:40]!r}")
    return found


def _is_docstring_like(text: str) -> bool:
    return "\n" in text.strip() or text.rstrip().endswith(".")


def test_no_engine_module_outside_the_repository_speaks_sql() -> None:
    offenders = {str(path.relative_to(ENGINE_SOURCES)): found
                 for path in sorted(ENGINE_SOURCES.rglob("*.py"))
                 if REPOSITORY not in path.parents and (found := sql_in(path.read_text(encoding="utf-8")))}
    assert not offenders, f"SQL outside the repository package: {offenders}"


def test_the_checker_sees_calls_and_statement_strings() -> None:
    source = 'def f(db):\n    db.execute("SELECT 1")\n    q = "DELETE FROM t"\n'
    assert sorted(sql_in(source)) == ["line 2: 'SELECT 1'", "line 2: .execute(...)", "line 3: 'DELETE FROM t'"]
    assert sql_in('"""Select the right one, then update it."""\n') == []
