"""A local Dex engine: Dex's gRPC protocol served to the unmodified SDK Client and pull Worker,
with its state in SQLite. The embedded default for tests and the demo.

Public entry points: ``start_engine`` (a context manager, in process or as a child process;
``durability=Durability.PROCESS_CRASH`` opts out of the fsync per commit),
``EngineProcess`` (the engine as a child in its own process group) and ``EngineServer`` (the
server itself). The command line is ``dex-agents engine``.
"""

from dex_agents.engine.durability import Durability as Durability
from dex_agents.engine.launch import EngineProcess as EngineProcess
from dex_agents.engine.launch import start_engine as start_engine
from dex_agents.engine.server import EngineServer as EngineServer

__all__ = ["Durability", "EngineProcess", "EngineServer", "start_engine"]
