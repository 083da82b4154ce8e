"""The engine's repository: every SQL statement the engine runs is written in this package, and no
engine module outside it calls ``execute`` or spells a statement (``tests/engine/test_repository_owns_sql.py``).

Modules, one table group each:

* ``store``: the SQLite file, its schema and migrations, the one writer connection, transactions
  (commit, fsync, rollback) and read-only readers;
* ``row_cache``: the hot ``flows`` and ``steps`` rows in memory, read through on a miss; the only
  ``UPDATE`` of those two tables;
* ``runs``: the rest of ``flows``: inserting runs (start, reset, continue-as-new), recovery's open
  runs, search, and a read-only view of a database file;
* ``steps``: new ``steps`` rows and the ``timers`` table;
* ``state``: Attributes, Channel messages, SubFlow links, and appending a history event;
* ``events``: reading, copying and moving history events;
* ``streams``: Stream messages.

Invariants: functions take the connection they run on (the open transaction's for writes), never
take the engine lock and never commit (``Store.transaction`` does); they import no engine module
above the leaves (rows, phases, errors, durability).
"""
