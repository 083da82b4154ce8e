"""A pull Worker process for the worker-SIGKILL tests: ``python -m tests.engine.worker_child``.

Serves one ``KillFlow`` type, prints ``worker ready <pid>`` once pull registration finished,
and runs until SIGTERM (graceful stop) or SIGKILL.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from dex import BlobCacheConfig, FileCredential, Registry, Worker, WorkerOptions, open_blob_cache

from tests.engine.harness import WAIT_SECONDS, pull_options
from tests.engine.kill_flow import KillFlow
from tests.engine.processes import READY_PREFIX


def main(argv: list[str]) -> int:
    """Run the Worker until SIGTERM; return the exit status."""
    parser = argparse.ArgumentParser(prog="worker_child")
    parser.add_argument("--address", required=True)
    parser.add_argument("--flow-type", required=True)
    parser.add_argument("--gate-dir", required=True, type=Path)
    parser.add_argument("--token-file", type=Path)
    args = parser.parse_args(argv)
    flow = KillFlow(args.flow_type, args.gate_dir)
    registry = Registry([flow])
    cache_dir = args.gate_dir / f"blob-cache-{os.getpid()}"
    cache_dir.mkdir()
    cache = open_blob_cache(BlobCacheConfig(str(cache_dir), 16 * 1024 * 1024))
    credential = FileCredential(args.token_file) if args.token_file else None
    worker = Worker(registry, cache, WorkerOptions(server_address=args.address, pull=pull_options(),
                                                   credential=credential))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    thread = threading.Thread(target=worker.start, daemon=True)
    thread.start()
    worker.wait_pull_registered(timeout=WAIT_SECONDS)
    print(f"{READY_PREFIX}{os.getpid()}", flush=True)
    stop.wait()
    worker.stop()
    thread.join(WAIT_SECONDS)
    cache.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
