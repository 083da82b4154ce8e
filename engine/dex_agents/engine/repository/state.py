"""Flow state inside a transaction: Attributes, Channel messages and history events.

Physical names follow the SDK: a singleton Attribute or Channel is its name; a map instance is
``Name/<quoted key>``. A load of ``Name/`` means the whole map. Every function takes the open
connection and a run ``uid`` and must be called inside ``Store.transaction`` (or for reads, under
the engine lock).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from dex.dexpb import dex_pb2 as pb

from ..errors import clip, invalid


def _value(blob: bytes) -> pb.Value:
    value = pb.Value()
    value.ParseFromString(blob)
    return value


SINGLETONS_SQL = "SELECT key, value FROM attributes INDEXED BY attributes_singletons WHERE uid=? AND is_instance=0"
"""The run's singleton Attributes, through their index: without the hint SQLite scans the primary key, every
Attribute of the run, so each Step's load grew with a session's map instances (its messages)."""


def load_attributes(db: sqlite3.Connection, uid: int, map_loads: Iterable[str]) -> list[pb.KV]:
    """Singleton Attributes plus the loaded map instances (``Name/`` loads a whole map); the singletons are
    read through their index (``SINGLETONS_SQL``), so the cost does not grow with the map instances."""
    rows = db.execute(SINGLETONS_SQL, (uid,)).fetchall()
    for load in dict.fromkeys(map_loads):
        if load.endswith("/"):
            # Keys of the map sort between "Name/" and "Name0" ("0" follows "/").
            rows += db.execute("SELECT key, value FROM attributes WHERE uid=? AND key>=? AND key<?",
                               (uid, load, load[:-1] + "0")).fetchall()
        elif "/" in load:
            rows += db.execute("SELECT key, value FROM attributes WHERE uid=? AND key=?", (uid, load)).fetchall()
    seen: set[str] = set()
    out: list[pb.KV] = []
    for key, blob in rows:
        if key not in seen:
            seen.add(key)
            out.append(pb.KV(key=key, value=_value(blob)))
    return out


def attribute(db: sqlite3.Connection, uid: int, key: str) -> pb.Value | None:
    """One Attribute's stored value, or None when absent."""
    row = db.execute("SELECT value FROM attributes WHERE uid=? AND key=?", (uid, key)).fetchone()
    return _value(row[0]) if row else None


def indexed_attributes(db: sqlite3.Connection, uid: int) -> list[pb.KV]:
    """Attributes written with an enabled index (for search results)."""
    return [
        pb.KV(key=key, value=_value(blob))
        for key, blob in db.execute(
            "SELECT key, value FROM attributes WHERE uid=? AND indexed=1 ORDER BY key", (uid,)
        )
    ]


def all_attributes(db: sqlite3.Connection, uid: int) -> list[pb.KV]:
    """Every Attribute of the run (singletons and map instances), by key."""
    return [pb.KV(key=key, value=_value(blob))
            for key, blob in db.execute("SELECT key, value FROM attributes WHERE uid=? ORDER BY key", (uid,))]


def indexed_keys(db: sqlite3.Connection, uid: int) -> set[str]:
    """The keys of the run's Attributes written with an enabled index."""
    return {str(key) for (key,) in db.execute("SELECT key FROM attributes WHERE uid=? AND indexed=1", (uid,))}


def carried_attributes(db: sqlite3.Connection, uid: int) -> list[tuple[str, bytes, bool]]:
    """Every Attribute of the run as (key, serialized value, hard delete on null), by key."""
    return [(str(key), bytes(blob), bool(hard_delete)) for key, blob, hard_delete in db.execute(
        "SELECT key, value, hard_delete FROM attributes WHERE uid=? ORDER BY key", (uid,))]


def insert_restored(db: sqlite3.Connection, uid: int, key: str, value: pb.Value, *, indexed: bool,
                    hard_delete: bool) -> None:
    """Store an Attribute a reset restores into its new run ``uid``."""
    db.execute("INSERT INTO attributes (uid, key, value, indexed, is_instance, hard_delete) VALUES (?, ?, ?, ?, ?, ?)",
               (uid, key, value.SerializeToString(), int(indexed), int("/" in key), int(hard_delete)))


