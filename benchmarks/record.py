"""Run one benchmark and keep its exact output in ``benchmarks/results/<name>-<date>.txt``.

    .venv/bin/python -m benchmarks.record turn_profile --turns 50
    .venv/bin/python -m benchmarks.record shape_floor --turns 300

The file starts with a header (``#`` lines: the command, the UTC time, the commit and whether the
working tree had changes, Python, the CPUs and the load average before and after), then the
benchmark's standard output and standard error exactly as printed. The README's figures name the file
they come from; a second run of a day gets ``-2``, ``-3``, ... .
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

RESULTS: Final = Path(__file__).resolve().parent / "results"
ROOT: Final = Path(__file__).resolve().parents[1]


def _git(*arguments: str) -> str:
    done = subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def result_path(name: str, day: str) -> Path:
    """The first free ``<name>-<day>[-n].txt`` under ``benchmarks/results``."""
    path = RESULTS / f"{name}-{day}.txt"
    number = 2
    while path.exists():
        path = RESULTS / f"{name}-{day}-{number}.txt"
        number += 1
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmark", help="a module of benchmarks/, e.g. turn_profile")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the benchmark's own arguments")
    options = parser.parse_args(argv)
    command = [sys.executable, "-m", f"benchmarks.{options.benchmark}", *options.arguments]
    started = datetime.now(UTC)
    dirty = "with uncommitted changes" if _git("status", "--porcelain", "--untracked-files=no") else "clean"
    header = [
        f"# command: python -m benchmarks.{options.benchmark} {' '.join(options.arguments)}".rstrip(),
        f"# started: {started:%Y-%m-%d %H:%M:%S} UTC",
        f"# commit: {_git('rev-parse', '--short', 'HEAD')} (working tree {dirty})",
        f"# python: {platform.python_version()}; CPUs: {os.cpu_count()}",
        f"# load average (1, 5, 15 min) before: {_load()}",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    header.append(f"# load average (1, 5, 15 min) after: {_load()}; exit status {done.returncode}; "
                  f"{(datetime.now(UTC) - started).total_seconds():.0f} s")
    text = "\n".join(header) + "\n" + done.stdout + (f"# stderr:\n{done.stderr}" if done.stderr else "")
    RESULTS.mkdir(exist_ok=True)
    path = result_path(options.benchmark, f"{started:%Y-%m-%d}")
    path.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    print(f"# kept in {path.relative_to(ROOT)}")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
