"""Room ``machine``: the session state machine.

Inside the room, modules import downward: values and rules (``keys``, ``deadlines``, ``usage``,
``compaction``, ``policies``, ``validation``, ``texts``, ``events``, ``paging``, ``coalescing``) ->
inputs and state (``rpc_calls``, ``step_inputs``, ``state``, ``invocation_record``) -> ``effects`` (what a
transition performs) and ``endings`` (how it ends), neither importing the other -> ``transition`` ->
``reducers`` (one per input, behind ``reducers.dispatch.reduce``, which also decides the invocation
record). ``flow_shape`` relates inputs to the flow table's Steps, for the shell and the tests.

Imports: ``flow``, ``values`` and ``wire`` (``dex_agents.pure.ROOMS``). Other rooms reach the reducers
through ``machine.reducers`` only.
"""
