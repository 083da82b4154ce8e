"""The session's reducers, one per Step input and per RPC, behind one dispatch: ``reduce``.

Public API (stable; what the shell, the replay and the property tests drive):
    * ``reduce(state, config, session_input) -> Transition`` (``dispatch``), and its three typed parts
      ``reduce_step``, ``reduce_wait`` and ``reduce_rpc``; ``reduce_follow_up(config, previous, input)``
      reduces a request's answer in the invocation of ``previous`` (so its decision's invocation record
      holds every input's clock).
    * ``snapshot_of(state)``: the ``get_agent_snapshot`` answer.
    * Sub-agents (``subagents``): ``TASK_ARGUMENT``, a sub-agent call's one argument;
      ``sub_agent_result_of(text)``, a child session's result; ``SKIPPED``, the child status of a
      skipped wait.
"""

from dex_agents.pure.machine.reducers.dispatch import reduce as reduce
from dex_agents.pure.machine.reducers.dispatch import reduce_follow_up as reduce_follow_up
from dex_agents.pure.machine.reducers.dispatch import reduce_rpc as reduce_rpc
from dex_agents.pure.machine.reducers.dispatch import reduce_step as reduce_step
from dex_agents.pure.machine.reducers.dispatch import reduce_wait as reduce_wait
from dex_agents.pure.machine.reducers.rpcs import snapshot_of as snapshot_of
from dex_agents.pure.machine.reducers.subagents import SKIPPED as SKIPPED
from dex_agents.pure.machine.reducers.subagents import TASK_ARGUMENT as TASK_ARGUMENT
from dex_agents.pure.machine.reducers.subagents import sub_agent_result_of as sub_agent_result_of

__all__ = ["SKIPPED", "TASK_ARGUMENT", "reduce", "reduce_follow_up", "reduce_rpc", "reduce_step", "reduce_wait",
           "snapshot_of", "sub_agent_result_of"]
