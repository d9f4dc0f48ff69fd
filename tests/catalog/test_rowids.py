"""Compact rowids (``catalog.rowids``): every part and message keeps its address, in
slots of 128 units, across appends, rebuilds and removal; and the catalog is smaller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import corpus
from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.rowids import (
    ADDRESSES,
    DOCUMENTS,
    KEY_SLOT_SHIFT,
    KEY_SUBAGENT,
    KIND_BITS,
    OUTPUTS,
    PART_SHIFT,
    PARTS_PER_UNIT,
    SLOT_SPAN,
    SUBAGENT_BIT,
    TABLES,
    UNIT_MASK,
    UNIT_SHIFT,
    UNITS_PER_SLOT,
    kind_of,
    number,
    slot_of,
    slot_ranges,
    unit_address,
    unit_base,
)
from convodex.config import catalog_path
from convodex.text.documents import KINDS, Document, Kind
from helpers import append_lines, search, write_session


def numbered(word: str, first: int, count: int) -> list[dict[str, Any]]:
    """Messages whose every one holds ``plum`` and its own word ``<word><index>``."""
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"plum {word}{i} message",
            "createdAt": 1_700_000_000_000 + i * 1000,
        }
        for i in range(first, first + count)
    ]


def found(catalog: Catalog, query: str) -> list[tuple[str, int, int, str]]:
    result = search(catalog, query, limit=200)
    return [
        (Path(h["sessionPath"]).stem, h["messageIndex"], h["partIndex"], h["kind"])
        for h in result["hits"]
    ]


def every_hit(catalog: Catalog, query: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = search(catalog, query, limit=200, cursor=cursor)
        out.extend(page["hits"])
        cursor = page["nextCursor"]
        if cursor is None:
            return out


def rows(catalog: Catalog) -> int:
    db = catalog.db
    return int(
        db.execute("SELECT count(*) FROM documents").fetchone()[0]
        + db.execute("SELECT count(*) FROM outputs").fetchone()[0]
    )


def test_every_tool_call_of_a_message_keeps_its_part(root: Path, catalog: Catalog) -> None:
    """Four parts share a unit; more take further units. A message with 40 tool calls
    once lost every call past the 31st (a rowid named at most 32 parts)."""
    calls = [
        {"id": f"c{n}", "name": "Bash", "arguments": {"command": f"echo callword{n}"}}
        for n in range(1, 41)
    ]
    write_session(
        root,
        "busy",
        [
            {"role": "user", "content": "run them all"},
            {"role": "assistant", "content": "running callwordtext", "tool_calls": calls},
            {"role": "user", "content": "after callwordafter"},
        ],
    )
    Indexer(catalog).run([root])
    for n in (1, 3, 4, 5, 31, 32, 40):
        assert found(catalog, f"callword{n} kind:tool_input") == [("busy", 1, n, "tool_input")]
    assert found(catalog, "callwordtext") == [("busy", 1, 0, "assistant_text")]
    # The message after the many-part one is still its own next message.
    assert found(catalog, "callwordafter") == [("busy", 2, 0, "user_text")]


def test_a_long_session_spans_slots_and_its_appends_keep_their_place(
    root: Path, catalog: Catalog
) -> None:
    long = write_session(root, "long", numbered("pear", 0, 600))
    Indexer(catalog).run([root])
    write_session(root, "short", numbered("fig", 0, 50))
    Indexer(catalog).run([root])
    append_lines(long, numbered("pear", 600, 300))
    Indexer(catalog).run([root])
    slots = catalog.db.execute(
        "SELECT k FROM slots JOIN sources ON sources.id = slots.source_id "
        "WHERE sources.session_id = 'long' ORDER BY k"
    ).fetchall()
    assert slots == [(k,) for k in range(8)]  # 900 units
    for i in (0, 127, 128, 255, 256, 599, 600, 639, 640, 899):
        assert found(catalog, f"pear{i}") == [
            ("long", i, 0, "user_text" if i % 2 == 0 else "assistant_text")
        ]
    # A session filter is a set of slots: exactly the long session's 900 messages.
    hits = every_hit(catalog, "plum session:long")
    assert len(hits) == 900
    assert {Path(h["sessionPath"]).stem for h in hits} == {"long"}
    assert sorted(h["messageIndex"] for h in hits) == list(range(900))
    assert len(every_hit(catalog, "plum")) == 950
    # Newest first follows the messages' times across the slots.
    newest = search(catalog, "plum session:long", sort="newest", limit=3)["hits"]
    assert [h["messageIndex"] for h in newest] == [899, 898, 897]


def test_a_rebuilt_or_removed_source_leaves_no_rows_behind(root: Path, catalog: Catalog) -> None:
    long = write_session(root, "long", numbered("pear", 0, 600))
    write_session(root, "short", numbered("fig", 0, 50))
    Indexer(catalog).run([root])
    assert rows(catalog) == 650
    # Rewritten shorter: rebuilt in new slots, the old ones gone.
    write_session(root, "long", numbered("quince", 0, 300))
    Indexer(catalog).run([root])
    assert rows(catalog) == 350
    assert found(catalog, "pear10") == []
    assert found(catalog, "quince10") == [("long", 10, 0, "user_text")]
    assert catalog.db.execute("SELECT count(*) FROM messages").fetchone()[0] == 350
    # Removed: every slot, unit and document of it goes.
    long.unlink()
    long.with_name("long.jsonl.meta").unlink()
    Indexer(catalog).run([root])
    assert rows(catalog) == 50
    assert catalog.db.execute("SELECT count(*) FROM messages").fetchone()[0] == 50
    assert catalog.db.execute("SELECT count(*) FROM slots").fetchone()[0] == 1
    assert len(every_hit(catalog, "plum")) == 50


def test_the_catalog_is_under_a_third_of_a_small_native_history(tmp_path: Path) -> None:
    """Rowids 2^32 apart per source made FTS5's delta-encoded lists long: this 6 MB
    history's catalog was 40% of it; in slots 33%; in each table's own form 30% (a
    small catalog's fixed pages weigh more: 24.7% of 210 MB)."""
    history = corpus.cached("native", 6, 12)
    with open_catalog(tmp_path) as catalog:
        stats = Indexer(catalog).run([Path(history.out)])
    assert stats.failed == 0
    share = catalog_path(tmp_path).stat().st_size / stats.bytes_read
    assert share <= 0.31, f"catalog is {share:.1%} of the history"


def test_the_file_gives_back_what_a_removed_history_took(
    root: Path, catalog: Catalog, tmp_path: Path
) -> None:
    """Free pages past 5% of the file are released at the end of a run (a bare
    ``PRAGMA incremental_vacuum`` once released one page only): the file ends within
    10% of a fresh catalog of what is left."""

    def file_size(of: Catalog) -> int:
        of.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert of.path is not None
        return of.path.stat().st_size

    for n in range(40):
        write_session(root, f"s{n}", numbered(f"w{n}x", 0, 120))
    Indexer(catalog).run([root])
    full = file_size(catalog)
    for n in range(30):
        (root / f"s{n}.jsonl").unlink()
        (root / f"s{n}.jsonl.meta").unlink()
    Indexer(catalog).run([root])
    free = catalog.db.execute("PRAGMA freelist_count").fetchone()[0]
    pages = catalog.db.execute("PRAGMA page_count").fetchone()[0]
    assert free / pages <= 0.05
    with open_catalog(tmp_path / "fresh") as fresh:
        Indexer(fresh).run([root])
        left = file_size(fresh)
    assert file_size(catalog) <= left * 1.1 < full


@given(st.sets(st.integers(min_value=0, max_value=300), max_size=40))
def test_slot_ranges_cover_exactly_the_slots_in_fewest_runs(slots: set[int]) -> None:
    runs = slot_ranges(slots)
    covered = {slot_of(rowid) for low, high in runs for rowid in (low, high)}
    assert covered <= slots
    for low, high in runs:
        assert low % SLOT_SPAN == 0 and (high + 1) % SLOT_SPAN == 0
        assert set(range(slot_of(low), slot_of(high) + 1)) <= slots
    assert sum(slot_of(high) - slot_of(low) + 1 for low, high in runs) == len(slots)
    # Runs are sorted and never touch: touching runs would have been one.
    assert all(a[1] + 1 < b[0] for a, b in zip(runs, runs[1:], strict=False))


ADDRESS = st.tuples(
    st.integers(0, 2**40),  # slot
    st.booleans(),  # sub-agent
    st.integers(0, UNITS_PER_SLOT - 1),
    st.integers(0, PARTS_PER_UNIT - 1),
    st.sampled_from(KINDS),
)


def address(slot: int, sub: bool, unit: int, part: int, kind: Kind) -> int:
    key = slot << KEY_SLOT_SHIFT | (KEY_SUBAGENT if sub else 0) | unit
    return key << UNIT_SHIFT | part << PART_SHIFT | KIND_BITS[kind]


@given(st.lists(ADDRESS, min_size=2, max_size=20))
def test_each_table_stores_addresses_in_their_order_and_gives_them_back(
    given_addresses: list[tuple[int, bool, int, int, Kind]],
) -> None:
    """A table's own rowid form loses nothing and keeps the order (rowid order is tie
    order); the slot, the sub-agent bit and the ``messages`` key stay arithmetic."""
    for layout in TABLES.values():
        mine = sorted(address(*a) for a in given_addresses if a[4] in layout.codes)
        stored = [layout.stored(a) for a in mine]
        assert stored == sorted(stored)
        assert [layout.address(rowid) for rowid in stored] == mine
        assert [a for _, a, _ in layout.ranked([(0, rowid, 0) for rowid in stored])] == mine
        for a, rowid in zip(mine, stored, strict=True):
            assert rowid >> layout.slot_shift == slot_of(a)
            assert bool(rowid & layout.subagent_bit) == bool(a & SUBAGENT_BIT)
            assert (rowid >> layout.low) << UNIT_SHIFT == a & UNIT_MASK
            assert layout.kinds[rowid & layout.kind_mask] == kind_of(a)


@given(
    st.integers(0, 2**20),
    st.booleans(),
    st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from(KINDS)), max_size=12, unique_by=lambda p: p[0]
    ),
)
def test_a_message_is_numbered_by_its_units_and_parts(
    unit: int, sub: bool, parts: list[tuple[int, Kind]]
) -> None:
    """``number`` (what the indexer calls for every message) gives each part its
    table's form of its address, four parts a unit, further units after the first."""
    key, units, rowids = number(unit, sub, [Document(part, kind, "x") for part, kind in parts])
    assert units == max((part for part, _ in parts), default=0) // PARTS_PER_UNIT + 1
    assert unit_address(key) == address(
        unit // UNITS_PER_SLOT, sub, unit % UNITS_PER_SLOT, 0, KINDS[0]
    )
    for (part, kind), rowid in zip(parts, rowids, strict=True):
        at = unit + part // PARTS_PER_UNIT
        expected = address(
            at // UNITS_PER_SLOT, sub, at % UNITS_PER_SLOT, part % PARTS_PER_UNIT, kind
        )
        table = OUTPUTS if kind == "tool_output" else DOCUMENTS
        assert table.address(rowid) == expected
        assert table.slot(rowid) == ADDRESSES.slot(expected) == at // UNITS_PER_SLOT
        assert unit_base(expected) == unit_address(key) or part >= PARTS_PER_UNIT
