"""``dex-agents engine backup``'s one operation: a consistent copy of a running engine's database.

The command line (an adapter) reaches storage only through this top-layer module; the copy itself,
SQLite's online backup of one snapshot, is ``repository.backup``'s (see its invariants).
"""

from __future__ import annotations

from .repository.backup import BackupSummary as BackupSummary
from .repository.backup import backup_database as backup_database

__all__ = ["BackupSummary", "backup_database"]
