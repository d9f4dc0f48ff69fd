"""Document rowids: the tie order and the document's address in one integer.

rowid = source_id << 32 | subagent << 31 | message_index << 8 | part_index << 3 | kind.
Small steps between neighbouring messages keep FTS5's delta-encoded rowids short;
rowid order is the L4 tie order (source, message, part); the kind is known without
a join; the sub-agent bit marks sub-agent work (a sub-agent's or headless session of
its own, or sub-agent work inside a parent's file), so search can leave it out by
arithmetic alone.
"""

from __future__ import annotations

from convodex.text.documents import KINDS, Kind

SOURCE_SHIFT = 32
SUBAGENT_BIT = 1 << 31
MESSAGE_SHIFT = 8
PART_SHIFT = 3
PART_LIMIT = 1 << (MESSAGE_SHIFT - PART_SHIFT)
MESSAGE_LIMIT = 1 << (SOURCE_SHIFT - 1 - MESSAGE_SHIFT)
KIND_BITS: dict[Kind, int] = {kind: i for i, kind in enumerate(KINDS)}
KIND_OF_BITS: dict[int, Kind] = dict(enumerate(KINDS))
# rowid & MESSAGE_MASK is a document's message base (drops part and kind).
MESSAGE_MASK = -(1 << MESSAGE_SHIFT)


def doc_rowid(
    source_id: int, message_index: int, part: int, kind: Kind, subagent: bool = False
) -> int:
    return (
        (source_id << SOURCE_SHIFT)
        | (SUBAGENT_BIT if subagent else 0)
        | (message_index << MESSAGE_SHIFT)
        | (part << PART_SHIFT)
        | KIND_BITS[kind]
    )


def message_base(source_id: int, message_index: int, subagent: bool = False) -> int:
    """The first rowid of a message's documents (its ``messages`` row's key)."""
    return doc_rowid(source_id, message_index, 0, "user_text", subagent)


def split_rowid(rowid: int) -> tuple[int, int, int, Kind]:
    """(source id, message index, part index, kind) of a document rowid."""
    return (
        rowid >> SOURCE_SHIFT,
        (rowid >> MESSAGE_SHIFT) & (MESSAGE_LIMIT - 1),
        (rowid >> PART_SHIFT) & (PART_LIMIT - 1),
        KIND_OF_BITS[rowid & 7],
    )


def source_rowid_range(source_id: int) -> tuple[int, int]:
    return source_id << SOURCE_SHIFT, ((source_id + 1) << SOURCE_SHIFT) - 1
