"""Fixtures of the engine conformance suite.

The engine under test is a real Dex server when ``DEX_SERVER_ADDRESS`` is set (nothing is
started then, and only the tests that must kill/restart the engine or configure its auth are
skipped), and otherwise the local engine started with ``dex_agents.engine.start_engine()`` for the
whole session, with short policy seconds (``POLICY_SECOND``) so retries and timeouts play out in a
fraction of their real time. Tests get a :class:`DexFixture` that hands out unique Flow types and
Flow IDs and opens worker harnesses that are torn down (gates opened first) when the test ends.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import grpc
import pytest
from dex import (
    BlobCacheConfig,
    Client,
    ClientOptions,
    Credential,
    Flow,
    Registry,
    StartFlowOptions,
    WorkerTarget,
    open_blob_cache,
)

from tests.engine.harness import Harness, NamedFlow, open_harness, unique_name
from tests.engine.probes import ADDRESS_ENV, POLICY_SECOND
from tests.engine.processes import WorkerProcess
from tests.engine.run_order import is_long_running, spread_early

if TYPE_CHECKING:
    from dex_agents.engine.server import EngineServer

InputT = TypeVar("InputT")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run this directory's long-running tests first (see ``tests.engine.run_order``)."""
    items[:] = spread_early(items, lambda item: is_long_running(item.path))


class RunningEngine(Protocol):
    """What ``start_engine`` yields."""

    @property
    def address(self) -> str: ...


