"""The ``dex-agents`` command line: ``dex-agents engine`` runs the local Dex engine; ``dex-agents
engine backup TARGET [--db DB]`` copies its database while it runs (SQLite's online backup).

Invariants:
    * Once the engine serves, exactly one line ``dex-agents engine ready on <host>:<port>; durability
      <level>`` goes to stdout (flushed); ``<port>`` is the bound port, so ``--port 0`` picks a free
      one that launchers read back from this line. Everything else goes to stderr.
    * SIGINT or SIGTERM stops the engine gracefully and exits 0; so does the end of stdin with the
      hidden ``--stop-on-stdin-eof`` flag, which launchers use so an engine never outlives them.
    * Bad arguments and an unusable token file or database path exit 2 with a message naming the
      problem, before anything is bound or written; a database that cannot be opened for writing
      (read-only, corrupt, in use) exits 2 with a ``--db`` message, and an address that cannot be
      bound exits 1 naming the address (a port in use says so, before gRPC tries it). The ready line
      is printed only after both succeeded.
    * Arguments and paths are checked before anything heavy is imported: grpc only for a token file
      or a start, the server only for a start. A start imports the SDK's generated protocol modules
      (``dex.dexpb``, all the engine uses of the SDK) without the ``dex`` package's ``__init__``,
      which would import the whole SDK; that ``__init__`` still runs, in full, on the first use of a
      name it defines (see ``_defer_dex_package_init``).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import importlib.util
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from dex_agents.engine.durability import Durability
from dex_agents.engine.launch import READY_PREFIX

if TYPE_CHECKING:
    from dex_agents.engine.auth import BearerTokenInterceptor
    from dex_agents.engine.server import EngineServer

__all__ = ["DEFAULT_DB", "DEFAULT_HOST", "DEFAULT_PORT", "READY_PREFIX", "main", "ready_line"]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8801
DEFAULT_DB: Final = "dex-agents-engine.sqlite3"
STOP_GRACE_SECONDS: Final = 5.0
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})
_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)

_log = logging.getLogger("dex_agents.engine.cli")


def ready_line(host: str, port: int, durability: Durability = Durability.POWER_LOSS) -> str:
    """The line printed once the engine serves (IPv6 hosts in brackets), naming the durability level."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{READY_PREFIX}{shown}:{port}; durability {durability.description}"


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is outside 0..65535 (0 picks a free port)")
    return port


def _durability(text: str) -> Durability:
    try:
        return Durability(text.lower())
    except ValueError:
        levels = " or ".join(level.value for level in Durability)
        raise argparse.ArgumentTypeError(f"unknown durability level {text!r}: choose {levels}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dex-agents", description="dex-agents tools. `dex-agents engine` runs the local Dex engine."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    engine = commands.add_parser(
        "engine",
        help="run the local Dex engine (development, tests, demo)",
        description=(
            "Run the local Dex engine: Dex's gRPC protocol for the SDK's Client and pull Workers, "
            "with its state in SQLite. Prints one ready line, runs until SIGINT/SIGTERM. "
            "`dex-agents engine backup TARGET` copies its database while it runs."
        ),
    )
    engine.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    engine.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = free port)"
    )
    engine.add_argument(
        "--db", type=Path, default=Path(DEFAULT_DB), help=f"SQLite database file (default ./{DEFAULT_DB})"
    )
    engine.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="require the bearer token in this file (the SDK's FileCredential format) on every call",
    )
    engine.add_argument(
        "--durability",
        type=_durability,
        default=Durability.POWER_LOSS,
        metavar="{" + ",".join(level.value for level in Durability) + "}",
        help="what a commit survives: power-loss (default, fsync per commit) or process-crash (no fsync: "
        "commits survive the engine process's crash, not an OS crash or power loss)",
    )
    engine.add_argument(  # used by launchers: the engine dies with its parent even on SIGKILL
        "--stop-on-stdin-eof", action="store_true", help=argparse.SUPPRESS
    )
    engine.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level, any case (default WARNING)",
    )
    engine.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="stderr log lines as text (default) or one JSON object a line (dex_agents.logs)")
    return parser


