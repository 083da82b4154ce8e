"""Helpers for integration tests of agent sessions against a real Dex engine, with no model key.

The Python counterpart of the TypeScript package's testing export:

* ``PrivateDexEngine``: the local engine as a child process in its own state directory (or the
  real server named by ``DEX_SERVER_ADDRESS``), killable and restartable on the same port.
* ``AgentTestEnvironment``: Registry, BlobCache, Client and an optional in-process Worker (8 task
  slots) for a test's session Flows; ``stop_worker``/``start_worker`` restart the Worker.
* ``AgentSessionTestClient``: the product ``dex_agents.client.SessionClient`` (``sessions``) under the
  names tests use: typed session RPCs (``resolve_interrupt`` retries lock conflicts) and Worker-free
  waits on committed Attributes (``wait_for_completed_turns``, ``wait_for_pending_interrupt``).
* ``KillableWorkerProcess``: a Worker child in its own process group (the product's
  ``dex_agents.serving.WorkerProcess``); ``kill`` SIGKILLs the group, ``stop`` drains. Its entry
  module calls ``run_agent_worker_process(flows)`` (the product's ``run_worker``), whose line once
  registered starts with ``WORKER_READY_LINE``.
* ``OpenAICompatibleServer`` (with ``ChatReply``, ``ChatToolCall``, ``ChatErrorReply``, ``replies_in_order``):
  OpenAI Chat Completions on loopback for a framework's real client; enforces the tool-message rules
  and records every request.
* ``dex_agents.testing.conformance``: the adapter conformance suite (``AdapterConformanceSuite``).
* ``ScriptedAgentRunner`` (with ``ScriptedModelCall``, ``ScriptedToolCall``): a deterministic runner.
* ``read_step_history``: a Flow's history as ``StepHistoryEntry`` values, to assert a turn's Steps.
* ``FileGate`` (the product's ``dex_agents.serving.FileGate``), ``InvocationLog``: pause Worker code
  at an exact point; count real tool runs across processes.
* ``poll_until``: deadline polling where the Client has no direct wait.
* ``find_free_loopback_ports``: distinct free loopback ports.

pytest fixtures (``dex_engine``, ``agent_environment``, ``agent_sessions``, ``killable_worker``) come
from ``dex_agents.testing.pytest_plugin``, registered as a pytest plugin when dex-agents is installed.

Names load on first use, so importing this package (as the pytest plugin's import does) loads
neither Dex nor the engine. Engines and Workers still running when the test process exits receive
SIGKILL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dex_agents._lazy_exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "GATE_TIMEOUT_SECONDS": "dex_agents.testing.coordination",
    "FileGate": "dex_agents.testing.coordination",
    "InvocationLog": "dex_agents.testing.coordination",
    "AgentTestEnvironment": "dex_agents.testing.environment",
    "ChatErrorReply": "dex_agents.testing.openai_compatible",
    "ChatReply": "dex_agents.testing.openai_compatible",
    "ChatRequest": "dex_agents.testing.openai_compatible",
    "ChatToolCall": "dex_agents.testing.openai_compatible",
    "ChatUsage": "dex_agents.testing.openai_compatible",
    "OpenAICompatibleServer": "dex_agents.testing.openai_compatible",
    "replies_in_order": "dex_agents.testing.openai_compatible",
    "poll_until": "dex_agents.testing.polling",
    "find_free_loopback_ports": "dex_agents.testing.ports",
    "DEX_SERVER_ADDRESS_ENV": "dex_agents.testing.private_engine",
    "PrivateDexEngine": "dex_agents.testing.private_engine",
    "WORKER_READY_LINE": "dex_agents.testing.processes",
    "KillableWorkerProcess": "dex_agents.testing.processes",
    "WorkerStartError": "dex_agents.testing.processes",
    "MODEL_CALL_USAGE": "dex_agents.testing.scripted_runner",
    "ScriptedAgentRunner": "dex_agents.testing.scripted_runner",
    "ScriptedModelCall": "dex_agents.testing.scripted_runner",
    "ScriptedTool": "dex_agents.testing.scripted_runner",
    "ScriptedToolCall": "dex_agents.testing.scripted_runner",
    "AgentSessionTestClient": "dex_agents.testing.session_client",
    "EXECUTE_COMPLETED": "dex_agents.testing.step_history",
    "EXECUTE_FAILED": "dex_agents.testing.step_history",
    "RPC_COMPLETED": "dex_agents.testing.step_history",
    "WAIT_FOR_COMPLETED": "dex_agents.testing.step_history",
    "WAIT_FOR_FAILED": "dex_agents.testing.step_history",
    "StepHistoryEntry": "dex_agents.testing.step_history",
    "completed_step_types": "dex_agents.testing.step_history",
    "read_step_history": "dex_agents.testing.step_history",
    "run_agent_worker_process": "dex_agents.testing.worker_process",
}

if TYPE_CHECKING:
    from dex_agents.testing.coordination import FileGate as FileGate
    from dex_agents.testing.coordination import GATE_TIMEOUT_SECONDS as GATE_TIMEOUT_SECONDS
    from dex_agents.testing.coordination import InvocationLog as InvocationLog
    from dex_agents.testing.environment import AgentTestEnvironment as AgentTestEnvironment
    from dex_agents.testing.openai_compatible import ChatErrorReply as ChatErrorReply
    from dex_agents.testing.openai_compatible import ChatReply as ChatReply
    from dex_agents.testing.openai_compatible import ChatRequest as ChatRequest
    from dex_agents.testing.openai_compatible import ChatToolCall as ChatToolCall
    from dex_agents.testing.openai_compatible import ChatUsage as ChatUsage
    from dex_agents.testing.openai_compatible import OpenAICompatibleServer as OpenAICompatibleServer
    from dex_agents.testing.openai_compatible import replies_in_order as replies_in_order
    from dex_agents.testing.polling import poll_until as poll_until
    from dex_agents.testing.ports import find_free_loopback_ports as find_free_loopback_ports
    from dex_agents.testing.private_engine import DEX_SERVER_ADDRESS_ENV as DEX_SERVER_ADDRESS_ENV
    from dex_agents.testing.private_engine import PrivateDexEngine as PrivateDexEngine
    from dex_agents.testing.processes import KillableWorkerProcess as KillableWorkerProcess
    from dex_agents.testing.processes import WORKER_READY_LINE as WORKER_READY_LINE
    from dex_agents.testing.processes import WorkerStartError as WorkerStartError
    from dex_agents.testing.scripted_runner import MODEL_CALL_USAGE as MODEL_CALL_USAGE
    from dex_agents.testing.scripted_runner import ScriptedAgentRunner as ScriptedAgentRunner
    from dex_agents.testing.scripted_runner import ScriptedModelCall as ScriptedModelCall
    from dex_agents.testing.scripted_runner import ScriptedTool as ScriptedTool
    from dex_agents.testing.scripted_runner import ScriptedToolCall as ScriptedToolCall
    from dex_agents.testing.session_client import AgentSessionTestClient as AgentSessionTestClient
    from dex_agents.testing.step_history import EXECUTE_COMPLETED as EXECUTE_COMPLETED
    from dex_agents.testing.step_history import EXECUTE_FAILED as EXECUTE_FAILED
    from dex_agents.testing.step_history import RPC_COMPLETED as RPC_COMPLETED
    from dex_agents.testing.step_history import StepHistoryEntry as StepHistoryEntry
    from dex_agents.testing.step_history import WAIT_FOR_COMPLETED as WAIT_FOR_COMPLETED
    from dex_agents.testing.step_history import WAIT_FOR_FAILED as WAIT_FOR_FAILED
    from dex_agents.testing.step_history import completed_step_types as completed_step_types
    from dex_agents.testing.step_history import read_step_history as read_step_history
    from dex_agents.testing.worker_process import run_agent_worker_process as run_agent_worker_process


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "DEX_SERVER_ADDRESS_ENV",
    "EXECUTE_COMPLETED",
    "EXECUTE_FAILED",
    "GATE_TIMEOUT_SECONDS",
    "MODEL_CALL_USAGE",
    "RPC_COMPLETED",
    "WAIT_FOR_COMPLETED",
    "WAIT_FOR_FAILED",
    "WORKER_READY_LINE",
    "AgentSessionTestClient",
    "AgentTestEnvironment",
    "ChatErrorReply",
    "ChatReply",
    "ChatRequest",
    "ChatToolCall",
    "ChatUsage",
    "FileGate",
    "InvocationLog",
    "KillableWorkerProcess",
    "OpenAICompatibleServer",
    "PrivateDexEngine",
    "ScriptedAgentRunner",
    "ScriptedModelCall",
    "ScriptedTool",
    "ScriptedToolCall",
    "StepHistoryEntry",
    "WorkerStartError",
    "completed_step_types",
    "find_free_loopback_ports",
    "poll_until",
    "read_step_history",
    "replies_in_order",
    "run_agent_worker_process",
]
