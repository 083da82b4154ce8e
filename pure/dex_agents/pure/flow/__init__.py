"""Room ``flow``: the session Flow's shape as data.

* ``table``: one row per Step type and per RPC (options, moves, failure route, wait, locks, loads,
  types), with the Flow's diagram; everything that knows a Step's options reads it from here.
* ``rows``: what a row says.
* ``step_options``: the complete Step options and movements computed from the table, which the
  machine's decisions carry and the shell turns into Dex options.

Imports: ``values`` and ``wire`` (``dex_agents.pure.ROOMS``); the machine reads the table, never the
reverse.
"""
