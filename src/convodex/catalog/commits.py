"""Committing batches (SPEC L5): a batch's rows and its source's checkpoint in the
caller's transaction, each row moved from its slot place to its slot (``rowids``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from convodex.catalog import spans
from convodex.catalog.batches import Batch
from convodex.catalog.rowids import ADDRESSES, DOCUMENTS, OUTPUTS, slot_place, starts_slot
from convodex.sqlite import sqlite3


class Changes(msgspec.Struct):
    """What one commit did to ``documents``, for the accelerators that follow commits
    (``Wing.after_commit``): rows added (stored rowid, projection text), the slots
    whose rows it deleted, and what the accelerator noted before the commit."""

    documents: list[tuple[int, str]] = msgspec.field(default_factory=list)
    wiped: set[int] = msgspec.field(default_factory=set)
    before: Any = None


_INSERT_DOCUMENTS = "INSERT INTO documents(rowid, tokens) VALUES (?, ?)"
_INSERT_OUTPUTS = "INSERT INTO outputs(rowid, tokens) VALUES (?, ?)"
_UPDATE_CHECKPOINT = (  # parameters: a batches.Checkpoint
    "UPDATE sources SET byte_offset = :byte_offset, message_count = :message_count, "
    "unit_count = :unit_count, size = :size, mtime_ns = :mtime_ns, inode = :inode, "
    "signature = :signature, "
    "pending = :pending, health = 'ok', error_class = :error_class, "
    "line_errors = CASE WHEN :wipe THEN :line_errors ELSE line_errors + :line_errors END, "
    "last_activity_at = COALESCE(:last_activity_at, last_activity_at, :mtime_ms), "
    "first_activity_at = CASE WHEN :rebuild THEN :first_activity_at "
    "ELSE COALESCE(first_activity_at, :first_activity_at) END, "
    "title_index = CASE WHEN :rebuild THEN :title_index "
    "ELSE COALESCE(title_index, :title_index) END, "
    "workspace = COALESCE(:workspace, workspace), "
    "session_id = COALESCE(:session_id, session_id), subagent = COALESCE(:subagent, subagent), "
    "archived = COALESCE(:archived, archived), "
    "title_offset = CASE WHEN :rebuild THEN :title_offset END, "
    "title_length = CASE WHEN :rebuild THEN :title_length END, "
    "unknown_shapes = CASE WHEN :rebuild THEN :unknown_shapes ELSE unknown_shapes END, "
    "indexed_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE id = :id"
)
# One row a statement: a statement that writes many rows (INSERT … SELECT, an UPDATE of a
# range) opens a statement journal, and FTS5 flushes its pending terms at each one.
_INSERT_MESSAGES = (
    "INSERT INTO messages(base, at, timed, session_key, message, first_part) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
# Messages whose format records no time take their session's last activity (L13).
_UNTIMED_AT = (
    "UPDATE messages SET at = (SELECT last_activity_at FROM sources WHERE id = ?) "
    "WHERE base BETWEEN ? AND ? AND timed = 0"
)
_MARK_FAILED = (  # parameters: a batches.Failure
    "UPDATE sources SET health = :health, error_class = :error_class, pending = 0, "
    "byte_offset = 0, message_count = 0, unit_count = 0, signature = NULL, size = :size, "
    "mtime_ns = :mtime_ns, inode = :inode, title_index = NULL, first_activity_at = NULL, "
    "unknown_shapes = NULL "
    "WHERE id = :id"
)


def source_slots(db: sqlite3.Connection, source_id: int) -> list[int]:
    return [
        int(row[0])
        for row in db.execute("SELECT slot FROM slots WHERE source_id = ?", (source_id,))
    ]


def delete_source_rows(db: sqlite3.Connection, source_id: int) -> list[int]:
    """Delete a source's rows; returns the slots they were in."""
    slots = source_slots(db, source_id)
    for table in (DOCUMENTS, OUTPUTS):
        for low, high in table.ranges(slots):
            db.execute(f"DELETE FROM {table.name} WHERE rowid BETWEEN ? AND ?", (low, high))
    for low, high in ADDRESSES.ranges(slots):
        db.execute("DELETE FROM messages WHERE base BETWEEN ? AND ?", (low, high))
        db.execute("DELETE FROM vectors WHERE address BETWEEN ? AND ?", (low, high))
    db.execute("DELETE FROM embedded WHERE source_id = ?", (source_id,))
    db.execute("DELETE FROM spans WHERE source_id = ?", (source_id,))
    db.execute("DELETE FROM slots WHERE source_id = ?", (source_id,))
    return slots


