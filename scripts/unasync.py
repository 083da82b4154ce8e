"""Generate the synchronous session client from its asyncio source, the way httpcore does.

Every ``shell/dex_agents/client/async_<name>.py`` is the one source of ``<name>.py``: the sync twin
is the source run through ``SUBSTITUTIONS`` (plain regular expressions, applied in order), with the
source's first line (``SOURCE_MARK``) replaced by a note that the file is generated. Both are
checked in; ``--check`` (run by ``ci.sh`` and ``tests/client/test_generated_sync_client.py``) fails
when a twin differs from what its source generates.

Writing a source: name things so the substitutions give the sync names (``AsyncX`` becomes ``X``,
``async_x`` becomes ``x``); text inside ``(asyncio: ...)`` is dropped from the twin; sleep through
``asyncio.sleep``; code that differs by more than colour goes in a hand-written module
(``client/channels.py``).

Usage: ``python scripts/unasync.py`` writes the twins; ``python scripts/unasync.py --check`` only compares.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
CLIENT_DIR: Final = ROOT / "shell" / "dex_agents" / "client"
SOURCE_MARK: Final = "# unasync: the source of a generated synchronous twin (scripts/unasync.py)\n"

SUBSTITUTIONS: Final[tuple[tuple[str, str], ...]] = (
    (r" ?\(asyncio: [^)]*\)", ""),  # async-only remarks in docstrings and comments
    (r"(?m)^import asyncio\n", ""),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bAwaitable\[([^\[\]]*)\]", r"\1"),
    (r"\bAwaitable, |, Awaitable\b", ""),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\basync (def|with|for)\b", r"\1"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\bAsync(?=[A-Z])", ""),  # AsyncSessionClient -> SessionClient, AsyncClient -> Client
    (r"\basync_(?=\w)", ""),  # async_export -> export
)


def sync_text(source_text: str, source_name: str) -> str:
    """The sync twin of a source file's text.

    Raises:
        ValueError: The source does not start with ``SOURCE_MARK``.
    """
    if not source_text.startswith(SOURCE_MARK):
        raise ValueError(f"{source_name} does not start with the line {SOURCE_MARK.strip()!r}")
    text = source_text[len(SOURCE_MARK):]
    for pattern, replacement in SUBSTITUTIONS:
        text = re.sub(pattern, replacement, text)
    return f"# Generated from {source_name} by scripts/unasync.py: edit that file, then run the script.\n{text}"


def twins() -> list[tuple[Path, Path]]:
    """(source, sync twin) of every async source, by name."""
    return [(source, source.with_name(source.name.removeprefix("async_")))
            for source in sorted(CLIENT_DIR.glob("async_*.py"))]


def stale_twins() -> list[Path]:
    """The twins whose text differs from what their source generates (or that are missing)."""
    return [twin for source, twin in twins()
            if not twin.exists() or twin.read_text() != sync_text(source.read_text(), source.name)]


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    if argv == ["--check"]:
        stale = stale_twins()
        for twin in stale:
            print(f"{twin.relative_to(ROOT)} is stale: run python scripts/unasync.py", file=sys.stderr)
        return 1 if stale else 0
    for source, twin in twins():
        twin.write_text(sync_text(source.read_text(), source.name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