def pending_messages(db: sqlite3.Connection, uid: int) -> dict[str, pb.ChannelValues]:
    """Every pending Channel message of the run, by Channel (oldest first)."""
    out: dict[str, pb.ChannelValues] = {}
    for name, message_id, blob in db.execute(
            "SELECT name, message_id, value FROM channels WHERE uid=? ORDER BY seq", (uid,)):
        out.setdefault(name, pb.ChannelValues()).messages.add(channel_name=name, message_id=message_id,
                                                              value=_value(blob))
    return out


def sub_flow_results(db: sqlite3.Connection, uid: int, seid: str) -> dict[int, pb.FlowResult]:
    """The terminal results of the Step execution's SubFlows that have one, by condition index."""
    out: dict[int, pb.FlowResult] = {}
    for idx, blob in db.execute("SELECT idx, result FROM subflows WHERE parent_uid=? AND seid=? AND result IS NOT NULL",
                                (uid, seid)):
        result = pb.FlowResult()
        result.ParseFromString(blob)
        out[int(idx)] = result
    return out


def put_sub_flow(db: sqlite3.Connection, parent_uid: int, seid: str, idx: int, child_flow_id: str, child_uid: int,
                 result: pb.FlowResult | None) -> None:
    """Link a Wait's SubFlow condition ``idx`` to its child run (with its result if it has closed)."""
    db.execute("INSERT OR REPLACE INTO subflows (parent_uid, seid, idx, child_flow_id, child_uid, result) "
               "VALUES (?, ?, ?, ?, ?, ?)", (parent_uid, seid, idx, child_flow_id, child_uid,
                                             result.SerializeToString() if result is not None else None))


def report_sub_flow_result(db: sqlite3.Connection, child_uid: int, result: pb.FlowResult) -> set[int]:
    """A run closed: store its result with every Wait that started or attached to it as a SubFlow;
    returns the parent runs (their Waits are checked again)."""
    parents = {int(uid) for (uid,) in db.execute(
        "SELECT parent_uid FROM subflows WHERE child_uid=? AND result IS NULL", (child_uid,))}
    if parents:
        db.execute("UPDATE subflows SET result=? WHERE child_uid=? AND result IS NULL",
                   (result.SerializeToString(), child_uid))
    return parents


def validate_writes(writes: Sequence[pb.AttributeWrite]) -> None:
    """Reject malformed Attribute writes before anything is applied."""
    for write in writes:
        if not write.key or write.key.startswith("/") or write.key.endswith("/"):
            raise invalid(f"invalid attribute key: {write.key!r}")
        if not write.HasField("value"):
            raise invalid(f"attribute write without a value: {write.key}")


def upsert_attributes(db: sqlite3.Connection, uid: int, writes: Sequence[pb.AttributeWrite]) -> None:
    """Apply writes in order; a null value deletes the Attribute (reads then give the default)."""
    validate_writes(writes)
    for write in writes:
        if write.value.WhichOneof("kind") == "null_value":
            db.execute("DELETE FROM attributes WHERE uid=? AND key=?", (uid, write.key))
            continue
        db.execute(
            "INSERT INTO attributes (uid, key, value, indexed, is_instance, hard_delete) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (uid, key) DO UPDATE SET value=excluded.value, "
            "indexed=MAX(indexed, excluded.indexed), hard_delete=excluded.hard_delete",
            (uid, write.key, write.value.SerializeToString(), int(write.index_config.enable), int("/" in write.key),
             int(write.is_hard_delete_on_null)),
        )


def channel_infos(db: sqlite3.Connection, uid: int) -> dict[str, pb.ChannelInfo]:
    """Queued message counts of every non-empty Channel (instance) of the run."""
    return {
        name: pb.ChannelInfo(size=count)
        for name, count in db.execute(
            "SELECT name, COUNT(*) FROM channels WHERE uid=? GROUP BY name", (uid,)
        )
    }


