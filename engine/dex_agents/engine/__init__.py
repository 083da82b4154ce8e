"""A local Dex engine: Dex's gRPC protocol served to the unmodified SDK Client and pull Worker,
with its state in SQLite. The embedded default for tests and the demo.

Public entry points: ``start_engine`` (a context manager, in process or as a child process;
``durability=Durability.PROCESS_CRASH`` opts out of the fsync per commit),
``EngineProcess`` (the engine as a child in its own process group) and ``EngineServer`` (the
server itself). The command line is ``dex-agents engine``.

Invariant: importing the package imports none of its modules; each public name loads its module
on first use, so ``python -m dex_agents.engine.cli`` (every engine child) checks its arguments
before the server's imports (grpc, the SDK's protocol modules) run, and a launcher that only
starts children never imports the server at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from dex_agents._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from dex_agents.engine.durability import Durability as Durability
    from dex_agents.engine.launch import EngineProcess as EngineProcess
    from dex_agents.engine.launch import start_engine as start_engine
    from dex_agents.engine.server import EngineServer as EngineServer

__all__ = ["Durability", "EngineProcess", "EngineServer", "start_engine"]

_MODULE_OF: Final = {
    "Durability": "dex_agents.engine.durability",
    "EngineProcess": "dex_agents.engine.launch",
    "start_engine": "dex_agents.engine.launch",
    "EngineServer": "dex_agents.engine.server",
}


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals())