def _check_db_path(db: Path) -> str | None:
    if db.exists() and not db.is_file():
        return f"--db {db} exists and is not a file"
    parent = db.parent if str(db.parent) else Path(".")
    if not parent.is_dir():
        return f"--db {db}: directory {parent} does not exist"
    if db.exists() and not os.access(db, os.R_OK | os.W_OK):
        return f"--db {db} is not readable and writable"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"--db {db}: directory {parent} is not writable (the engine keeps its journal and lock there)"
    return None


def _port_in_use(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` already (a free port, port 0, or an address this
    check cannot resolve is left to the server to report)."""
    if port == 0:
        return False
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (OSError, IndexError):
        return False
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is free
        try:
            probe.bind(address)
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False


def _defer_dex_package_init() -> None:
    """Let ``dex.dexpb`` load without running the ``dex`` package's ``__init__`` (no-op once ``dex``
    is imported).

    The engine uses only the SDK's generated protocol modules, but importing ``dex.dexpb`` the
    ordinary way first runs ``dex/__init__.py``, which imports the whole SDK (Client, Workers, their
    helpers): about a third of a second of every engine start. Instead the package's module object
    is registered unexecuted, with a module ``__getattr__`` that removes itself and runs the real
    ``__init__`` the first time a name the module lacks is asked for. So ``dex.X``, ``from dex
    import X`` and ``import dex.sub`` keep working in this process, and get the whole SDK.
    """
    if "dex" in sys.modules:
        return
    spec = importlib.util.find_spec("dex")
    if spec is None or spec.loader is None:
        return  # the ordinary import reports the missing SDK
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)
    namespace = vars(package)
    first_use = threading.Lock()

    def run_package_init(name: str) -> object:
        with first_use:
            if namespace.pop("__getattr__", None) is not None:  # the first caller runs ``__init__``
                try:
                    loader.exec_module(package)
                except BaseException:
                    sys.modules.pop("dex", None)  # as a failed ordinary import leaves it
                    raise
        return getattr(package, name)

    namespace["__getattr__"] = run_package_init
    sys.modules["dex"] = package


def _stop_at_stdin_eof(request_stop: Callable[[], None]) -> None:
    """Request a stop once stdin closes (the launching process has exited, however it died)."""
    try:
        while os.read(0, 4096):  # raw reads: no buffered-reader lock held at interpreter exit
            pass
    except OSError:
        pass
    _log.warning("stdin closed: the launching process is gone; stopping")
    request_stop()


def _run_engine(args: argparse.Namespace) -> int:
    host: str = args.host
    db: Path = args.db
    token_file: Path | None = args.token_file
    problem = _check_db_path(db)
    if problem is not None:
        print(f"dex-agents engine: error: {problem}", file=sys.stderr)
        return 2
    interceptors: list[BearerTokenInterceptor] = []
    if token_file is not None:
        from dex_agents.engine.auth import BearerTokenInterceptor, TokenFileError  # imports grpc

        try:
            interceptors.append(BearerTokenInterceptor.from_path(token_file))
        except TokenFileError as error:
            print(f"dex-agents engine: error: --token-file: {error}", file=sys.stderr)
            return 2
    elif host not in _LOOPBACK:
        _log.warning("binding %s without --token-file: any host that reaches it can drive Flows", host)
    if _port_in_use(host, args.port):
        print(f"dex-agents engine: error: cannot start on {host}:{args.port}: the port is in use (stop what "
              f"listens there, or pick another port with --port; --port 0 picks a free one)", file=sys.stderr)
        return 1

    _defer_dex_package_init()
    from dex_agents.engine.server import EngineServer  # the engine core, imported once args are valid

    durability: Durability = args.durability
    server = EngineServer(db, host=host, port=args.port, interceptors=interceptors, durability=durability)
    return asyncio.run(_serve_until_stop(server, db, host, args.port, args.stop_on_stdin_eof))


async def _serve_until_stop(server: EngineServer, db: Path, host: str, port: int, stop_on_stdin_eof: bool) -> int:
    """Serve until SIGINT, SIGTERM or (when asked) the end of stdin, then stop gracefully.

    The stop signals go through the event loop's wakeup descriptor: the kernel may hand a process's
    signal to any of its threads (gRPC's included), and a main thread asleep on a lock would not wake
    for a signal another thread took. Signals that come while the engine starts or stops wait in
    the loop and change nothing.
    """
    from dex_agents.engine.errors import DatabaseError

    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    for number in _STOP_SIGNALS:
        loop.add_signal_handler(number, stop_requested.set)
    if stop_on_stdin_eof:
        def request_stop_from_thread() -> None:
            try:
                loop.call_soon_threadsafe(stop_requested.set)
            except RuntimeError:  # the loop has closed: the engine stopped already
                pass

        threading.Thread(target=_stop_at_stdin_eof, args=(request_stop_from_thread,), name="stdin-eof",
                         daemon=True).start()
    try:
        server.start()
    except DatabaseError as error:
        print(f"dex-agents engine: error: --db {db}: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - any start failure is reported, not a traceback
        print(f"dex-agents engine: error: cannot start on {host}:{port}: {error}", file=sys.stderr)
        return 1
    print(ready_line(host, server.port, server.durability), flush=True)
    await stop_requested.wait()
    _log.info("stopping")
    server.stop(grace=STOP_GRACE_SECONDS)
    return 0


BACKUP_COMMAND: Final = "backup"


def _backup_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dex-agents engine backup",
        description=(
            "Copy the local engine's database while the engine runs (SQLite's online backup: one "
            "consistent snapshot holding every committed turn). The copy is a self-contained SQLite "
            "file that `dex-agents engine --db COPY` opens."
        ),
    )
    parser.add_argument("target", type=Path, metavar="TARGET", help="the copy to write (replaced if present)")
    parser.add_argument(
        "--db", type=Path, default=Path(DEFAULT_DB), help=f"the engine's database file (default ./{DEFAULT_DB})"
    )
    return parser


def _run_backup(argv: Sequence[str]) -> int:
    args = _backup_parser().parse_args(argv)
    source: Path = args.db
    target: Path = args.target
    if not target.parent.is_dir():
        print(f"dex-agents engine backup: error: directory {target.parent} does not exist", file=sys.stderr)
        return 2
    if target.exists() and source.exists() and target.resolve() == source.resolve():
        print("dex-agents engine backup: error: TARGET is the database itself", file=sys.stderr)
        return 2
    from dex_agents.engine.backup import backup_database
    from dex_agents.engine.errors import DatabaseError

    try:
        summary = backup_database(source, target)
    except DatabaseError as error:
        print(f"dex-agents engine backup: error: {error}", file=sys.stderr)
        return 1
    print(f"backed up {source} to {target}: {summary.runs} runs, {summary.steps} Step executions, "
          f"{summary.size_bytes} bytes", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status.

    Args:
        argv: Arguments without the program name; ``None`` reads ``sys.argv``.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:2] == ["engine", BACKUP_COMMAND]:  # `engine backup` has a parser of its own
        return _run_backup(arguments[2:])
    args = _parser().parse_args(argv)
    from dex_agents.logs import configure_logging  # the product's one setup (stdlib only): time, level, ...

    configure_logging(log_format=args.log_format, debug=args.log_level == "DEBUG", level=args.log_level)
    command: str = args.command
    if command == "engine":
        return _run_engine(args)
    raise AssertionError(f"unhandled command {command!r}")  # argparse allows only known commands


if __name__ == "__main__":
    sys.exit(main())