def channel_sizes(db: sqlite3.Connection, uid: int, names: Iterable[str]) -> dict[str, int]:
    """Queued message counts of the named Channels."""
    return {
        name: int(db.execute("SELECT COUNT(*) FROM channels WHERE uid=? AND name=?", (uid, name)).fetchone()[0])
        for name in set(names)
    }


def loaded_messages(
    db: sqlite3.Connection, uid: int, names: Iterable[str], map_instances: Iterable[str]
) -> dict[str, pb.ChannelValues]:
    """Pending messages of loaded Channels and ChannelMap instances (``Name/`` loads a map)."""
    out: dict[str, pb.ChannelValues] = {}
    for load in dict.fromkeys([*names, *map_instances]):
        if load.endswith("/"):
            rows = db.execute("SELECT name, message_id, value FROM channels WHERE uid=? AND name>=? AND name<? "
                              "ORDER BY seq", (uid, load, load[:-1] + "0"))
        else:
            rows = db.execute("SELECT name, message_id, value FROM channels WHERE uid=? AND name=? ORDER BY seq",
                              (uid, load))
        loaded_before = set(out)
        for name, message_id, blob in rows:
            if name not in loaded_before:
                out.setdefault(name, pb.ChannelValues()).messages.add(
                    channel_name=name, message_id=message_id, value=_value(blob))
    return out


def publish(db: sqlite3.Connection, uid: int, messages: Sequence[pb.ChannelMessage]) -> set[str]:
    """Append messages to their Channels (a message without an id gets one, set on the message
    itself); returns the Channel names touched."""
    seen: set[str] = set()
    for message in messages:
        if not message.channel_name:
            raise invalid("channel message without a channel name")
        if message.message_id in seen:
            raise invalid(f"duplicate message id in one publish: {clip(message.message_id)}")
        if message.message_id:
            seen.add(message.message_id)
    for message in messages:
        if not message.message_id:  # assigned here, so history records the id the message has
            message.message_id = uuid.uuid4().hex
        db.execute(
            "INSERT INTO channels (uid, name, message_id, value) VALUES (?, ?, ?, ?)",
            (uid, message.channel_name, message.message_id, message.value.SerializeToString()),
        )
    return {message.channel_name for message in messages}


def delete_messages(
    db: sqlite3.Connection, uid: int, deletions: Sequence[pb.ChannelMessageDeletion]
) -> list[str]:
    """Delete pending messages by id; returns the ids that were not pending."""
    missing: list[str] = []
    for deletion in deletions:
        cursor = db.execute(
            "DELETE FROM channels WHERE uid=? AND name=? AND message_id=?",
            (uid, deletion.channel_name, deletion.message_id),
        )
        if cursor.rowcount == 0:
            missing.append(deletion.message_id)
    return missing


def consume(db: sqlite3.Connection, uid: int, name: str, count: int) -> list[pb.Value]:
    """Remove and return the ``count`` oldest messages of a Channel."""
    if count <= 0:
        return []
    rows = db.execute(
        "SELECT seq, value FROM channels WHERE uid=? AND name=? ORDER BY seq LIMIT ?", (uid, name, count)
    ).fetchall()
    db.executemany("DELETE FROM channels WHERE seq=?", [(seq,) for seq, _ in rows])
    return [_value(blob) for _, blob in rows]


def now_timestamp() -> Timestamp:
    """The current time as a protobuf Timestamp."""
    stamp = Timestamp()
    stamp.FromNanoseconds(time.time_ns())
    return stamp


def record(db: sqlite3.Connection, uid: int, event: pb.FlowHistoryEvent) -> None:
    """Append a history event (ids count from 1 per run, in commit order)."""
    row = db.execute("SELECT COALESCE(MAX(event_id), 0) FROM history WHERE uid=?", (uid,)).fetchone()
    event.event_id = int(row[0]) + 1
    event.run_attempt = 1
    if not event.HasField("event_time"):
        event.event_time.CopyFrom(now_timestamp())
    db.execute(
        "INSERT INTO history (uid, event_id, event, txn) VALUES (?, ?, ?, engine_event(?, ?))",
        (uid, event.event_id, event.SerializeToString(), uid, event.event_id),
    )
