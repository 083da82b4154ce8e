"""The sync session client is what ``scripts/unasync.py`` generates from the async one (``ci.sh``
runs the same check before the tests)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "unasync.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="scripts/ is not in this tree (an sdist)")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_sync_module_is_current() -> None:
    checked = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_the_substitutions_turn_async_code_into_sync_code() -> None:
    script = _script()
    source = script.SOURCE_MARK + (
        '"""Reads (asyncio: on the loop)."""\nimport asyncio\nimport time\n'
        "from collections.abc import AsyncIterator, Awaitable, Callable\n"
        "from dex_agents.client.async_loops import pause\n"
        "async def follow(read: Callable[[], Awaitable[int]]) -> AsyncIterator[int]:\n"
        "    async with AsyncThing() as thing:\n        await asyncio.sleep(1)\n        yield await read()\n")
    assert script.sync_text(source, "async_reads.py") == (
        "# Generated from async_reads.py by scripts/unasync.py: edit that file, then run the script.\n"
        '"""Reads."""\nimport time\nfrom collections.abc import Iterator, Callable\n'
        "from dex_agents.client.loops import pause\n"
        "def follow(read: Callable[[], int]) -> Iterator[int]:\n"
        "    with Thing() as thing:\n        time.sleep(1)\n        yield read()\n")
    with pytest.raises(ValueError, match="does not start with"):
        script.sync_text("import asyncio\n", "async_unmarked.py")
