"""Room ``values``: the session's records, deciding nothing.

* ``session``: what Dex Attributes, AttributeMaps, Channels and the Stream hold (``AgentState``,
  ``AgentMessage``, ``AgentToolCall``, ``AgentEvent`` ...), with their enums.
* ``rpc``: the inputs and outputs of the session's RPCs.
* ``runner``: what a framework runner returns from a model call, and the tool policies it applies.
* ``persistence``: the persisted names, each paired once with its value type (the typed keys effects
  take), the Step types and the RPC names.

Imports: ``wire`` only (``dex_agents.pure.ROOMS``); every other room reads these.
"""
