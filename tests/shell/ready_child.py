"""A stand-in Worker child for the process-helper tests: ``python -m tests.shell.ready_child``.

``READY_CHILD_MODE`` picks the behaviour: ``ready`` (default) prints the ready line and waits until
stdin reaches end of file or SIGTERM arrives (then exits 0); ``grandchild`` first starts a
grandchild in the same process group and prints ``grandchild <pid>``; ``ignore-sigterm`` ignores
SIGTERM; ``exit-early`` exits 3 before it is ready; ``silent`` never prints the ready line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import FrameType

from dex_agents.testing import WORKER_READY_LINE

MODE_ENV = "READY_CHILD_MODE"


def _stop_on_sigterm(signal_number: int, frame: FrameType | None) -> None:
    print("stopping on SIGTERM", flush=True)
    sys.exit(0)


def main() -> int:
    """Behave as ``READY_CHILD_MODE`` says; return the exit status."""
    mode = os.environ.get(MODE_ENV, "ready")
    print(f"server address {os.environ.get('DEX_SERVER_ADDRESS', '')}", flush=True)
    print(f"extra {os.environ.get('READY_CHILD_EXTRA', '')}", flush=True)
    if mode == "exit-early":
        print("exiting before ready", flush=True)
        return 3
    if mode == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
    if mode == "grandchild":  # inherits stdin, so it also ends when the test process dies
        grandchild = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"])
        print(f"grandchild {grandchild.pid}", flush=True)
    if mode != "silent":
        print(WORKER_READY_LINE, flush=True)
    sys.stdin.buffer.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
