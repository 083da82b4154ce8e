"""``dex-agents replay FILE``: fold an exported session's inputs through the installed reducers.

Invariants:
    * No engine, no network, no Worker: the file and the installed ``dex_agents.pure`` only.
    * Exit 0 when the replay reproduces every step's writes and the snapshot, 1 at the first
      difference (printed: the value, the step, the input that produced it, the turn, both JSON
      values), 2 for a file that cannot be read or is not an export this version reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from rich.console import Console

from dex_agents.cli.errors import CliError
from dex_agents.pure.offline.replay_report import Reducer, ReplayReport, replay_export_text
from dex_agents.pure.machine.reducers import reduce

__all__ = ["DIFFERS_EXIT_CODE", "replay_file"]

DIFFERS_EXIT_CODE: Final = 1
"""The exit status of a replay that found a difference."""


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file", hint="export a session with: dex-agents sessions export SESSION "
                                                      "--out FILE", exit_code=2) from None
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"{path}: cannot be read: {error}", exit_code=2) from error


def replay_file(path: Path, console: Console, *, reducer: Reducer = reduce) -> int:
    """Replay the export in ``path``, print the report, and return the exit status (0 or 1).

    Raises:
        CliError: The file cannot be read or is not a session export of this version (exit 2).
    """
    result = replay_export_text(_read(path), reducer=reducer)
    report: ReplayReport | None = result.value_or(None)
    if report is None:
        raise CliError(f"{path}: {result.failure()}", exit_code=2)
    for line in report.describe():
        console.print(line, markup=False, highlight=False)
    return 0 if report.identical else DIFFERS_EXIT_CODE
