"""Where each message's record lives in its source: packed (offset, length) pairs.

One row per indexing batch keeps the catalog small; a lookup reads one row. A row's
blob is the width of its offsets and of its lengths (a byte each: 2, 4 or 8), the
batch's first offset as a little-endian u64, then every message's offset from that
first one, then every message's length, each as narrow as the batch allows: 6 bytes
a message for nearly every batch (lengths under 64 KiB) instead of 16 (5.5 of 77 MB of
a native catalog was spans; 2.5 of 56.5 MB with 8 bytes a message; 1.6 with 6).
"""

from __future__ import annotations

import struct
import sys
from array import array

from convodex.sqlite import BOUND_RUN, bound_runs, sqlite3

_HEAD = struct.Struct("<BBQ")
_TYPECODES = {2: "H", 4: "I", 8: "Q"}
_ONE = {2: struct.Struct("<H"), 4: struct.Struct("<I"), 8: struct.Struct("<Q")}


def _packed(values: list[int]) -> tuple[int, bytes]:
    """The narrowest width that holds every value, and the values at that width."""
    top = max(values, default=0)
    width = 2 if top < 1 << 16 else 4 if top < 1 << 32 else 8
    packed = array(_TYPECODES[width], values)
    if sys.byteorder != "little":
        packed.byteswap()
    return width, packed.tobytes()


def pack(spans: list[tuple[int, int]]) -> bytes:
    base = min(offset for offset, _ in spans)
    offset_width, offsets = _packed([offset - base for offset, _ in spans])
    length_width, lengths = _packed([length for _, length in spans])
    return _HEAD.pack(offset_width, length_width, base) + offsets + lengths


def unpack_at(blob: bytes, position: int) -> tuple[int, int]:
    """(offset, length) of the message at ``position`` in a packed row."""
    offset_width, length_width, base = _HEAD.unpack_from(blob)
    count = (len(blob) - _HEAD.size) // (offset_width + length_width)
    (relative,) = _ONE[offset_width].unpack_from(blob, _HEAD.size + position * offset_width)
    lengths = _HEAD.size + count * offset_width
    (length,) = _ONE[length_width].unpack_from(blob, lengths + position * length_width)
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


# (source, message index) pairs one ``lookup_many`` query binds (two values each).
MANY_CHUNK = BOUND_RUN // 2


def lookup_many(
    db: sqlite3.Connection, wanted: list[tuple[int, int]]
) -> dict[tuple[int, int], tuple[int, int]]:
    """(offset, length) of each (source, message index) that has one: a page's hits in
    one query, not one each (a tenth of a page of 200 hits was these lookups)."""
    found: dict[tuple[int, int], tuple[int, int]] = {}
    for chunk in bound_runs(wanted, MANY_CHUNK):
        rows = db.execute(
            f"WITH wanted(source_id, idx) AS (VALUES {', '.join('(?, ?)' for _ in chunk)}) "
            "SELECT w.source_id, w.idx, s.first_index, s.count, s.spans "
            "FROM wanted AS w JOIN spans AS s ON s.source_id = w.source_id "
            "AND s.first_index = (SELECT max(first_index) FROM spans "
            "WHERE source_id = w.source_id AND first_index <= w.idx)",
            [value for pair in chunk for value in pair],
        )
        for source_id, index, first, count, blob in rows:
            if index < first + count:
                found[source_id, index] = unpack_at(blob, index - first)
    return found
