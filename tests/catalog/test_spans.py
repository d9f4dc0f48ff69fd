"""Packed spans (``catalog.spans``): every message's (offset, length) comes back from its
batch's row, at whatever widths the batch needed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from convodex.catalog import spans

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
