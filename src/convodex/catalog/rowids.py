"""Document rowids: short steps between neighbours, and the kind and sub-agent bit in
the integer.

A source's messages are numbered in *units* (one per message, one more for each
further four parts), and its units live in *slots* of 128, allocated from one counter
as rows are committed: the neighbouring sessions of a history sit close together, not
2^32 apart. A unit's *key* is ``slot << 8 | subagent << 7 | unit``.

A document's *address* (what hits, cursors and ``messages`` use) is
``key << 5 | part % 4 << 3 | kind``. Each FTS5 table stores it in its own, tighter
form: FTS5 keeps each term's rowids as varint steps, so the catalog's size is mostly
the steps between the documents a term occurs in, and every bit a table does not
need widens them. ``documents`` holds four kinds (two bits): ``key << 4 | part << 2 |
kind``; ``outputs`` holds tool output only: ``key << 2 | part``. Each form keeps the
address's order, so ordering by a stored rowid is ordering by address. Measured on
210 MB of native sessions: 74.5 MB with ``source << 32`` rowids, 56.5 MB with slots
of 128 units (slots of 512, 256 and 64: 58.9, 57.3 and 56.1 MB), 52.1 MB with each
table's own form (the steps: ``documents`` 11.0 → 10.0 MB, ``outputs`` 14.3 → 11.0 MB).

What the integer alone says: the kind, the sub-agent bit (sub-agent work: a
sub-agent's or headless session of its own, or sub-agent work inside a parent's
file), so search leaves it out by arithmetic; and the slot, so a source filter is a
set of slots. The ``slots`` table names each slot's source; the ``messages`` row of
each unit (key: the address of its first part, ``address & UNIT_MASK``) names its
message and first part. Rowid order is a source's (message, part) order (in a slot,
sub-agent work follows the rest); between sources it is the order in which their rows
were indexed.

A reader knows its source's units, not its slots: it numbers rows with the slot's
place in the source (``k = unit // 128``), and the commit moves each row to its slot
(``Layout.moved``).

This is the one module that knows the bits: every other one computes, moves and
decodes addresses and rowids with what it defines here (``test_architecture`` fails
on a shift or mask of them elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from convodex.text.documents import KINDS, Document, Kind

UNIT_BITS = 7
KEY_SUBAGENT = 1 << UNIT_BITS  # the sub-agent bit of a unit key
KEY_SLOT_SHIFT = UNIT_BITS + 1
UNITS_PER_SLOT = 1 << UNIT_BITS
PART_BITS = 2
PARTS_PER_UNIT = 1 << PART_BITS
# Addresses.
PART_SHIFT = 3
UNIT_SHIFT = PART_SHIFT + PART_BITS
SLOT_SHIFT = UNIT_SHIFT + KEY_SLOT_SHIFT
SUBAGENT_BIT = KEY_SUBAGENT << UNIT_SHIFT
KIND_BITS: dict[Kind, int] = {kind: i for i, kind in enumerate(KINDS)}
KIND_OF_BITS: dict[int, Kind] = dict(enumerate(KINDS))
# address & UNIT_MASK is a document's unit base (its ``messages`` row's key).
UNIT_MASK = -(1 << UNIT_SHIFT)
SLOT_SPAN = 1 << SLOT_SHIFT
# One search candidate: (order key, address, score). Relevance orders by BM25 rank
# (lower is better), newest by minus the message time, oldest by the time; ties by
# address.
Candidate = tuple[float, int, float]

Row = TypeVar("Row", bound=tuple[Any, ...])


class Layout:
    """Integers whose slot is ``value >> slot_shift``: an FTS5 table's rowids, or
    addresses (``ADDRESSES``: what ``messages.base`` holds)."""

    __slots__ = ("slot_shift",)

    def __init__(self, slot_shift: int) -> None:
        self.slot_shift = slot_shift

    def slot(self, value: int) -> int:
        return value >> self.slot_shift

    def slot_sql(self, value: str) -> str:
        """SQL for the slot of ``value`` (an SQL expression)."""
        return f"({value} >> {self.slot_shift})"

    def in_slot_sql(self, value: str, slot: str) -> str:
        """SQL: ``value`` lies in slot ``slot`` (a range, so an index on ``value`` serves)."""
        first = f"{slot} << {self.slot_shift}"
        return f"{value} BETWEEN {first} AND ({first}) + {(1 << self.slot_shift) - 1}"

    def subagent_sql(self, value: str) -> str:
        """SQL, non-zero for an address (a ``messages.base``) of sub-agent work."""
        return f"({value} & {SUBAGENT_BIT})"

    def ranges(self, slots: Iterable[int]) -> list[tuple[int, int]]:
        """The first and last value of each run of consecutive slots: one statement a
        run (a source's slots are mostly allocated together)."""
        return slot_ranges(slots, self.slot_shift)

    def shares(self, slots: int, count: int) -> list[tuple[int, int]]:
        """``count`` disjoint ranges of values covering slots ``0 … slots - 1`` and
        everything after, about equal in slots."""
        step = -(-slots // count)
        edges = [min(slots, i * step) << self.slot_shift for i in range(count)] + [2**63]
        return [(edges[i], edges[i + 1] - 1) for i in range(count) if edges[i] < edges[i + 1]]

    def steps(self, slots: Mapping[int, int]) -> dict[int, int]:
        """What to add to a value numbered by slot place ``k`` to move it to
        ``slots[k]``."""
        return slot_steps(slots, self.slot_shift)

    def moved(self, rows: list[Row], steps: Mapping[int, int]) -> list[Row]:
        """Rows (value first) numbered by slot place, moved to their slots."""
        return moved(rows, steps, self.slot_shift)

    def moved_pairs(
        self, rows: list[tuple[int, str]], steps: Mapping[int, int]
    ) -> list[tuple[int, str]]:
        """``moved`` for (rowid, tokens) rows: twice as fast, and there are many."""
        return moved_pairs(rows, steps, self.slot_shift)


ADDRESSES = Layout(SLOT_SHIFT)


class Table(Layout):
    """How one FTS5 table stores addresses: ``key << low | part << kind_bits | code``."""

    __slots__ = (
        "name",
        "kinds",
        "codes",
        "kind_bits",
        "kind_mask",
        "low",
        "subagent_bit",
        "_low_mask",
        "_low_address",
    )

    def __init__(self, name: str, kinds: Sequence[Kind]) -> None:
        self.name = name
        self.kinds = tuple(kinds)
        self.codes: dict[Kind, int] = {kind: i for i, kind in enumerate(self.kinds)}
        self.kind_bits = (len(self.kinds) - 1).bit_length()
        if len(self.kinds) != 1 << self.kind_bits:
            raise ValueError("a table's kinds fill its kind bits")
        self.kind_mask = (1 << self.kind_bits) - 1
        self.low = PART_BITS + self.kind_bits
        super().__init__(self.low + KEY_SLOT_SHIFT)
        self.subagent_bit = KEY_SUBAGENT << self.low
        # The address bits below the unit for each value of the rowid's own low bits.
        self._low_mask = (1 << self.low) - 1
        self._low_address = [
            part << PART_SHIFT | KIND_BITS[kind]
            for part in range(PARTS_PER_UNIT)
            for kind in self.kinds
        ]

    def stored(self, address: int) -> int:
        """The table's rowid for a document's address."""
        part = (address >> PART_SHIFT) & (PARTS_PER_UNIT - 1)
        code = self.codes[KIND_OF_BITS[address & 7]]
        return (address >> UNIT_SHIFT) << self.low | part << self.kind_bits | code

    def address(self, rowid: int) -> int:
        """The document's address for one of the table's rowids."""
        return (rowid >> self.low) << UNIT_SHIFT | self._low_address[rowid & self._low_mask]

    def ranked(self, rows: Iterable[tuple[Any, int, Any]]) -> list[tuple[float, int, float]]:
        """(order key, rowid, score) rows of the table as (key, address, score): a
        common word's complete list is 10^5 rows, so no call per row."""
        low, mask, addresses = self.low, self._low_mask, self._low_address
        return [
            (float(k), (rowid >> low) << UNIT_SHIFT | addresses[rowid & mask], float(score))
            for k, rowid, score in rows
        ]

    def base_sql(self, rowid: str) -> str:
        """SQL for the ``messages`` key of the document whose rowid is ``rowid``."""
        return f"((({rowid}) >> {self.low}) << {UNIT_SHIFT})"

    def kind_sql(self, rowid: str) -> str:
        """SQL for the kind code (``codes``) of a rowid."""
        return f"(({rowid}) & {self.kind_mask})"

    def part_sql(self, rowid: str) -> str:
        """SQL for a rowid's part within its unit (add the unit's ``first_part``)."""
        return f"((({rowid}) >> {self.kind_bits}) & {PARTS_PER_UNIT - 1})"

    def subagent_sql(self, rowid: str) -> str:
        """SQL, non-zero for a rowid of sub-agent work."""
        return f"({rowid} & {self.subagent_bit})"

    def admits(self, kinds: Iterable[Kind]) -> Callable[[int], bool]:
        """Whether a rowid is one of these kinds and no sub-agent work (the default
        filter), by arithmetic."""
        codes = {self.codes[k] for k in kinds if k in self.codes}
        mask, bit = self.kind_mask, self.subagent_bit
        return lambda rowid: not rowid & bit and (rowid & mask) in codes


# Everything but tool output, and tool output: the two tables' kinds, in code order.
DOCUMENTS = Table("documents", [k for k in KINDS if k != "tool_output"])
OUTPUTS = Table("outputs", ["tool_output"])
TABLES: dict[str, Table] = {DOCUMENTS.name: DOCUMENTS, OUTPUTS.name: OUTPUTS}
# Their forms, as constants for ``number``'s loop over every part.
_DOCUMENT_LOW, _DOCUMENT_KIND_BITS, _CODES = DOCUMENTS.low, DOCUMENTS.kind_bits, DOCUMENTS.codes
_OUTPUT_LOW = OUTPUTS.low


def unit_key(unit: int, sub: int) -> int:
    """A unit's key, numbered by its slot's place in the source; ``sub``: 0 or
    ``KEY_SUBAGENT`` (``subagent_flag``)."""
    return (unit >> UNIT_BITS) << KEY_SLOT_SHIFT | sub | (unit & (UNITS_PER_SLOT - 1))


def number(unit: int, subagent: bool, documents: Sequence[Document]) -> tuple[int, int, list[int]]:
    """A message that starts at the source's unit ``unit``: its first unit's key, how
    many units it takes (one per four parts), and each document's rowid in its table
    (``OUTPUTS`` for tool output). One call a message, the arithmetic inline and a
    plain tuple (a named one cost 0.5 µs a message): this runs for every part indexed.
    ``subagent``: the rows carry the sub-agent bit."""
    sub = KEY_SUBAGENT if subagent else 0
    key = (unit >> UNIT_BITS) << KEY_SLOT_SHIFT | sub | (unit & (UNITS_PER_SLOT - 1))
    rowids = []
    top = 0
    for doc in documents:
        part, kind = doc.part, doc.kind
        key_of = key
        if part >= PARTS_PER_UNIT:  # in a further unit of this message
            top = max(top, part)
            key_of = unit_key(unit + part // PARTS_PER_UNIT, sub)
            part %= PARTS_PER_UNIT
        if kind == "tool_output":
            rowids.append((key_of << _OUTPUT_LOW) | part)
        else:
            rowids.append((key_of << _DOCUMENT_LOW) | (part << _DOCUMENT_KIND_BITS) | _CODES[kind])
    return key, top // PARTS_PER_UNIT + 1, rowids


def subagent_flag(subagent: bool) -> int:
    """What ``unit_key`` takes for sub-agent work (or not)."""
    return KEY_SUBAGENT if subagent else 0


def unit_address(key: int) -> int:
    """The address of a unit's first part: its ``messages`` row's ``base``."""
    return key << UNIT_SHIFT


def document_address(base: int, part: int, kind: Kind) -> int:
    """The address of a message's part ``part`` of ``kind``, whose unit's ``messages``
    row is ``base`` (the unit holding that part: ``first_part(part // 4)``)."""
    return base | (part % PARTS_PER_UNIT) << PART_SHIFT | KIND_BITS[kind]


def unit_base(address: int) -> int:
    """The ``messages`` row (``base``) a document's address belongs to."""
    return address & UNIT_MASK


def slot_place(unit: int) -> int:
    """The place in its source (``k``) of the slot a source's unit lies in."""
    return unit // UNITS_PER_SLOT


def starts_slot(unit: int) -> bool:
    """Whether a source's unit is the first of its slot."""
    return unit % UNITS_PER_SLOT == 0


def first_part(further: int) -> int:
    """The first part of a message's ``further``-th unit (its ``first_part`` column)."""
    return further * PARTS_PER_UNIT


def slot_of(address: int) -> int:
    return address >> SLOT_SHIFT


def slot_ranges(slots: Iterable[int], shift: int = SLOT_SHIFT) -> list[tuple[int, int]]:
    """The first and last rowid of each run of consecutive slots (rowids whose slot is
    ``rowid >> shift``): one statement a run (a source's slots are mostly allocated
    together)."""
    runs: list[tuple[int, int]] = []
    for slot in sorted(slots):
        low, high = slot << shift, ((slot + 1) << shift) - 1
        if runs and runs[-1][1] + 1 == low:
            runs[-1] = (runs[-1][0], high)
        else:
            runs.append((low, high))
    return runs


def kind_of(address: int) -> Kind:
    return KIND_OF_BITS[address & 7]


def part_of(address: int, first_part: int) -> int:
    """A document's part index, given its unit's first part."""
    return first_part + ((address >> PART_SHIFT) & (PARTS_PER_UNIT - 1))


def slot_steps(slots: Mapping[int, int], shift: int) -> dict[int, int]:
    """What to add to a row numbered by slot place ``k`` to move it to ``slots[k]``
    (rowids whose slot is ``rowid >> shift``)."""
    return {k: (slot - k) << shift for k, slot in slots.items()}


def moved(rows: list[Row], steps: Mapping[int, int], shift: int) -> list[Row]:
    """Rows (rowid first) numbered by slot place, moved to their slots."""
    if len(steps) == 1:
        (step,) = steps.values()
        return [(row[0] + step, *row[1:]) for row in rows]  # type: ignore[misc]
    return [(row[0] + steps[row[0] >> shift], *row[1:]) for row in rows]  # type: ignore[misc]


def moved_pairs(
    rows: list[tuple[int, str]], steps: Mapping[int, int], shift: int
) -> list[tuple[int, str]]:
    """``moved`` for (rowid, tokens) rows: twice as fast, and there are many."""
    if len(steps) == 1:
        (step,) = steps.values()
        return [(rowid + step, text) for rowid, text in rows]
    return [(rowid + steps[rowid >> shift], text) for rowid, text in rows]
