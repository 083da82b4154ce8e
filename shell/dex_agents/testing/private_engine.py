"""A Dex engine private to one test: the local engine as a child process, or a real Dex server.

Invariants:
    * With ``DEX_SERVER_ADDRESS`` set (non-blank) the engine is that server: nothing is started,
      ``is_local`` is false, and ``kill``/``restart`` raise, since a real server is not ours to
      control. Otherwise the local engine runs as a child process in its own process group, with
      its database and log in the state directory.
    * ``restart`` brings the local engine back on the same port and database, so Clients and pull
      Workers reconnect by themselves and committed Flows go on.
    * A state directory this class created is removed by ``stop`` (or at interpreter exit); one
      the caller passed in is kept.
    * No engine outlives the test process: ``EngineProcess`` SIGKILLs every child still running
      at interpreter exit, and a child whose parent died stops when its stdin pipe closes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from types import TracebackType
from typing import Final, final

from dex_agents.engine.launch import EngineProcess

__all__ = ["DEX_SERVER_ADDRESS_ENV", "PrivateDexEngine"]

DEX_SERVER_ADDRESS_ENV: Final = "DEX_SERVER_ADDRESS"
"""Environment variable naming a real Dex server (``host:port``) to use instead of the local engine."""

_DATABASE_NAME: Final = "engine.sqlite3"
_LOG_NAME: Final = "engine.log"


@final
class PrivateDexEngine:
    """The Dex engine of one test; build it with ``PrivateDexEngine.start``."""

    def __init__(self, *, server_address: str, state_directory: Path, process: EngineProcess | None,
                 owns_state_directory: bool, ready_timeout: float) -> None:
        """Wrap a serving engine; use ``PrivateDexEngine.start``."""
        self._server_address = server_address
        self._state_directory = state_directory
        self._process = process
        self._ready_timeout = ready_timeout
        self._stopped = False
        self._cleanup = (weakref.finalize(self, shutil.rmtree, state_directory, ignore_errors=True)
                         if owns_state_directory else None)

    @classmethod
    def start(cls, state_directory: Path | None = None, *, ready_timeout: float = 30.0) -> PrivateDexEngine:
        """Start the local engine, or adopt the real server named by ``DEX_SERVER_ADDRESS``.

        Args:
            state_directory: Directory for the engine's database and log (created when absent);
                ``None`` makes a fresh temporary directory, removed by ``stop``.
            ready_timeout: Seconds to wait for the local engine's ready line.

        Returns:
            A serving engine.

        Raises:
            EngineStartError: The local engine did not become ready (the message has its log tail).
        """
        owns = state_directory is None
        if state_directory is None:
            state_directory = Path(tempfile.mkdtemp(prefix="dex-agents-test-engine-"))
        else:
            state_directory.mkdir(parents=True, exist_ok=True)
        try:
            external = os.environ.get(DEX_SERVER_ADDRESS_ENV, "").strip()
            process = None if external else _start_process(state_directory, port=0, ready_timeout=ready_timeout)
        except BaseException:
            if owns:
                shutil.rmtree(state_directory, ignore_errors=True)
            raise
        address = external if process is None else process.address
        return cls(server_address=address, state_directory=state_directory, process=process,
                   owns_state_directory=owns, ready_timeout=ready_timeout)

    @property
    def server_address(self) -> str:
        """``host:port`` of the engine; unchanged by ``restart``."""
        return self._server_address

    @property
    def state_directory(self) -> Path:
        """The engine's own directory (database and log of the local engine; free for test files)."""
        return self._state_directory

    @property
    def is_local(self) -> bool:
        """Whether this is the local engine, which ``kill`` and ``restart`` can control."""
        return self._process is not None

    @property
    def log_path(self) -> Path | None:
        """The local engine's log (appended across restarts), or ``None`` for a real server."""
        return None if self._process is None else self._state_directory / _LOG_NAME

    def _local_process(self, action: str) -> EngineProcess:
        if self._process is None:
            raise RuntimeError(
                f"cannot {action} the engine: {DEX_SERVER_ADDRESS_ENV} names a real Dex server "
                f"({self._server_address}), which a test cannot control; unset it to use the local engine"
            )
        if self._stopped:
            raise RuntimeError(f"cannot {action} the engine: it was stopped")
        return self._process

    def kill(self) -> None:
        """SIGKILL the local engine (its whole process group), as a crash would.

        Raises:
            RuntimeError: The engine is a real server, or was stopped.
        """
        self._local_process("kill").kill()

    def restart(self) -> None:
        """Start the local engine again on the same port and database (SIGKILLing it first if it runs).

        Raises:
            RuntimeError: The engine is a real server, or was stopped.
            EngineStartError: The engine did not become ready again.
        """
        process = self._local_process("restart")
        process.kill()
        self._process = _start_process(self._state_directory, port=process.port,
                                       ready_timeout=self._ready_timeout)

    def stop(self) -> None:
        """Stop the local engine gracefully and remove a state directory made by ``start`` (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            if self._process is not None:
                self._process.stop()
        finally:
            if self._cleanup is not None:
                self._cleanup()

    def __enter__(self) -> PrivateDexEngine:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (f"PrivateDexEngine(server_address={self._server_address!r}, is_local={self.is_local}, "
                f"stopped={self._stopped})")


def _start_process(state_directory: Path, *, port: int, ready_timeout: float) -> EngineProcess:
    return EngineProcess.start(state_directory / _DATABASE_NAME, port=port,
                               log_path=state_directory / _LOG_NAME, ready_timeout=ready_timeout)
