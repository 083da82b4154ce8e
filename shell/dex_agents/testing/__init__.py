"""Helpers for integration tests of agent sessions against a real Dex engine, with no model key.

The Python counterpart of the TypeScript package's testing export. Generic pieces:

* ``PrivateDexEngine``: the local engine as a child process in its own state directory (or the
  real server named by ``DEX_SERVER_ADDRESS``), killable and restartable on the same port.
* ``KillableWorkerProcess``: a Worker child in its own process group; ``kill`` SIGKILLs the group,
  ``stop`` drains. Its entry module prints ``WORKER_READY_LINE`` once registered.
* ``read_step_history``: a Flow's history as ``StepHistoryEntry`` values, to assert a turn's Steps.
* ``FileGate``, ``InvocationLog``: pause Worker code at an exact point; count real tool runs
  across processes.
* ``poll_until``: deadline polling where the Client has no direct wait.
* ``find_free_loopback_ports``: distinct free loopback ports.

Engines and Workers still running when the test process exits receive SIGKILL.
"""

from dex_agents.testing.coordination import GATE_TIMEOUT_SECONDS as GATE_TIMEOUT_SECONDS
from dex_agents.testing.coordination import FileGate as FileGate
from dex_agents.testing.coordination import InvocationLog as InvocationLog
from dex_agents.testing.polling import poll_until as poll_until
from dex_agents.testing.ports import find_free_loopback_ports as find_free_loopback_ports
from dex_agents.testing.private_engine import DEX_SERVER_ADDRESS_ENV as DEX_SERVER_ADDRESS_ENV
from dex_agents.testing.private_engine import PrivateDexEngine as PrivateDexEngine
from dex_agents.testing.processes import WORKER_READY_LINE as WORKER_READY_LINE
from dex_agents.testing.processes import KillableWorkerProcess as KillableWorkerProcess
from dex_agents.testing.processes import WorkerStartError as WorkerStartError
from dex_agents.testing.step_history import EXECUTE_COMPLETED as EXECUTE_COMPLETED
from dex_agents.testing.step_history import EXECUTE_FAILED as EXECUTE_FAILED
from dex_agents.testing.step_history import RPC_COMPLETED as RPC_COMPLETED
from dex_agents.testing.step_history import WAIT_FOR_COMPLETED as WAIT_FOR_COMPLETED
from dex_agents.testing.step_history import WAIT_FOR_FAILED as WAIT_FOR_FAILED
from dex_agents.testing.step_history import StepHistoryEntry as StepHistoryEntry
from dex_agents.testing.step_history import completed_step_types as completed_step_types
from dex_agents.testing.step_history import read_step_history as read_step_history

__all__ = [
    "DEX_SERVER_ADDRESS_ENV",
    "EXECUTE_COMPLETED",
    "EXECUTE_FAILED",
    "GATE_TIMEOUT_SECONDS",
    "RPC_COMPLETED",
    "WAIT_FOR_COMPLETED",
    "WAIT_FOR_FAILED",
    "WORKER_READY_LINE",
    "FileGate",
    "InvocationLog",
    "KillableWorkerProcess",
    "PrivateDexEngine",
    "StepHistoryEntry",
    "WorkerStartError",
    "completed_step_types",
    "find_free_loopback_ports",
    "poll_until",
    "read_step_history",
]
