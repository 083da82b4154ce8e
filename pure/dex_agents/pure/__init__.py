"""The functional core of dex-agents: the whole agent-session state machine as pure reducers.

Nothing in this package performs I/O, reads a clock, draws randomness or imports Dex: time and ids
arrive as inputs, and every decision comes back as data (a new state plus effect descriptions).

The package is five rooms (subpackages); a room imports only the rooms below it (``ROOMS``, checked by
``tests/pure/test_rooms.py``), so the arrows never turn back:

```text
offline -> machine -> flow -> values -> wire
```

(a room may import any room to its right, never one to its left).

| Room | What it holds | Start at |
| --- | --- | --- |
| ``wire`` | The JSON codec of frozen records: schema, encoder, decoder, errors, ``JsonValue``. Knows no session. | ``wire`` (the package: ``encode``, ``decode``) |
| ``values`` | The session's records: what Dex stores (``session``), RPCs carry (``rpc``), runners return (``runner``), a rewind's audit (``time_travel``), and the persisted names with their typed keys (``persistence``). Decides nothing. | ``values.session`` |
| ``flow`` | The session Flow's shape as one table (``table``, rows in ``rows``), and the Step options and movements computed from it (``step_options``). | ``flow.table`` |
| ``machine`` | The state machine: inputs (``step_inputs``, ``rpc_calls``), ``state``, ``effects``, ``endings``, ``transition``, the reducers behind ``reduce`` (``reducers``), and the rules they read (policies, keys, texts, deadlines, usage, compaction, validation, events, paging, coalescing, the invocation record, ``flow_shape``). | ``machine.reducers.dispatch`` |
| ``offline`` | Tools over a finished or exported session: the export document, ``reconstruct`` (inputs from history), ``history_answers``, ``replay`` and ``replay_report``, ``stored_values``, ``input_wire``, ``time_travel``. | ``offline.replay_report`` |

Outside ``machine``, the reducers are reached through ``machine.reducers`` (``reduce``, ``snapshot_of``)
only, never one reducer module: a rule a reducer owns that another room needs moves to the module the
rooms share (``machine.texts``, ``machine.invocation_record``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

ROOMS: Final[Mapping[str, frozenset[str]]] = {
    "wire": frozenset(),
    "values": frozenset({"wire"}),
    "flow": frozenset({"values", "wire"}),
    "machine": frozenset({"flow", "values", "wire"}),
    "offline": frozenset({"machine", "flow", "values", "wire"}),
}
"""Each room of ``dex_agents.pure`` and the rooms its modules may import (besides its own)."""

__all__ = ["ROOMS"]
