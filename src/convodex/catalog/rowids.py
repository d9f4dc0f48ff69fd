"""Document rowids: short steps between neighbours, and the kind and sub-agent bit in
the integer.

rowid = slot << 13 | subagent << 12 | unit << 5 | part % 4 << 3 | kind.

FTS5 stores each term's rowids as varint deltas, so the catalog's size is mostly
the steps between the documents a term occurs in. A source's messages are numbered
in *units* (one per message, one more for each further four parts), and its units
live in *slots* of 128, allocated from one counter as rows are committed: the
neighbouring sessions of a history sit a few thousand apart, not 2^32 (measured on
210 MB of native sessions: the catalog 74.5 → 56.5 MB; slots of 512, 256 and 64
units: 58.9, 57.3 and 56.1 MB).

What the integer alone says: the kind, the sub-agent bit (sub-agent work: a
sub-agent's or headless session of its own, or sub-agent work inside a parent's
file), so search leaves it out by arithmetic; and the slot, so a source filter is a
set of slots. The ``slots`` table names each slot's source; the ``messages`` row of
each unit (key ``rowid & UNIT_MASK``) names its message and first part. Rowid order
is a source's (message, part) order (in a slot, sub-agent work follows the rest);
between sources it is the order in which their rows were indexed.

A reader knows its source's units, not its slots: it numbers rows with the slot's
place in the source (``k = unit // 128``), and the commit moves each row to its slot
(``moved``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from convodex.text.documents import KINDS, Kind

SLOT_SHIFT = 13
SUBAGENT_BIT = 1 << 12
UNIT_SHIFT = 5
PART_SHIFT = 3
PARTS_PER_UNIT = 1 << (UNIT_SHIFT - PART_SHIFT)
UNITS_PER_SLOT = 1 << (SLOT_SHIFT - 1 - UNIT_SHIFT)
KIND_BITS: dict[Kind, int] = {kind: i for i, kind in enumerate(KINDS)}
KIND_OF_BITS: dict[int, Kind] = dict(enumerate(KINDS))
# rowid & UNIT_MASK is a document's unit base (its ``messages`` row's key).
UNIT_MASK = -(1 << UNIT_SHIFT)
SLOT_SPAN = 1 << SLOT_SHIFT

Row = TypeVar("Row", bound=tuple[Any, ...])


def slot_of(rowid: int) -> int:
    return rowid >> SLOT_SHIFT


def slot_ranges(slots: Iterable[int]) -> list[tuple[int, int]]:
    """The first and last rowid of each run of consecutive slots: one statement a run
    (a source's slots are mostly allocated together)."""
    runs: list[tuple[int, int]] = []
    for slot in sorted(slots):
        low, high = slot << SLOT_SHIFT, ((slot + 1) << SLOT_SHIFT) - 1
        if runs and runs[-1][1] + 1 == low:
            runs[-1] = (runs[-1][0], high)
        else:
            runs.append((low, high))
    return runs


def kind_of(rowid: int) -> Kind:
    return KIND_OF_BITS[rowid & 7]


def part_of(rowid: int, first_part: int) -> int:
    """A document's part index, given its unit's first part."""
    return first_part + ((rowid >> PART_SHIFT) & (PARTS_PER_UNIT - 1))


def slot_steps(slots: Mapping[int, int]) -> dict[int, int]:
    """What to add to a row numbered by slot place ``k`` to move it to ``slots[k]``."""
    return {k: (slot - k) << SLOT_SHIFT for k, slot in slots.items()}


def moved(rows: list[Row], steps: Mapping[int, int]) -> list[Row]:
    """Rows (rowid first) numbered by slot place, moved to their slots."""
    if len(steps) == 1:
        (step,) = steps.values()
        return [(row[0] + step, *row[1:]) for row in rows]  # type: ignore[misc]
    return [(row[0] + steps[row[0] >> SLOT_SHIFT], *row[1:]) for row in rows]  # type: ignore[misc]


def moved_pairs(rows: list[tuple[int, str]], steps: Mapping[int, int]) -> list[tuple[int, str]]:
    """``moved`` for (rowid, tokens) rows: twice as fast, and there are many."""
    if len(steps) == 1:
        (step,) = steps.values()
        return [(rowid + step, text) for rowid, text in rows]
    return [(rowid + steps[rowid >> SLOT_SHIFT], text) for rowid, text in rows]