class EngineProcess(Protocol):
    """The engine as a child process in its own process group (see the engine launch API)."""

    @property
    def address(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def pid(self) -> int: ...

    def kill(self) -> None: ...

    def stop(self) -> None: ...


class EngineProcessFactory(Protocol):
    """The ``EngineProcess`` class of the launch API."""

    def start(self, db_path: Path, *, port: int = 0, token_file: Path | None = None,
              log_path: Path | None = None, ready_timeout: float = 30.0) -> EngineProcess: ...


class LaunchApi(Protocol):
    """The part of ``dex_agents.engine`` the suite uses."""

    EngineProcess: EngineProcessFactory

    def start_engine(self, db_path: Path | None = None, *, token_file: Path | None = None,
                     in_process: bool = True, port: int = 0,
                     timing: Any = None) -> AbstractContextManager[RunningEngine]: ...


def session_timing() -> Any:
    """The session engine's timing: short policy seconds (``POLICY_SECOND``) and deadline checks,
    so retries, method and heartbeat timeouts happen in a fraction of their real time."""
    timing = importlib.import_module("dex_agents.engine.timing")
    return timing.EngineTiming(policy_second=POLICY_SECOND, deadline_check_interval=0.02)


def launch_api() -> LaunchApi:
    """Import the local engine's launch API (imported lazily: a real Dex needs none of it)."""
    return cast(LaunchApi, importlib.import_module("dex_agents.engine.launch"))


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineEndpoint:
    """The session's engine: its address and whether it is the local engine we control."""

    address: str
    local: bool


@pytest.fixture(scope="session")
def engine() -> Iterator[EngineEndpoint]:
    """The engine every ordinary test talks to."""
    external = os.environ.get(ADDRESS_ENV, "").strip()
    if external:
        yield EngineEndpoint(address=external, local=False)
        return
    with launch_api().start_engine(timing=session_timing()) as running:
        yield EngineEndpoint(address=running.address, local=True)
        core = cast(Any, running).engine
        with core.lock:
            stale = core.rows.differences()
        assert not stale, f"the engine's row cache differs from the database after the session: {stale[:20]}"


@pytest.fixture
def own_engine(tmp_path: Path) -> Iterator[EngineServer]:
    """An in-process engine of this test alone (its own database), for tests that look inside the
    engine or send it what the SDK never would."""
    server_module = importlib.import_module("dex_agents.engine.server")
    server: EngineServer = server_module.EngineServer(tmp_path / "engine.db")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_channel(own_engine: EngineServer) -> Iterator[grpc.Channel]:
    """A raw gRPC channel to ``own_engine``."""
    channel = grpc.insecure_channel(own_engine.address)
    try:
        yield channel
    finally:
        channel.close()


def require_local_engine(engine: EngineEndpoint, why: str) -> None:
    """Skip (only in real-Dex mode) a test that must control the engine process itself."""
    if not engine.local:
        pytest.skip(f"{ADDRESS_ENV} is set: {why} needs the local engine, which this run does not start")


class DexFixture:
    """Per-test factory of unique names and worker harnesses; closes everything at teardown."""

    def __init__(self, engine: EngineEndpoint, tmp_path: Path, test_name: str) -> None:
        self.engine = engine
        self.tmp_path = tmp_path
        self._test_name = test_name
        self._harnesses: list[Harness] = []
        self._flows: list[Flow[Any]] = []
        self._caches = 0
        self._closers: list[Callable[[], None]] = []
        self._late_closers: list[Callable[[], None]] = []

    def flow_type(self, label: str = "") -> str:
        """A Flow type name unique on the server."""
        return unique_name(f"{self._test_name[:24]}{'-' + label if label else ''}")

    def flow_id(self, label: str = "flow") -> str:
        """A Flow ID unique on the server."""
        return unique_name(label)

    def _cache_dir(self) -> Path:
        self._caches += 1
        cache_dir = self.tmp_path / f"blob-cache-{self._caches}"
        cache_dir.mkdir()
        return cache_dir

    def client(self, *flows: Flow[Any], address: str | None = None, credential: Credential | None = None) -> Client:
        """A Client for ``flows`` with no Worker in this process (workers run elsewhere)."""
        cache = open_blob_cache(BlobCacheConfig(str(self._cache_dir()), 16 * 1024 * 1024))
        self._closers.append(cache.close)
        client = Client(Registry(list(flows)), cache, ClientOptions(
            server_address=address or self.engine.address, worker_target=WorkerTarget(pull=True),
            credential=credential))
        self._closers.append(client.close)
        return client

    def worker_process(self, *, flow_type: str, gate_dir: Path, address: str | None = None,
                       token_file: Path | None = None) -> WorkerProcess:
        """Start a worker child (own process group) serving ``KillFlow`` ``flow_type``."""
        process = WorkerProcess.start(address=address or self.engine.address, flow_type=flow_type,
                                      gate_dir=gate_dir, token_file=token_file)
        self._closers.append(process.stop)
        return process

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` at teardown (after the harnesses of this test are closed)."""
        self._late_closers.append(closer)

    def start(self, *flows: Flow[Any], async_worker: bool = False, address: str | None = None,
              credential: Credential | None = None) -> Harness:
        """Open a harness serving ``flows`` (Worker registered) against the engine or ``address``."""
        self._flows.extend(flows)
        harness = open_harness(flows, address=address or self.engine.address, cache_dir=self._cache_dir(),
                               async_worker=async_worker, credential=credential)
        self._harnesses.append(harness)
        return harness

    def start_flow(self, flow: Flow[InputT], input: InputT, options: StartFlowOptions | None = None, *,
                   async_worker: bool = False) -> tuple[Harness, str]:
        """Open a harness serving ``flow`` and start one Flow of it with ``input``.

        Returns:
            The harness and the new Flow's unique ID.
        """
        harness = self.start(flow, async_worker=async_worker)
        flow_id = self.flow_id()
        harness.client.start_flow(flow, flow_id, input, options or StartFlowOptions())
        return harness, flow_id

    def close(self) -> None:
        """Open every gate (so gated handlers return), then close harnesses newest first."""
        for flow in self._flows:
            if isinstance(flow, NamedFlow):
                flow.gate.open()
        errors: list[BaseException] = []
        for closer in [*reversed(self._closers), *(h.close for h in reversed(self._harnesses)),
                       *reversed(self._late_closers)]:
            try:
                closer()
            except BaseException as error:  # noqa: BLE001 - close all, report the first
                errors.append(error)
        if errors:
            raise errors[0]


@pytest.fixture
def dex(engine: EngineEndpoint, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[DexFixture]:
    """The per-test entry point of the suite."""
    fixture = DexFixture(engine, tmp_path, request.node.name)
    try:
        yield fixture
    finally:
        fixture.close()
