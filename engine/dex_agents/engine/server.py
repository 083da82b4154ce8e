"""``EngineServer``: the local Dex engine as a gRPC server (see the package docstring).

Built on ``grpc.server`` with a thread pool rather than ``grpc.aio``: the engine's state changes
are short critical sections around synchronous SQLite commits, a pull Worker stream needs one
blocking reader per stream, and long polls simply wait on a condition variable; threads keep that
straightforward and the GIL makes an event loop no faster here.
"""

from __future__ import annotations

import logging
import pathlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import grpc

from dex.dexpb import dex_pb2_grpc

from .durability import Durability
from .engine import Engine
from .recovery import recover
from .request_checks import RequestChecks
from .grpc_service import FlowService, UnknownMethods
from .timing import Clock, EngineTiming
from .worker_service import WorkerTaskService

_LOGGER = logging.getLogger(__name__)
MAX_THREADS = 1024
_OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 5000),
    ("grpc.so_reuseport", 0),
]


class EngineServer:
    """A local Dex engine serving FlowService and WorkerTaskService over gRPC.

    Invariant: after :meth:`start` returns, the server accepts calls on :attr:`address` and the
    committed open Flows in the database are being recovered in batches (timers re-armed, tasks
    queued): :attr:`recovered` is set once every one of them runs again.
    """

    def __init__(self, db_path: pathlib.Path, *, host: str = "127.0.0.1", port: int = 0,
                 interceptors: Sequence[grpc.ServerInterceptor] = (),
                 durability: Durability = Durability.POWER_LOSS,
                 timing: EngineTiming | None = None, clock: Clock | None = None) -> None:
        """``timing`` and ``clock`` default to Dex's timings and the system clock."""
        self._db_path = pathlib.Path(db_path)
        self.durability = durability
        self.timing = timing if timing is not None else EngineTiming()
        self._clock = clock
        self._host = host
        self._requested_port = port
        self._interceptors = tuple(interceptors)
        self._port = 0
        self._server: grpc.Server | None = None
        self._engine: Engine | None = None
        self._worker_service: WorkerTaskService | None = None
        self.recovered = threading.Event()
        """Set once every open run found at start is recovered (see ``recovery``)."""

    @property
    def port(self) -> int:
        """The bound port (0 before :meth:`start`)."""
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` to give the SDK's ``server_address``."""
        return f"{self._host}:{self._port}"

    @property
    def engine(self) -> Engine:
        """The running engine (for in-process inspection)."""
        if self._engine is None:
            raise RuntimeError("engine is not started")
        return self._engine

    def start(self) -> None:
        """Bind, open (or create) the database, recover its open Flows, and serve.

        Raises:
            OSError: the address cannot be bound (nothing is created).
            DatabaseError: the database cannot be opened for writing (read-only, corrupt, or
                ``DatabaseInUseError``: another engine serves it); nothing is served.
        """
        if self._server is not None:
            raise RuntimeError("engine already started")
        server = grpc.server(ThreadPoolExecutor(max_workers=MAX_THREADS, thread_name_prefix="dex-engine"),
                             interceptors=[*self._interceptors, RequestChecks()], options=_OPTIONS,
                             maximum_concurrent_rpcs=None)
        cause: RuntimeError | None = None
        try:  # bind first: a start that cannot serve leaves no database behind
            port = server.add_insecure_port(f"{self._host}:{self._requested_port}")
        except RuntimeError as error:  # grpcio reports a failed bind this way (older versions return 0)
            port, cause = 0, error
        if port == 0:
            server.stop(None)
            raise OSError(f"cannot bind {self._host}:{self._requested_port}") from cause
        try:
            engine = Engine.open(self._db_path, self.durability, timing=self.timing, clock=self._clock)
        except BaseException:
            server.stop(None)
            raise
        dex_pb2_grpc.add_FlowServiceServicer_to_server(FlowService(engine), server)
        self._worker_service = WorkerTaskService(engine)
        dex_pb2_grpc.add_WorkerTaskServiceServicer_to_server(self._worker_service, server)
        server.add_generic_rpc_handlers((UnknownMethods(),))
        self._port = port
        engine.scheduler.start()
        self._schedule_deadline_checks(engine)
        with engine.locked():
            self.recovered = recover(engine)
        server.start()
        self._engine = engine
        self._server = server

    @staticmethod
    def _schedule_deadline_checks(engine: Engine) -> None:
        def check() -> None:
            """Re-armed before the work, so one failing pass never ends the checks."""
            if engine.stopped:
                return
            engine.scheduler.call_later(engine.timing.deadline_check_interval, check)
            try:
                engine.steps.check_deadlines()
            finally:
                engine.dispatcher.offer_pending()

        engine.scheduler.call_later(engine.timing.deadline_check_interval, check)

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving, end worker streams and long polls, and close the database."""
        server, engine = self._server, self._engine
        if server is None or engine is None:
            return
        with engine.locked():
            engine.stopped = True
            engine.flow_rpcs.abort_all()
            for stream in list(engine.dispatcher.streams):
                stream.close()
            engine.long_polls.notify_all()
        server.stop(grace).wait()
        if self._worker_service is not None:
            self._worker_service.close()
        engine.scheduler.stop()
        with engine.locked():
            engine.store.close()
        self._server = None

    def wait_for_termination(self) -> None:
        """Block until the server stops."""
        if self._server is not None:
            self._server.wait_for_termination()
