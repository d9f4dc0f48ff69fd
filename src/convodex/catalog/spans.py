"""Where each message's record lives in its source: packed (offset, length) pairs.

One row per indexing batch keeps the catalog small; a lookup reads one row.
"""

from __future__ import annotations

import struct

from convodex.sqlite import sqlite3

_PAIR = struct.Struct("<QQ")


def pack(spans: list[tuple[int, int]]) -> bytes:
    return b"".join(_PAIR.pack(offset, length) for offset, length in spans)


def insert(
    db: sqlite3.Connection, source_id: int, first_index: int, spans: list[tuple[int, int]]
) -> None:
    # A plain INSERT: the span rows and the checkpoint commit together, so a batch
    # never repeats a first index (and OR REPLACE is slow with foreign keys on).
    if spans:
        db.execute(
            "INSERT INTO spans(source_id, first_index, count, spans) VALUES (?, ?, ?, ?)",
            (source_id, first_index, len(spans), pack(spans)),
        )


def lookup_range(
    db: sqlite3.Connection, source_id: int, low: int, high: int
) -> list[tuple[int, int, int]]:
    """(message index, byte offset, byte length) for indexes in ``[low, high]``."""
    rows = db.execute(
        "SELECT first_index, count, spans FROM spans WHERE source_id = ? "
        "AND first_index <= ? AND first_index + count > ? ORDER BY first_index",
        (source_id, high, low),
    ).fetchall()
    out = []
    for first, count, blob in rows:
        for i in range(max(low, first), min(high, first + count - 1) + 1):
            offset, length = _PAIR.unpack_from(blob, (i - first) * _PAIR.size)
            out.append((i, offset, length))
    return out


def lookup(db: sqlite3.Connection, source_id: int, index: int) -> tuple[int, int] | None:
    found = lookup_range(db, source_id, index, index)
    return (found[0][1], found[0][2]) if found else None
