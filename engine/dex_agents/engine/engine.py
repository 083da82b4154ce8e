"""The engine: the top module that wires the core and the operations together.

Layers, each importing only the ones below it (a test parses the imports and fails on a cycle):

1. leaves: ``errors``, ``durability``, ``timing`` (clock and timing policy), ``lock_discipline``,
   ``policy`` (Dex's retry and timeout defaults), ``rows``, ``waits`` (pure Wait evaluation),
   ``request_checks``, ``auth``;
2. state: ``store`` (SQLite schema and transactions), ``state`` (Attributes, Channels, history
   events), ``history``;
3. scheduling: ``tasks`` (tasks, their lifecycle, Worker streams), ``pending``, ``scheduler``,
   ``dispatch``;
4. ``core``: the shared state and after-commit effects (``EngineCore``), with Step hooks;
5. operations: ``step_creation``, ``streams``, ``queries``, ``flows``, ``outcomes`` (results,
   failures, retries, Waits), ``steps`` (launch, progress, timeouts), ``rpcs``, ``reset``,
   ``continue_as_new`` (run rollover, config updates);
6. this module (``Engine``: the core plus the operations, wired once: the core's after-commit
   effects are performed by the Step and Flow operations given to ``EngineCore.wire``);
7. adapters: ``recovery``, ``service`` (FlowService), ``worker_service`` (PollWorkerTask),
   ``server`` (``EngineServer``), ``launch`` (``start_engine``, ``EngineProcess``), ``cli``.
"""

from __future__ import annotations

from .channels import ChannelOps
from .continue_as_new import ContinueAsNewOps
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