def batch_slots(db: sqlite3.Connection, batch: Batch) -> dict[int, int]:
    """The slots of the batch's units (slot place k → slot), allocated as needed.

    A new slot takes the next number (``INTEGER PRIMARY KEY``): the sessions
    committed one after another sit next to each other in rowid order.
    """
    if batch.next_unit <= batch.first_unit:
        return {}
    first, last = slot_place(batch.first_unit), slot_place(batch.next_unit - 1)
    slots = dict(
        db.execute(
            "SELECT k, slot FROM slots WHERE source_id = ? AND k BETWEEN ? AND ?",
            (batch.source_id, first, last),
        ).fetchall()
    )
    for k in range(first, last + 1):
        if k not in slots:
            cursor = db.execute(
                "INSERT INTO slots(source_id, k) VALUES (?, ?)", (batch.source_id, k)
            )
            slots[k] = int(cursor.lastrowid or 0)
    return slots


def apply_batch(
    db: sqlite3.Connection,
    batch: Batch,
    retime: list[int] | None = None,
    changes: Changes | None = None,
) -> bool:
    """Apply one batch unless another process moved its source's checkpoint meanwhile.

    ``retime`` collects the sources whose untimed messages take their (new) last
    activity, for the caller to do after its other batches (``retime_untimed``); without
    it, that is done here. ``changes`` collects the documents added and the slots
    wiped, for the bands to follow (``bands.follow``).
    """
    if batch.expect is not None:
        row = db.execute(
            "SELECT byte_offset, message_count FROM sources WHERE id = ?", (batch.source_id,)
        ).fetchone()
        if row is None or (row[0], row[1]) != batch.expect:
            return False
    if batch.wipe:
        wiped = delete_source_rows(db, batch.source_id)
        if changes is not None:
            changes.wiped.update(wiped)
    if batch.failure is not None:
        db.execute(_MARK_FAILED, batch.failure._asdict())
        return True
    slots = batch_slots(db, batch)
    if slots:
        documents = DOCUMENTS.moved_pairs(batch.documents, DOCUMENTS.steps(slots))
        db.executemany(_INSERT_DOCUMENTS, documents)
        if changes is not None:
            changes.documents.extend(documents)
        outputs = OUTPUTS.moved_pairs(batch.outputs, OUTPUTS.steps(slots))
        db.executemany(_INSERT_OUTPUTS, outputs)
        messages = ADDRESSES.moved(batch.messages, ADDRESSES.steps(slots))
        db.executemany(_INSERT_MESSAGES, messages)
    spans.insert(db, batch.source_id, batch.first_index, batch.locations)
    if batch.checkpoint is not None:
        checkpoint = batch.checkpoint
        db.execute(_UPDATE_CHECKPOINT, checkpoint._asdict())
        # Once a read ends: untimed messages take the session's (new) last activity. A
        # rebuild that met none has none; an append may move earlier ones.
        if checkpoint.pending == 0 and (batch.untimed or not checkpoint.rebuild):
            if retime is None:
                retime_untimed(db, [batch.source_id])
            else:
                retime.append(batch.source_id)
    return True


def retime_untimed(db: sqlite3.Connection, source_ids: list[int]) -> None:
    """Untimed messages of these sources take their sources' last activity.

    An UPDATE of many rows opens a statement journal, and FTS5 flushes its pending
    terms to a new segment at every one: done after a commit group's inserts, it
    costs one flush (the commit's own), not one per source (measured on 210 MB of
    native sessions, where every session opens with an untimed system message: 6.5
    of 14 s of SQLite work went to these updates and the merges of their segments).
    """
    for source_id in source_ids:
        for low, high in ADDRESSES.ranges(source_slots(db, source_id)):
            db.execute(_UNTIMED_AT, (source_id, low, high))


def in_rowid_order(db: sqlite3.Connection, group: list[Batch]) -> list[Batch]:
    """The group in the order its rows' rowids will have: FTS5 flushes its pending
    terms to a new segment whenever a rowid is lower than the one before.

    An append into a slot the source already has goes first, by slot; rows that take
    new slots (new sources, rebuilds, a source's next 128 units) follow, in source
    order, and get slots in that order.
    """

    def key(batch: Batch) -> tuple[float, int, int]:
        slot: float = float("inf")
        if not batch.wipe and batch.failure is None and not starts_slot(batch.first_unit):
            row = db.execute(
                "SELECT slot FROM slots WHERE source_id = ? AND k = ?",
                (batch.source_id, slot_place(batch.first_unit)),
            ).fetchone()
            if row is not None:
                slot = row[0]
        return slot, batch.source_id, batch.first_index

    return sorted(group, key=key)
