"""Start the local engine from Python: in this process, or as a child process in its own group.

Invariants:
    * ``start_engine`` yields an engine that already serves; leaving the ``with`` block stops it and
      removes the temporary database directory it made (a caller's ``db_path`` is kept).
    * An ``EngineProcess`` runs ``python -m dex_agents.engine.cli engine`` as a ``ChildGroup`` (its own
      process group, see ``child_group``), logging to a file; ``start`` returns only once the ready line is in the log,
      and fails with the log's tail when the child exits or the timeout passes first.
    * Every child still running when this interpreter exits is killed (``atexit``); and a child
      whose parent died without running ``atexit`` (SIGKILL) stops by itself when its stdin, a pipe
      held only by the parent, reaches end of file. A crashed test run leaves no engine behind.
    * A default (temporary) log is removed when the child stops, is killed, or fails to start (the
      error carries its tail); only a parent killed outright leaves it behind. A given log is kept.
    * Both ways of starting create a missing database directory, so ``start_engine(db_path)``
      behaves the same in process and as a child (the command line alone refuses one, exit 2).
    * Importing this module imports neither grpc nor the server: a process that only launches
      children (``EngineProcess``) never pays for them.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Protocol, final

from dex_agents.engine.child_group import ChildGroup, NotReady, log_tail
from dex_agents.engine.durability import Durability
from dex_agents.engine.timing import EngineTiming

__all__ = ["READY_PREFIX", "EngineProcess", "EngineStartError", "RunningEngine", "start_engine"]

LOOPBACK: Final = "127.0.0.1"
READY_PREFIX: Final = "dex-agents engine ready on "
"""The CLI's ready line: READY_PREFIX + host:port, then ``; durability <level description>``."""
_READY_PATTERN: Final = re.compile(re.escape(READY_PREFIX) + r"(?P<host>\S+):(?P<port>\d+)(?:;[^\n]*)?$", re.M)
_STOP_GRACE_SECONDS: Final = 10.0


class RunningEngine(Protocol):
    """What ``start_engine`` yields: a serving engine's address (``127.0.0.1:<port>``)."""

    @property
    def address(self) -> str: ...

    @property
    def port(self) -> int: ...


class EngineStartError(RuntimeError):
    """The engine child did not become ready; the message carries its log tail."""


@final
class EngineProcess:
    """The engine as a child process in its own process group (so tests can SIGKILL it whole)."""

    def __init__(self, child: ChildGroup, *, port: int, owns_log: bool) -> None:
        """Wrap a started, ready child; use ``EngineProcess.start``."""
        self._child = child
        self.port = port
        self.address = f"{LOOPBACK}:{port}"
        self.pid = child.pid
        self.log_path = child.log_path
        self._owns_log = owns_log

    @classmethod
    def start(
        cls,
        db_path: Path,
        *,
        port: int = 0,
        token_file: Path | None = None,
        log_path: Path | None = None,
        ready_timeout: float = 30.0,
        durability: Durability = Durability.POWER_LOSS,
    ) -> EngineProcess:
        """Start the engine child on ``127.0.0.1`` and wait for its ready line.

        Args:
            db_path: SQLite database (created when absent, with its directory; reused to recover
                after a kill).
            port: Port to bind; 0 lets the child pick a free one, read back from the ready line.
            token_file: Require this bearer token on every call.
            log_path: Where the child's stdout and stderr go; default a temporary file, removed
                when the child is stopped or killed or fails to start.
            ready_timeout: Seconds to wait for the ready line.
            durability: What a commit survives (``--durability``); the default fsyncs every commit.

        Raises:
            EngineStartError: The child exited or stayed silent past ``ready_timeout``
                (the message includes the log's tail).
        """
        db_path.parent.mkdir(parents=True, exist_ok=True)
        owns_log = log_path is None
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="dex-agents-engine-", suffix=".log")
            os.close(fd)
            log_path = Path(name)
        command = [sys.executable, "-m", "dex_agents.engine.cli", "engine", "--host", LOOPBACK, "--port", str(port),
                   "--db", str(db_path), "--stop-on-stdin-eof", "--durability", durability.value]
        if token_file is not None:
            command += ["--token-file", str(token_file)]
        child, offset = ChildGroup.spawn(command, log_path)

        def bound_port(text: str) -> int | None:
            match = _READY_PATTERN.search(text)
            return None if match is None else int(match.group("port"))

        try:
            bound = child.await_ready(offset, bound_port, ready_timeout)
        except NotReady as not_ready:
            log_name = "log (temporary, removed)" if owns_log else f"log {log_path}"
            message = f"engine {not_ready}; {log_name}:\n{log_tail(log_path)}"
            _discard(child, log_path if owns_log else None)
            raise EngineStartError(message) from None
        except BaseException:
            _discard(child, log_path if owns_log else None)
            raise
        return cls(child, port=bound, owns_log=owns_log)

    @property
    def returncode(self) -> int | None:
        """The child's exit status, or ``None`` while it runs (peeks without reaping)."""
        return self._child.returncode

    def kill(self) -> None:
        """SIGKILL the whole process group and wait for the child to exit."""
        _discard(self._child, self.log_path if self._owns_log else None)

    def stop(self) -> None:
        """SIGTERM the child (graceful stop), then SIGKILL the group after a grace period."""
        self._child.stop(_STOP_GRACE_SECONDS)
        _discard(self._child, self.log_path if self._owns_log else None)

    def __repr__(self) -> str:
        return f"EngineProcess(pid={self.pid}, address={self.address!r}, returncode={self.returncode})"


