"""Room ``offline``: tools over an exported session, never on a live Step's path.

* ``export_document``: the export's records, rendered and read strictly.
* ``stored_values``, ``input_wire``: stored values and session inputs as the export holds them.
* ``history_answers`` and ``reconstruct``: the inputs the reducers saw, rebuilt from Dex's history and
  the invocation records.
* ``replay`` and ``replay_report``: fold inputs through ``machine.reducers`` and report the first
  difference from what Dex committed.

Imports: ``machine`` (its reducers through ``machine.reducers``), ``flow``, ``values`` and ``wire``
(``dex_agents.pure.ROOMS``); nothing imports this room but the shell, the client and the tools.
"""
