"""Serving agents' sessions: the Worker process behind ``dex-agents worker`` and its launcher.

* ``run_worker(flows, server_address, *, task_slots, credential)``: serve until SIGTERM/SIGINT,
  with a ready line once registered; running tasks drain before it returns.
* ``load_agents("module:attribute")``: the agent Flows a reference names (``AgentReferenceError``).
* ``WorkerProcess``: a Worker child in its own process group (``stop`` drains, ``kill`` SIGKILLs).
* ``FileGate``: pause Worker code at an exact point until another process releases it.
"""

from dex_agents.serving.agents import AgentReferenceError as AgentReferenceError
from dex_agents.serving.agents import load_agents as load_agents
from dex_agents.serving.gate import FileGate as FileGate
from dex_agents.serving.processes import WORKER_READY_PREFIX as WORKER_READY_PREFIX
from dex_agents.serving.processes import WorkerProcess as WorkerProcess
from dex_agents.serving.processes import WorkerStartError as WorkerStartError
from dex_agents.serving.worker import WORKER_LABEL as WORKER_LABEL
from dex_agents.serving.worker import run_worker as run_worker

__all__ = [
    "WORKER_LABEL",
    "WORKER_READY_PREFIX",
    "AgentReferenceError",
    "FileGate",
    "WorkerProcess",
    "WorkerStartError",
    "load_agents",
    "run_worker",
]
