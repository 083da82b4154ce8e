"""pytest fixtures for agent-session integration tests (entry point ``pytest11``: ``dex_agents``).

Installing dex-agents registers this plugin, so every pytest run of a project with dex-agents
installed loads it: it imports only ``pytest`` and ``typing`` at import time, and everything else
(Dex, gRPC, the engine) inside the fixtures.

Fixtures:
    * ``dex_engine`` (session): a ``PrivateDexEngine`` (the local engine as a child process, or the
      real server named by ``DEX_SERVER_ADDRESS``), stopped at the end of the test session.
    * ``agent_environment`` (function): a factory ``agent_environment(flows, *, is_worker_in_process=True,
      max_concurrent_tasks=8) -> AgentTestEnvironment`` against ``dex_engine``; all closed at teardown.
    * ``agent_sessions`` (function): a factory ``agent_sessions(environment, flow, *, timeout=30.0)
      -> AgentSessionTestClient``; all closed at teardown.
    * ``killable_worker`` (function): a factory ``killable_worker(entry_module, *, environment=None,
      ready_timeout=30.0) -> KillableWorkerProcess`` started against ``dex_engine`` from the current
      directory, logging to ``tmp_path``; all stopped (drained, then SIGKILLed if need be) at teardown.

Flow types must be unique on the engine, which every test of a session shares: give each test's
Flows their own types.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

if TYPE_CHECKING:
    from dex_agents.shell.flow import AgentSessionFlow
    from dex_agents.testing.environment import AgentTestEnvironment
    from dex_agents.testing.private_engine import PrivateDexEngine
    from dex_agents.testing.processes import KillableWorkerProcess
    from dex_agents.testing.session_client import AgentSessionTestClient

__all__ = [
    "AgentEnvironmentFactory",
    "AgentSessionsFactory",
    "KillableWorkerFactory",
    "agent_environment",
    "agent_sessions",
    "dex_engine",
    "killable_worker",
]


class AgentEnvironmentFactory(Protocol):
    """The ``agent_environment`` fixture: starts an ``AgentTestEnvironment`` on ``dex_engine``."""

    def __call__(self, flows: Sequence[AgentSessionFlow], *, is_worker_in_process: bool = True,
                 max_concurrent_tasks: int = 8) -> AgentTestEnvironment: ...


class AgentSessionsFactory(Protocol):
    """The ``agent_sessions`` fixture: an ``AgentSessionTestClient`` for one Flow of an environment."""

    def __call__(self, environment: AgentTestEnvironment, flow: AgentSessionFlow, *,
                 timeout: float = 30.0) -> AgentSessionTestClient: ...


class KillableWorkerFactory(Protocol):
    """The ``killable_worker`` fixture: a ready Worker child running ``python -m entry_module``."""

    def __call__(self, entry_module: str, *, environment: Mapping[str, str] | None = None,
                 ready_timeout: float = 30.0) -> KillableWorkerProcess: ...


def _run_all(teardowns: Sequence[Callable[[], None]]) -> None:
    """Run every teardown, last first; all run even if one fails, and the first failure is raised."""
    from dex_agents.client.shared import run_all  # the plugin loads nothing heavy until a fixture runs

    run_all(list(reversed(teardowns)))


@pytest.fixture(scope="session")
def dex_engine() -> Iterator[PrivateDexEngine]:
    """The Dex engine of the test session (see ``PrivateDexEngine.start``)."""
    from dex_agents.testing.private_engine import PrivateDexEngine

    engine = PrivateDexEngine.start()
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture
def agent_environment(dex_engine: PrivateDexEngine) -> Iterator[AgentEnvironmentFactory]:
    """Start ``AgentTestEnvironment``s on ``dex_engine``; each is closed when the test ends."""
    from dex_agents.testing.environment import AgentTestEnvironment

    started: list[AgentTestEnvironment] = []

    def start(flows: Sequence[AgentSessionFlow], *, is_worker_in_process: bool = True,
              max_concurrent_tasks: int = 8) -> AgentTestEnvironment:
        environment = AgentTestEnvironment.start(server_address=dex_engine.server_address, flows=flows,
                                                 is_worker_in_process=is_worker_in_process,
                                                 max_concurrent_tasks=max_concurrent_tasks)
        started.append(environment)
        return environment

    yield start
    _run_all([environment.close for environment in started])


@pytest.fixture
def agent_sessions() -> Iterator[AgentSessionsFactory]:
    """Make ``AgentSessionTestClient``s; each is closed when the test ends."""
    made: list[AgentSessionTestClient] = []

    def make(environment: AgentTestEnvironment, flow: AgentSessionFlow, *,
             timeout: float = 30.0) -> AgentSessionTestClient:
        session_client = environment.sessions(flow, timeout=timeout)
        made.append(session_client)
        return session_client

    yield make
    _run_all([session_client.close for session_client in made])


@pytest.fixture
def killable_worker(dex_engine: PrivateDexEngine, tmp_path: Path) -> Iterator[KillableWorkerFactory]:
    """Start Worker children against ``dex_engine``; each is stopped when the test ends.

    A child runs from the current directory, appends its output to ``tmp_path/worker-<n>.log``,
    and gets ``TMPDIR`` under ``tmp_path`` (unless ``environment`` sets it), so even a child killed
    with SIGKILL leaves its temporary files only there.
    """
    from dex_agents.testing.processes import KillableWorkerProcess

    started: list[KillableWorkerProcess] = []
    temporary = tmp_path / "worker-tmp"

    def start(entry_module: str, *, environment: Mapping[str, str] | None = None,
              ready_timeout: float = 30.0) -> KillableWorkerProcess:
        temporary.mkdir(exist_ok=True)
        child_environment = {"TMPDIR": str(temporary), **(environment or {})}
        worker = KillableWorkerProcess.start(
            entry_module=entry_module, server_address=dex_engine.server_address,
            log_path=tmp_path / f"worker-{len(started) + 1}.log", environment=child_environment,
            ready_timeout=ready_timeout, working_directory=Path(os.getcwd()))
        started.append(worker)
        return worker

    yield start
    _run_all([worker.stop for worker in started])
