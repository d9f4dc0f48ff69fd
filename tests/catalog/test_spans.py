"""Packed spans (``catalog.spans``): every message's (offset, length) comes back from its
batch's row, at whatever widths the batch needed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from convodex.catalog import spans
from convodex.sqlite import sqlite3

SPAN = st.tuples(st.integers(0, 2**62), st.integers(0, 2**40))


@given(st.lists(SPAN, min_size=1, max_size=40))
def test_every_span_comes_back_from_its_row(pairs: list[tuple[int, int]]) -> None:
    blob = spans.pack(pairs)
    assert [spans.unpack_at(blob, i) for i in range(len(pairs))] == pairs


def test_a_batch_of_ordinary_messages_takes_six_bytes_a_message() -> None:
    pairs = [(10_000_000 + i * 900, 800 + i % 50) for i in range(1000)]
    blob = spans.pack(pairs)
    assert len(blob) <= 10 + 6 * len(pairs)
    assert spans.unpack_at(blob, 999) == pairs[999]


@given(
    st.lists(st.lists(st.integers(1, 30), min_size=1, max_size=6), min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, 6), st.integers(-2, 200)), max_size=600),
)
def test_many_lookups_in_one_query_answer_as_one_each(
    batches: list[list[int]], wanted: list[tuple[int, int]]
) -> None:
    """Sources of several batch rows (with gaps between them, which indexing does not
    leave but a lookup must not fill), asked for indexes inside, between, before and
    past their rows, more pairs than one query binds."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE TABLE spans (source_id INTEGER NOT NULL, first_index INTEGER NOT NULL, "
        "count INTEGER NOT NULL, spans BLOB NOT NULL, UNIQUE (source_id, first_index))"
    )
    for source_id, counts in enumerate(batches):
        first = 0
        for count in counts:
            pairs = [(1000 * source_id + 10 * i, i + 1) for i in range(first, first + count)]
            spans.insert(db, source_id, first, pairs)
            first += count + count % 3  # every third batch leaves a gap after it
    one_each = {pair: spans.lookup(db, *pair) for pair in wanted}
    assert spans.lookup_many(db, wanted) == {k: v for k, v in one_each.items() if v is not None}
