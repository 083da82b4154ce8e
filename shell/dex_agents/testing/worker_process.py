"""``run_agent_worker_process``: the body of a Worker child module for ``KillableWorkerProcess``.

A test's Worker child module builds its Flows and calls ``run_agent_worker_process(flows)``::

    # tests/worker_main.py, run as ``python -m tests.worker_main``
    from dex_agents.testing import run_agent_worker_process
    run_agent_worker_process([build_my_agent_flow(Path(os.environ["TEST_STATE_DIR"]))])

A thin layer over the product's ``dex_agents.serving.worker.run_worker`` (the body of
``dex-agents worker``), which it runs as a "dex-agents test Worker".

Invariants:
    * The server comes from ``DEX_SERVER_ADDRESS`` (``KillableWorkerProcess`` sets it); without it
      the function raises before anything starts.
    * ``WORKER_READY_LINE`` starts the line printed (and flushed) after the Worker's pull registration.
    * SIGTERM or SIGINT, or end of file on a piped stdin (the parent died), stops the Worker
      gracefully (running tasks drain) and the function returns, so the child exits 0. A Worker that
      fails or stops by itself raises instead (non-zero exit).
    * The BlobCache lives in a temporary directory (under ``TMPDIR``) that is removed on every exit
      except SIGKILL.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dex_agents.client.connection import SERVER_ADDRESS_ENV
from dex_agents.serving.worker import REGISTRATION_SECONDS as REGISTRATION_SECONDS
from dex_agents.serving.worker import run_worker
from dex_agents.shell.flow import AgentSessionFlow
from dex_agents.shell.worker import DEFAULT_MAX_CONCURRENT_TASKS
from dex_agents.testing.processes import TEST_WORKER_LABEL

__all__ = ["run_agent_worker_process"]


def run_agent_worker_process(flows: Sequence[AgentSessionFlow], *,
                             max_concurrent_tasks: int = DEFAULT_MAX_CONCURRENT_TASKS) -> None:
    """Serve ``flows`` from this process until SIGTERM, SIGINT or end of file on a piped stdin.

    Args:
        flows: The session Flows (distinct Flow types, the same ones the test's Client registers).
        max_concurrent_tasks: Task slots of the Worker.

    Raises:
        RuntimeError: ``DEX_SERVER_ADDRESS`` is not set, or the Worker stopped by itself.
        ValueError: ``flows`` is empty (or cannot be served: see ``check_servable``).
        TimeoutError: The Worker did not register within ``REGISTRATION_SECONDS``.
        BaseException: Whatever made the Worker's start fail (for example, no server answered).
    """
    server_address = os.environ.get(SERVER_ADDRESS_ENV, "").strip()
    if not server_address:
        raise RuntimeError(f"{SERVER_ADDRESS_ENV} is not set: a Worker child needs the Dex server's "
                           f"host:port (KillableWorkerProcess.start sets it)")
    run_worker(flows, server_address, task_slots=max_concurrent_tasks, label=TEST_WORKER_LABEL,
               stop_on_stdin_eof=True)
