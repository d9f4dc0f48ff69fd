"""Where each message's record lives in its source: packed (offset, length) pairs.

One row per indexing batch keeps the catalog small; a lookup reads one row. A row's
blob is a width byte (4 or 8), the batch's first offset as a little-endian u64, then
per message its offset from that first one and its length, each ``width`` bytes: 8
bytes a message for nearly every batch instead of 16 (5.5 of 77 MB of a native
catalog was spans).
"""

from __future__ import annotations

import struct
import sys
from array import array
from itertools import chain

from convodex.sqlite import sqlite3

_BASE = struct.Struct("<BQ")
_PAIRS = {4: struct.Struct("<II"), 8: struct.Struct("<QQ")}


def pack(spans: list[tuple[int, int]]) -> bytes:
    base = min(offset for offset, _ in spans)
    values = array("Q", chain.from_iterable((offset - base, length) for offset, length in spans))
    width = 4 if max(values) < 1 << 32 else 8
    if width == 4:
        values = array("I", values)
    if sys.byteorder != "little":
        values.byteswap()
    return _BASE.pack(width, base) + values.tobytes()


def unpack_at(blob: bytes, position: int) -> tuple[int, int]:
    """(offset, length) of the message at ``position`` in a packed row."""
    width, base = _BASE.unpack_from(blob)
    relative, length = _PAIRS[width].unpack_from(blob, _BASE.size + position * 2 * width)
    return base + relative, length


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
            offset, length = unpack_at(blob, i - first)
            out.append((i, offset, length))
    return out


def lookup(db: sqlite3.Connection, source_id: int, index: int) -> tuple[int, int] | None:
    found = lookup_range(db, source_id, index, index)
    return (found[0][1], found[0][2]) if found else None
