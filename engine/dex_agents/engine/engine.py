"""The engine: the top module that builds the core and the operations and wires them, once.

Rooms (layers), each importing only the layers the table in ``tests/engine/test_core_imports.py``
allows (a test parses every import; the adapters never import storage). Every module, once:

1. leaves: ``errors`` (error statuses, ``DatabaseError``), ``durability``, ``timing`` (clock and
   ``EngineTiming``), ``lock_discipline``, ``blobs``, ``policy`` (Dex's retry and timeout defaults),
   ``rows`` (row types, ``Effects``), ``step_phase``, ``waits`` (pure Wait evaluation),
   ``reset_replay`` (pure reset replay), ``attribute_locks``, ``request_checks``, ``auth``,
   ``child_group``;
2. storage: the ``repository`` package, which owns every SQL statement (``store``, ``row_cache``,
   ``runs``, ``steps``, ``state``, ``events``, ``streams``); offline beside it: ``run_history``;
3. scheduling: ``tasks``, ``pending``, ``scheduler``, ``dispatch``, ``long_polls`` (every long poll);
4. ``core``: the shared state and after-commit effects (``EngineCore``);
5. operations: ``history``, ``step_creation``, ``streams``, ``channels``, ``queries``, ``flow_state``,
   ``flows``, ``subflows``, ``outcomes`` (results, failures, retries, Waits), ``steps`` (launch,
   progress, timeouts), ``flow_rpcs`` (InvokeRPC), ``reset``, ``continue_as_new``;
6. top: this module (``Engine``) and ``recovery``;
7. adapters: ``grpc_service`` (FlowService), ``worker_service`` (PollWorkerTask), ``server``
   (``EngineServer``), ``launch`` (``start_engine``, ``EngineProcess``), ``cli``.

The package's ``__init__`` loads its public names lazily (it imports none of these at import time).
"""

from __future__ import annotations

from pathlib import Path

from .channels import ChannelOps
from .continue_as_new import ContinueAsNewOps
from .durability import Durability
from .core import EngineCore
from .flows import FlowOps
from .reset import ResetOps
from .flow_rpcs import FlowRpcOps
from .steps import StepOps
from .repository.store import Store
from .streams import StreamOps
from .timing import Clock, EngineTiming


class Engine(EngineCore):
    """One engine process's state with its operations: ``flows``, ``steps``, ``rpcs``, ``streams``,
    ``resets``, ``continue_as_new``; built and wired here, once."""

    def __init__(self, store: Store, *, timing: EngineTiming | None = None, clock: Clock | None = None) -> None:
        super().__init__(store, timing=timing, clock=clock)
        self.streams = StreamOps(self)
        self.channels = ChannelOps(self)
        self.flows = FlowOps(self)
        self.steps = StepOps(self, self.flows, self.streams)
        self.flow_rpcs = FlowRpcOps(self, self.flows)
        self.resets = ResetOps(self, self.flows, self.steps.sub_flows)
        self.continue_as_new = ContinueAsNewOps(self)
        self.wire(self.steps, self.flows, self.continue_as_new)

    @classmethod
    def open(cls, db_path: Path, durability: Durability = Durability.POWER_LOSS, *,
             timing: EngineTiming | None = None, clock: Clock | None = None) -> Engine:
        """An engine on the database at ``db_path`` (created when absent; ``DatabaseError`` when it
        cannot serve), so the adapters never touch the repository themselves."""
        return cls(Store(db_path, durability), timing=timing, clock=clock)
