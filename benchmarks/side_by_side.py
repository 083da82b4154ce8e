"""dex-agents beside its peers (LangGraph, DBOS; Temporal optional) on one workload, in one run.

Run: ``python -m benchmarks.side_by_side`` (``--turns``, ``--warmup``, ``--systems``). Prints figures,
never asserts.

The harness under ``benchmarks/peers/`` is the peers' benchmark (one agent turn: a user message, the
model asks for ``lookup_order``, the tool runs, the model answers; no network) with each system's
script, the pinned requirements of each peer's virtualenv and the table builder. This module:

    * creates each peer's virtualenv under ``$TMPDIR/peers-venv-<name>`` with ``python3 -m venv`` and
      installs its pinned ``requirements-<name>.txt`` from PyPI (again only when the file changed), as
      ``peers/run_all.sh`` does;
    * runs the systems one after another (never concurrently), each script under a timeout, the
      dex-agents side (``peers/dex_agents_pai.py``) with this interpreter (the project's ``.venv``);
    * samples the machine's load average and CPU steal (``/proc/stat``: the share of time the
      hypervisor ran something else while this VM wanted the CPU) around every system, since other
      work on the machine moves every figure;
    * prints one table: each durable variant's p50/p90 and its overhead over its own system's
      baseline in the same run, CPU per turn, and the load and steal while that system ran.

Systems: ``langgraph`` (LangGraph + SqliteSaver), ``dbos`` (Pydantic AI + DBOS on SQLite), ``dex-agents``
(this project with its Pydantic AI adapter on the local engine, fsync per commit), ``temporal``
(Pydantic AI + Temporal; opt in, its dev server takes about a minute per run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

PEERS: Final = Path(__file__).resolve().parent / "peers"
SYSTEMS: Final = {
    "langgraph": ("lg", "langgraph_sqlite.py"),
    "dbos": ("dbos", "pydantic_dbos.py"),
    "dex-agents": (None, "dex_agents_pai.py"),
    "temporal": ("pai", "pydantic_temporal.py"),
}
"""System -> (its virtualenv's requirements name, or None for this interpreter; its script)."""
DEFAULT_SYSTEMS: Final = ("langgraph", "dbos", "dex-agents")
PER_SYSTEM_TIMEOUT_SECONDS: Final = 600


@dataclass(frozen=True)
class MachineSample:
    """The load average and the cumulative CPU counters (jiffies) at one moment."""

    load: tuple[float, float, float]
    busy: int
    steal: int
    total: int

    @staticmethod
    def now() -> MachineSample:
        fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        # user nice system idle iowait irq softirq steal guest guest_nice (guest time is in user)
        idle = fields[3] + fields[4]
        steal = fields[7] if len(fields) > 7 else 0
        total = sum(fields[:8])
        return MachineSample(load=os.getloadavg(), busy=total - idle - steal, steal=steal, total=total)


def machine_line(before: MachineSample, after: MachineSample) -> str:
    """The load averages at the end, and the CPU busy and steal shares between the two samples."""
    total = max(1, after.total - before.total)
    busy = 100 * (after.busy - before.busy) / total
    steal = 100 * (after.steal - before.steal) / total
    load = " ".join(f"{value:.2f}" for value in after.load)
    return f"load {load}; CPU busy {busy:.0f}%, steal {steal:.1f}% of {os.cpu_count()} CPUs"


def peer_python(name: str, root: Path) -> Path:
    """The python of the peer's virtualenv, created and installed (pinned) when its requirements changed."""
    requirements = PEERS / f"requirements-{name}.txt"
    venv = root / f"peers-venv-{name}"
    stamp = hashlib.sha256(requirements.read_bytes()).hexdigest()
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    stamp_file = venv / ".peers-stamp"
    if not stamp_file.exists() or stamp_file.read_text().strip() != stamp:
        print(f"== installing {requirements.name} into {venv}", flush=True)
        log = venv / ".peers-pip.log"
        with log.open("w") as out:
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", str(requirements)],
                           check=True, stdout=out, stderr=subprocess.STDOUT)
        stamp_file.write_text(stamp)
    return python


def run_system(system: str, python: Path, results: Path, turns: int, warmup: int) -> str:
    """Run one system's script; the machine line of its run."""
    script = SYSTEMS[system][1]
    print(f"\n== {system}: {script} (N={turns}, warm-up={warmup})", flush=True)
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    before = MachineSample.now()
    started = time.monotonic()
    completed = subprocess.run(
        [str(python), script, "-n", str(turns), "-w", str(warmup), "--out", str(results)],
        cwd=PEERS, env=environment, timeout=PER_SYSTEM_TIMEOUT_SECONDS, check=False)
    after = MachineSample.now()
    line = machine_line(before, after)
    print(f"== {system} done in {time.monotonic() - started:.0f} s (exit {completed.returncode}); {line}", flush=True)
    return line


def fmt(value: float) -> str:
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def table(rows: list[dict[str, object]], machine: dict[str, str]) -> list[str]:
    """The Markdown table: each row with its overhead over its own system's baseline."""
    by_variant = {(str(row["system"]), str(row["variant"])): row for row in rows}
    lines = ["| system | variant | durable | p50 ms | p90 ms | overhead p50 ms | overhead p90 ms | CPU ms/turn |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        system = str(row["system"])
        base = by_variant.get((system, str(row.get("baseline") or "baseline")))
        p50, p90 = float(str(row["p50_ms"])), float(str(row["p90_ms"]))
        if row["durable"] and base is not None:
            over50 = "+" + fmt(p50 - float(str(base["p50_ms"])))
            over90 = "+" + fmt(p90 - float(str(base["p90_ms"])))
        else:
            over50 = over90 = "-"
        cpu = " + ".join(f"{fmt(float(str(value)))} {key.removeprefix('cpu_ms_per_turn_')}"
                         for key, value in row.items() if key.startswith("cpu_ms_per_turn_"))
        lines.append(f"| {system} | {row['variant']} | {'yes' if row['durable'] else 'no'} | {fmt(p50)} | "
                     f"{fmt(p90)} | {over50} | {over90} | {cpu} |")
    lines.append("")
    lines.extend(f"- {system}: {line}" for system, line in machine.items())
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", "-n", type=int, default=50, help="measured turns per variant (default 50)")
    parser.add_argument("--warmup", "-w", type=int, default=10, help="warm-up turns per variant (default 10)")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS),
                        help=f"comma-separated, in order (default {','.join(DEFAULT_SYSTEMS)}; also: temporal)")
    parser.add_argument("--out", default=None, help="write the JSON Lines results here (default a temp file)")
    args = parser.parse_args(argv)
    systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    unknown = [name for name in systems if name not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; known: {sorted(SYSTEMS)}")
    root = Path(os.environ.get("TMPDIR") or tempfile.gettempdir())
    results = Path(args.out) if args.out else root / "peers-results" / "side-by-side.jsonl"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("")
    print(f"== host: {os.cpu_count()} CPUs; Python {sys.version.split()[0]}; load at start "
          f"{' '.join(f'{value:.2f}' for value in os.getloadavg())}", flush=True)
    machine: dict[str, str] = {}
    for system in systems:
        venv_name = SYSTEMS[system][0]
        python = Path(sys.executable) if venv_name is None else peer_python(venv_name, root)
        try:
            machine[system] = run_system(system, python, results, args.turns, args.warmup)
        except subprocess.TimeoutExpired:
            machine[system] = "timed out"
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    print(f"\n== results ({results})")
    for line in table(rows, machine):
        print(line)


if __name__ == "__main__":
    main()