def _discard(child: ChildGroup, owned_log: Path | None) -> None:
    """Kill the child's group (if still running) and remove the log this module made for it."""
    child.kill()
    if owned_log is not None:
        with contextlib.suppress(OSError):
            owned_log.unlink()


@contextlib.contextmanager
def start_engine(
    db_path: Path | None = None,
    *,
    token_file: Path | None = None,
    in_process: bool = True,
    port: int = 0,
    durability: Durability = Durability.POWER_LOSS,
    timing: EngineTiming | None = None,
) -> Iterator[RunningEngine]:
    """Run the engine for the duration of a ``with`` block, on ``127.0.0.1``.

    Args:
        db_path: SQLite database; ``None`` uses a temporary directory removed on exit. A missing
            directory is created (in process and as a child alike).
        token_file: Require this bearer token (the SDK's ``FileCredential`` file) on every call.
        in_process: ``True`` serves from this process; ``False`` runs an ``EngineProcess``.
        port: Port to bind; 0 picks a free one.
        durability: What a commit survives; the default fsyncs every commit.
        timing: The engine's timing policy (in process only; ``None`` is Dex's timings). Tests
            shorten it (see ``EngineTiming``).

    Yields:
        The serving engine; ``.address`` is ``127.0.0.1:<port>``.

    Raises:
        TokenFileError: ``token_file`` is unusable (in process).
        DatabaseError: the database cannot be opened for writing (in process).
        OSError: the port cannot be bound (in process).
        EngineStartError: The child engine did not become ready (child process).
        ValueError: ``timing`` was given for a child process.
    """
    if timing is not None and not in_process:
        raise ValueError("timing= applies to an in-process engine only")
    with contextlib.ExitStack() as stack:
        if db_path is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="dex-agents-engine-"))
            db_path = Path(directory) / "engine.sqlite3"
        if in_process:
            from dex_agents.engine.auth import BearerTokenInterceptor  # grpc: in process only
            from dex_agents.engine.server import EngineServer

            interceptors = [] if token_file is None else [BearerTokenInterceptor.from_path(token_file)]
            server = EngineServer(db_path, host=LOOPBACK, port=port, interceptors=interceptors,
                                  durability=durability, timing=timing)
            server.start()
            stack.callback(server.stop)
            yield server
        else:
            process = EngineProcess.start(db_path, port=port, token_file=token_file, durability=durability)
            stack.callback(process.stop)
            yield process
