"""The engine: the top module that builds the core and the operations and wires them, once (who
calls whom: an adapter enters through ``core.locked()`` and calls an operation; the operation
commits and hands its effects to the core; the core's loop calls the performers it was wired with,
which hand their own follow-ups back the same way; nothing calls back into the engine).

Rooms (layers), each importing only the layers the table in ``tests/engine/test_core_imports.py``
allows (a test parses every import; the adapters never import storage). Every module, once:

1. leaves: ``errors`` (error statuses, ``DatabaseError``), ``durability``, ``timing`` (clock and
   ``EngineTiming``), ``lock_discipline``, ``blobs``, ``policy`` (Dex's retry and timeout defaults),
   ``rows`` (row types, ``Effects``), ``step_phase``, ``waits`` (pure Wait evaluation),
   ``reset_replay`` (pure reset replay), ``attribute_locks``, ``performers`` (the effects loop's
   contract with its performers), ``request_checks``, ``auth``, ``child_group``;
2. storage: the ``repository`` package, which owns every SQL statement (``store``, ``row_cache``,
   ``runs``, ``steps``, ``state``, ``events``, ``streams``, ``backup``); offline beside it: ``run_history``;
3. scheduling: ``tasks``, ``pending``, ``scheduler``, ``dispatch``, ``long_polls`` (every long poll);
4. ``core``: the shared state and the one effects loop (``EngineCore``): operations hand their
   after-commit effects over as data, the loop performs them;
5. operations: ``history``, ``step_creation``, ``streams``, ``channels``, ``queries``, ``flow_state``,
   ``flows``, ``subflows``, ``step_waits`` (Waits and Timers), ``outcomes`` (results, failures,
   retries), ``steps`` (launch, progress, timeouts), ``flow_rpcs`` (InvokeRPC), ``reset``, ``continue_as_new``;
6. top: this module (``Engine``), ``recovery`` and ``backup`` (the command line's copy);
7. adapters: ``grpc_service`` (FlowService), ``worker_service`` (PollWorkerTask), ``server``
   (``EngineServer``), ``launch`` (``start_engine``, ``EngineProcess``), ``cli``.

The package's ``__init__`` loads its public names lazily (it imports none of these at import time).
"""

from __future__ import annotations

from pathlib import Path
from typing import final

from .channels import ChannelOps
from .continue_as_new import ContinueAsNewOps
from .durability import Durability
from .core import EngineCore
from .flows import FlowOps
from .reset import ResetOps
from .flow_rpcs import FlowRpcOps
from .outcomes import Outcomes
from .step_waits import StepWaits
from .steps import StepOps
from .subflows import SubFlows
from .repository.store import Store
from .streams import StreamOps
from .timing import Clock, EngineTiming


@final
class Engine:
    """One engine process: its ``core`` (the shared state and the effects loop) and the components
    built over it (``flows``, ``sub_flows``, ``waits``, ``outcomes``, ``steps``, ``streams``,
    ``channels``, ``flow_rpcs``, ``resets``, ``continue_as_new``), each given what it uses and
    wired into the core's effects loop here, once. Nothing subclasses the core: the components hold
    it, and the core holds only the performers it is given (``EngineCore.wire``)."""

    def __init__(self, store: Store, *, timing: EngineTiming | None = None, clock: Clock | None = None) -> None:
        core = self.core = EngineCore(store, timing=timing, clock=clock)
        self.streams = StreamOps(core)
        self.channels = ChannelOps(core)
        self.flows = FlowOps(core)
        self.sub_flows = SubFlows(core, self.flows)
        self.waits = StepWaits(core, self.sub_flows)
        self.outcomes = Outcomes(core, self.flows, self.waits)
        self.steps = StepOps(core, self.outcomes, self.streams)
        self.flow_rpcs = FlowRpcOps(core, self.flows)
        self.resets = ResetOps(core, self.flows, self.sub_flows)
        self.continue_as_new = ContinueAsNewOps(core)
        core.wire(self.steps, self.waits, self.flows, self.continue_as_new)

    @classmethod
    def open(cls, db_path: Path, durability: Durability = Durability.POWER_LOSS, *,
             timing: EngineTiming | None = None, clock: Clock | None = None) -> Engine:
        """An engine on the database at ``db_path`` (created when absent; ``DatabaseError`` when it
        cannot serve), so the adapters never touch the repository themselves."""
        return cls(Store(db_path, durability), timing=timing, clock=clock)
